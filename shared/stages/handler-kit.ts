/**
 * What every Lambda handler shares: the container's deps, Powertools structured logging with
 * the Lambda context, and the SQS partial-batch response (ReportBatchItemFailures).
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { inStage } from '../aws/request-counter.ts';
import type { StageName } from '../topology.ts';
import type { BatchResult, StageRecord } from '../types.ts';
import { containerDeps, type StageDeps } from './deps.ts';
import { bump, noteExamples, stageLogger } from './logger.ts';
import { batchMetrics, containerMetrics, publishMetrics } from './metrics.ts';
import { withUsage } from './usage.ts';

/** Lambda stops us at its timeout; we stop starting new work this long before. */
export const DEADLINE_MARGIN_MS = 15_000;

/** When an invocation stops starting new work, on the clock of `now` (the crawl's, or real time). */
export function invocationDeadline(context: Context, now: number): number {
  return now + (context.getRemainingTimeInMillis?.() ?? 60_000) - DEADLINE_MARGIN_MS;
}

/** Decodes SQS records; a body that is not JSON becomes null (the stage drops it with a log line). */
export function decodeRecords<T>(event: SQSEvent): StageRecord<T>[] {
  return event.Records.map((r) => {
    const receiveCount = Number(r.attributes?.ApproximateReceiveCount ?? 1) || 1;
    try {
      return { messageId: r.messageId, body: JSON.parse(r.body) as T, receiveCount };
    } catch {
      return { messageId: r.messageId, body: null, receiveCount };
    }
  });
}

/**
 * An invocation's time, for a batch stage: it starts no record past `deadline` (epoch ms, real
 * time), and `signal` is aborted at Lambda's timeout (middy's early timeout). A handler that
 * timed out goes on in the background (locally, and on Lambda in the container's next
 * invocation), so a stage checks it before anything that sends work on.
 */
export interface BatchTime {
  deadline: number;
  signal?: AbortSignal;
}

type BatchRun<T> = (deps: StageDeps, records: StageRecord<T>[], time: BatchTime) => Promise<BatchResult>;

/** Wraps an SQS batch stage as a middy handler that reports only the failed records. */
export function sqsBatchHandler<T>(stage: string, run: BatchRun<T>) {
  return middy<SQSEvent, SQSBatchResponse>()
    .use(injectLambdaContext(stageLogger(stage)))
    .handler((event, context, opts) =>
      inStage(stage, () => runBatch(stage, run, event, context, opts?.signal)),
    );
}

async function runBatch<T>(
  stage: string,
  run: BatchRun<T>,
  event: SQSEvent,
  context: Context,
  signal: AbortSignal | undefined,
): Promise<SQSBatchResponse> {
  const deps = containerDeps(stage);
  const started = Date.now();
  const deadline = invocationDeadline(context, started);
  const result = await withUsage(deps, stage as StageName, event, context, noPages, () =>
    run(deps, decodeRecords<T>(event), { deadline, signal }),
  );
  for (const [k, v] of Object.entries(result.stats)) bump(k, v);
  noteExamples(result.examples);
  // One log line per batch, not per URL: CloudWatch Logs bills $0.50 per GB ingested. A few
  // rejected links ride along (a deployed crawl's only record of them: Logs Insights finds a URL).
  const examples = result.examples && Object.keys(result.examples).length > 0 ? result.examples : undefined;
  deps.log.info(`${stage} batch`, {
    records: event.Records.length,
    failed: result.failedMessageIds.length,
    ms: Date.now() - started,
    ...result.stats,
    ...(examples ? { rejectedExamples: examples } : {}),
  });
  publishMetrics(containerMetrics(), stage, batchMetrics(result.stats, event, started));
  return { batchItemFailures: result.failedMessageIds.map((id) => ({ itemIdentifier: id })) };
}

/** Wraps a scheduled (EventBridge) or directly invoked stage as a middy handler. */
export function scheduledHandler<R>(
  stage: string,
  run: (deps: StageDeps, context: Context, event: unknown) => Promise<R>,
) {
  return (
    middy<unknown, R>()
      .use(injectLambdaContext(stageLogger(stage)))
      // Every AWS request the stage makes is attributed to it (request-counter.ts: the IAM test).
      .handler((event, context) => inStage(stage, () => runScheduled(stage, run, event, context)))
  );
}

async function runScheduled<R>(
  stage: string,
  run: (deps: StageDeps, context: Context, event: unknown) => Promise<R>,
  event: unknown,
  context: Context,
): Promise<R> {
  const deps = containerDeps(stage);
  const started = new Date(deps.now()).toISOString();
  return withUsage(deps, stage as StageName, event, context, pagesOf(stage), async () => {
    const result = await run(deps, context, event);
    deps.log.info(`${stage} done`, { result: result as unknown as Record<string, unknown> });
    // `trawl status` shows when each schedule last ran: one write per scheduled run. A discovery
    // cycle however started (deploy and `trawl crawl` invoke the seed function) is noted too: a
    // crawl with no URL left (clear-errors) is idle once it has had one.
    if (isScheduledEvent(event)) await deps.hosts.putValue(scheduleRunKey(stage), started);
    // So is a refresh cycle however started (`trawl refresh` invokes a deployed function itself).
    if (stage === 'seed' || stage === 'refresh') await deps.hosts.putValue(lastRunKey(stage), started);
    return result;
  });
}

const noPages = () => 0;

/** The pages an invocation fetched, for its usage record: the fetch stage's summary says. */
function pagesOf(stage: string): (result: unknown) => number {
  if (stage !== 'fetch') return noPages;
  return (result) => Number((result as { fetched?: unknown } | null)?.fetched) || 0;
}

/** The hosts-table value holding when the seed function last ran, however it was started. */
export const lastRunKey = (stage: 'seed' | 'refresh') => `last-run#${stage}`;
export const seedRunKey = lastRunKey('seed');

/** The hosts-table value holding when `stage`'s EventBridge schedule last started it. */
export const scheduleRunKey = (stage: string) => `schedule-run#${stage}`;

/** An EventBridge schedule's event (direct invokes and the CLI's kicks are not). */
function isScheduledEvent(event: unknown): boolean {
  return (event as { 'detail-type'?: unknown } | null)?.['detail-type'] === 'Scheduled Event';
}
