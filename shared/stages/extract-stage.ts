/**
 * The extract stage: reads page bundles, decides each page's outcome, enqueues new links
 * exactly once per crawl (read before write, then a conditional put), and hands the outcomes
 * to the index stage. Each SQS record succeeds or fails on its own (ReportBatchItemFailures).
 */
import { randomUUID } from 'node:crypto';
import { chunkBySize } from '../aws/work-queues.ts';
import type { CrawlConfig } from '../config.ts';
import { createUrlDecider, type UrlDecider } from '../crawl/decide.ts';
import type { CrawlDocument, ExtractMessage, FetchedPage, IndexMessage, PageOutcome } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { planContext, planOutcome, previousFromTasks } from './index-plan.ts';
import { processPage } from './page-outcome.ts';
import { sendTasks } from './send-tasks.ts';
import { trapGate } from './trap-gate.ts';

export interface StageRecord<T> {
  messageId: string;
  body: T | null;
}

export interface BatchResult {
  failedMessageIds: string[];
  stats: Record<string, number>;
}

/** An outcome larger than this goes to S3 instead of the SQS message (SQS bills per 64 KB, caps at 1 MiB). */
const SPILL_BYTES = 200 * 1024;
const OUTCOMES_PER_MESSAGE = 100;

let deciderCache: { config: CrawlConfig; decider: UrlDecider } | null = null;
function deciderFor(config: CrawlConfig): UrlDecider {
  if (deciderCache?.config !== config) deciderCache = { config, decider: createUrlDecider(config) };
  return deciderCache.decider;
}

/** Processes a batch of extract messages. */
export async function runExtractStage(
  deps: StageDeps,
  records: StageRecord<ExtractMessage>[],
): Promise<BatchResult> {
  const config = await deps.loadConfig();
  const decider = deciderFor(config);
  const result: BatchResult = { failedMessageIds: [], stats: {} };
  const outcomes: PageOutcome[] = [];
  for (const record of records) {
    try {
      outcomes.push(...(await extractRecord(deps, config, decider, record, result.stats)));
    } catch (err) {
      deps.log.error('extract record failed', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  try {
    await bulkDocuments(deps, config, outcomes);
    await sendOutcomes(deps, outcomes);
  } catch (err) {
    // Without their outcomes the records are not done: all of them are retried (claims are idempotent).
    deps.log.error('sending outcomes failed', { error: err as Error });
    return { failedMessageIds: records.map((r) => r.messageId), stats: result.stats };
  }
  return result;
}

async function extractRecord(
  deps: StageDeps,
  config: CrawlConfig,
  decider: UrlDecider,
  record: StageRecord<ExtractMessage>,
  stats: Record<string, number>,
): Promise<PageOutcome[]> {
  if (!record.body || typeof record.body.bundle !== 'string') {
    deps.log.warn('dropping malformed extract message', { messageId: record.messageId });
    return [];
  }
  const pages = await deps.store.getLines<FetchedPage>(record.body.bundle);
  const now = new Date(deps.now()).toISOString();
  const outcomes: PageOutcome[] = [];
  const tasks = [];
  for (const page of pages) {
    const r = await processPage(page, { config, decider, now });
    outcomes.push(...r.outcomes);
    tasks.push(...r.tasks);
    for (const [reason, n] of Object.entries(r.rejected))
      stats[`rejected:${reason}`] = (stats[`rejected:${reason}`] ?? 0) + n;
  }
  // The claimer is the bundle: a redelivery of this record re-sends what it claimed before a crash.
  const gate = trapGate(deps, config.scope.traps, stats);
  const fresh = await deps.urls.claim(tasks, record.body.bundle, now, gate);
  await sendTasks(deps, fresh);
  deps.urls.markKnown(fresh.map((t) => t.url));
  if (fresh.length > 0) await deps.kickFetch();
  stats.discovered = (stats.discovered ?? 0) + fresh.length;
  return outcomes;
}

/**
 * Writes the batch's documents into one bulk (gzip JSON lines) and leaves the outcomes a pointer:
 * the index queue then carries states, not page text (SQS bills each 64 KB). A document the
 * delta check finds unchanged (the task carried the previous hash) is not written at all.
 */
async function bulkDocuments(deps: StageDeps, config: CrawlConfig, outcomes: PageOutcome[]): Promise<void> {
  const ctx = planContext(config, previousFromTasks(outcomes), deps.now());
  const key = `docs/bulks/${now10(deps)}/${randomUUID()}.jsonl.gz`;
  const docs: CrawlDocument[] = [];
  for (const o of outcomes) {
    if (!o.doc) continue;
    const ref: NonNullable<PageOutcome['docRef']> = { hash: o.doc.hash, indexedAt: o.doc.indexedAt };
    if (planOutcome(o, ctx).writeDoc) {
      ref.bulk = key;
      ref.line = docs.length;
      docs.push(o.doc);
    }
    o.docRef = ref;
    delete o.doc;
  }
  if (docs.length > 0) await deps.store.putLines(key, docs);
}

async function sendOutcomes(deps: StageDeps, outcomes: PageOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const small: PageOutcome[] = [];
  const large: PageOutcome[] = [];
  for (const o of outcomes) (Buffer.byteLength(JSON.stringify(o)) > SPILL_BYTES ? large : small).push(o);
  const messages: { body: IndexMessage }[] = chunkBySize(small, OUTCOMES_PER_MESSAGE).map((chunk) => ({
    body: { outcomes: chunk },
  }));
  if (large.length > 0) {
    const key = `docs/spill/${now10(deps)}/${randomUUID()}.jsonl.gz`;
    await deps.store.putLines(key, large);
    messages.push({ body: { spill: key } });
  }
  await deps.queues.send(deps.queueUrls.index, messages);
}

function now10(deps: StageDeps): string {
  return new Date(deps.now()).toISOString().slice(0, 10);
}
