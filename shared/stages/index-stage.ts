/**
 * The index stage: delta check against the stored hash, documents written in bulks (SMILA:
 * ≤ 100 records a bulk; here one bulk object per batch), each URL's state updated, and every
 * upsert and deletion appended to the change feed a search index consumes.
 */
import { randomUUID } from 'node:crypto';
import { PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { writeRefreshManifests } from '../aws/refresh-manifest.ts';
import type { UrlItem } from '../aws/url-table.ts';
import { chunkBySize } from '../aws/work-queues.ts';
import { parseDuration } from '../config.ts';
import type { IndexMessage, PageOutcome } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { BatchResult, StageRecord } from './extract-stage.ts';
import { type OutcomePlan, planOutcome } from './index-plan.ts';

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
  try {
    await writeStates(deps, plans, existing, bulk, changes, result.stats);
  } catch (err) {
    // The writes are idempotent (whole items, the same pointers): the whole batch is retried.
    deps.log.error('index writes failed', { error: err as Error });
    return { failedMessageIds: records.map((r) => r.messageId), stats: result.stats };
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

/**
 * Writes every URL's new state as whole items, 25 a BatchWriteItem request (same write units as
 * one UpdateItem each, 25 times fewer calls). Guard against out-of-order deliveries: an outcome
 * fetched before the stored state was is stale and recorded nowhere; within a batch the newest
 * outcome of a URL wins.
 */
async function writeStates(
  deps: StageDeps,
  plans: OutcomePlan[],
  existing: Map<string, UrlItem>,
  bulk: string,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const at = new Date(deps.now()).toISOString();
  const puts = new Map<string, UrlItem>();
  const deletes = new Set<string>();
  let line = 0;
  for (const plan of plans) {
    const { outcome } = plan;
    const pointer = plan.writeDoc ? { bulk, line: line++ } : null;
    const prev = puts.get(outcome.url) ?? existing.get(outcome.url);
    if (prev?.lastFetched && prev.lastFetched > outcome.fetchedAt) {
      stats.stale = (stats.stale ?? 0) + 1;
      continue;
    }
    stats[plan.stat] = (stats[plan.stat] ?? 0) + 1;
    if (plan.forget) {
      puts.delete(outcome.url);
      deletes.add(outcome.url);
    } else {
      deletes.delete(outcome.url);
      puts.set(outcome.url, nextItem(outcome.url, prev, plan, pointer));
    }
    if (plan.deleteReason) changes.push({ type: 'delete', url: outcome.url, at, reason: plan.deleteReason });
    if (pointer)
      changes.push({ type: 'upsert', url: outcome.url, at, bulk: pointer.bulk, line: pointer.line });
  }
  await deps.urls.writeMany([...puts.values()], [...deletes]);
  const due = [...puts.values()].filter((i) => i.nextRefreshAt);
  await writeRefreshManifests(
    deps.store,
    due.map((i) => ({ url: i.url, nextRefreshAt: i.nextRefreshAt as string })),
    at,
  );
}

function nextItem(
  url: string,
  prev: UrlItem | undefined,
  plan: OutcomePlan,
  pointer: { bulk: string; line: number } | null,
): UrlItem {
  const item = {
    ...(prev ?? {}),
    ...plan.set,
    ...(pointer ? { docBulk: pointer.bulk, docLine: pointer.line } : {}),
    url,
  } as UrlItem & Record<string, unknown>;
  for (const key of plan.remove) delete item[key];
  return item;
}
