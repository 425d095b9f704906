/**
 * A deployed stack's usage record (issue 18): what each handler invocation cost — its AWS requests
 * (counted per invocation, request-counter.ts), its wall time and the pages it fetched — added to
 * the hour's item in the hosts table in one UpdateItem (shared/report/usage-record.ts), so
 * `trawl report` prices a deployed crawl as it prices a local run. On only where the stack says so
 * (`TRAWL_USAGE=1`, set by infra/, as TRAWL_METRICS): local runs write run records instead.
 */
import { countedInto, emptyCounts } from '../aws/request-counter.ts';
import {
  ACTIVE_MINUTES,
  activeMinutes,
  type InvocationUsage,
  usageCounters,
  usageHour,
  usageKey,
} from '../report/usage-record.ts';
import { FUNCTIONS, type StageName } from '../topology.ts';
import type { StageDeps } from './deps.ts';

/** Usage items expire after this (DynamoDB TTL deletes them for free); the report reads 7 days. */
const KEEP_SECONDS = 35 * 86_400;

export const usageRecording = (env: NodeJS.ProcessEnv = process.env): boolean => env.TRAWL_USAGE === '1';

/** Payload bytes of an SQS event's records; null when the event did not come from SQS. */
export function sqsEventBytes(event: unknown): number | null {
  const records = (event as { Records?: { eventSource?: string; body?: string }[] } | null)?.Records;
  if (!Array.isArray(records) || !records.some((r) => r.eventSource === 'aws:sqs')) return null;
  return records.reduce((n, r) => n + Buffer.byteLength(r.body ?? ''), 0);
}

/**
 * Runs one invocation's work and records what it cost (when recording is on). A failed recording
 * is logged, not thrown: a retried batch would do its work twice to count it once.
 */
export async function withUsage<R>(
  deps: StageDeps,
  stage: StageName,
  event: unknown,
  /** the invocation's Lambda context: its memoryLimitInMB is what the record bills */
  context: { memoryLimitInMB?: string } | undefined,
  pagesOf: (result: R) => number,
  run: () => Promise<R>,
): Promise<R> {
  if (!usageRecording()) return run();
  const counts = emptyCounts();
  const started = Date.now();
  let pages = 0;
  try {
    const result = await countedInto(counts, run);
    pages = pagesOf(result);
    return result;
  } finally {
    const usage: InvocationUsage = {
      stage,
      counts,
      ms: Date.now() - started,
      memoryMb: Number(context?.memoryLimitInMB) || FUNCTIONS[stage].memoryMb,
      pages,
      sqsEventBytes: sqsEventBytes(event),
    };
    const now = deps.now();
    await deps.hosts
      .addToItem(
        usageKey(usageHour(new Date(now).toISOString())),
        usageCounters(usage),
        Math.floor(now / 1000) + KEEP_SECONDS,
        { [ACTIVE_MINUTES]: activeMinutes(now - usage.ms, now) },
      )
      .catch((err: Error) => deps.log.warn('usage record not written', { stage, error: err.message }));
  }
}
