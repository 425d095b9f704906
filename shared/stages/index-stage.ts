/**
 * The index stage: delta check against the stored hash, documents written in bulks (SMILA:
 * ≤ 100 records a bulk; here one bulk object per batch), each URL's state updated, and every
 * upsert and deletion appended to the change feed a search index consumes.
 */
import { randomUUID } from 'node:crypto';
import { PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { UrlItem } from '../aws/url-table.ts';
import { chunkBySize } from '../aws/work-queues.ts';
import { parseDuration } from '../config.ts';
import { mapLimit } from '../crawl/concurrency.ts';
import { nextRefreshAt } from '../crawl/scheduling.ts';
import type { IndexMessage, PageOutcome } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { BatchResult, StageRecord } from './extract-stage.ts';
import { type OutcomePlan, planOutcome } from './index-plan.ts';

const UPDATE_CONCURRENCY = 32;

export interface ChangeRecord {
  type: 'upsert' | 'delete';
  url: string;
  at: string;
  reason?: string;
  bulk?: string;
  line?: number;
}

/** Processes a batch of index messages. */
export async function runIndexStage(
  deps: StageDeps,
  records: StageRecord<IndexMessage>[],
): Promise<BatchResult> {
  const config = await deps.loadConfig();
  const result: BatchResult = { failedMessageIds: [], stats: {} };
  const perRecord: { record: StageRecord<IndexMessage>; outcomes: PageOutcome[] }[] = [];
  for (const record of records) {
    try {
      perRecord.push({ record, outcomes: await loadOutcomes(deps, record) });
    } catch (err) {
      deps.log.error('index record unreadable', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  const all = perRecord.flatMap((r) => r.outcomes);
  const existing = await deps.urls.getMany(all.map((o) => o.url));
  const now = deps.now();
  const ctx = { config, existing, now, maxAgeMs: parseDuration(config.refresh.maxAge) };
  const plans = all.map((o) => planOutcome(o, ctx));
  const bulk = `docs/bulks/${new Date(now).toISOString().slice(0, 10)}/${randomUUID()}.jsonl.gz`;
  const docs = plans.filter((p) => p.writeDoc).map((p) => p.outcome.doc);
  if (docs.length > 0) await deps.store.putLines(bulk, docs);
  const changes: ChangeRecord[] = [];
  let line = 0;
  let i = 0;
  for (const { record, outcomes } of perRecord) {
    try {
      const mine = outcomes.map(() => {
        const plan = plans[i++] as OutcomePlan;
        return { plan, pointer: plan.writeDoc ? { bulk, line: line++ } : null };
      });
      // URL items are independent: update them concurrently (DynamoDB bills per item, not per call).
      await mapLimit(mine, UPDATE_CONCURRENCY, ({ plan, pointer }) =>
        applyPlan(deps, plan, pointer, changes, result.stats),
      );
    } catch (err) {
      deps.log.error('index record failed', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  if (changes.length > 0) {
    await deps.store.putLines(
      `changes/${new Date(now).toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.jsonl.gz`,
      changes,
    );
    await publishChanges(deps, changes, result.stats);
  }
  return result;
}

/** detail-type of the change events a search index subscribes to (an EventBridge rule on it). */
export const CHANGE_DETAIL_TYPE = 'Trawl Document Changes';
/** EventBridge PutEvents: at most 10 entries a call, 256 KB an entry (AWS limits); room left for the envelope. */
const EVENTS_PER_CALL = 10;
const EVENT_DETAIL_BYTES = 240 * 1024;

/** The change events of one batch: normally one, more only when the changes exceed an entry's size. */
export function changeEvents(crawl: string, bus: string, changes: ChangeRecord[]): PutEventsRequestEntry[] {
  return chunkBySize(changes, Number.POSITIVE_INFINITY, EVENT_DETAIL_BYTES).map((chunk) => ({
    EventBusName: bus,
    Source: 'trawl',
    DetailType: CHANGE_DETAIL_TYPE,
    Detail: JSON.stringify({ crawl, changes: chunk }),
  }));
}

/**
 * One EventBridge event per index batch when TRAWL_EVENT_BUS is set. The S3 change log under
 * changes/ is the durable feed: a failed publish is logged and counted, never fails the batch
 * (its documents are written; a retry would find them unchanged and publish nothing).
 */
export async function publishChanges(
  deps: StageDeps,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const bus = process.env.TRAWL_EVENT_BUS;
  if (!bus) return;
  const entries = changeEvents(deps.crawl, bus, changes);
  for (let i = 0; i < entries.length; i += EVENTS_PER_CALL) {
    let batch = entries.slice(i, i + EVENTS_PER_CALL);
    // Failed entries (throttling, internal errors) are retried once, as AWS advises for PutEvents.
    for (let attempt = 0; attempt < 2 && batch.length > 0; attempt++) {
      try {
        const res = await deps.clients.events.send(new PutEventsCommand({ Entries: batch }));
        batch = batch.filter((_, j) => res.Entries?.[j]?.ErrorCode);
      } catch (err) {
        deps.log.error('publishing change events failed', { bus, error: err as Error });
        break;
      }
    }
    if (batch.length > 0) stats['events:failed'] = (stats['events:failed'] ?? 0) + batch.length;
    stats['events:published'] =
      (stats['events:published'] ?? 0) + Math.min(EVENTS_PER_CALL, entries.length - i) - batch.length;
  }
}

async function loadOutcomes(deps: StageDeps, record: StageRecord<IndexMessage>): Promise<PageOutcome[]> {
  const body = record.body;
  if (!body) return [];
  if (body.spill) return deps.store.getLines<PageOutcome>(body.spill);
  return Array.isArray(body.outcomes) ? body.outcomes : [];
}

async function applyPlan(
  deps: StageDeps,
  plan: OutcomePlan,
  pointer: { bulk: string; line: number } | null,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const { outcome } = plan;
  const at = new Date(deps.now()).toISOString();
  stats[plan.stat] = (stats[plan.stat] ?? 0) + 1;
  if (plan.forget) {
    await deps.urls.forget(outcome.url);
  } else {
    const set: Partial<UrlItem> = {
      ...plan.set,
      ...(pointer ? { docBulk: pointer.bulk, docLine: pointer.line } : {}),
    };
    const applied = await deps.urls.update(outcome.url, set, {
      ifFetchedNotAfter: outcome.fetchedAt,
      remove: plan.remove,
    });
    // An older delivery lost to a newer one: its document and deletion are stale, record nothing.
    if (!applied) return;
  }
  if (plan.deleteReason) changes.push({ type: 'delete', url: outcome.url, at, reason: plan.deleteReason });
  if (pointer) changes.push({ type: 'upsert', url: outcome.url, at, bulk: pointer.bulk, line: pointer.line });
}

export { nextRefreshAt };
