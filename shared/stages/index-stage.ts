/**
 * The index stage: delta check against the previous hash (carried by the task), documents
 * adopted from the extract stage's bulks (SMILA: crawled records in bulks), each URL's state
 * recorded (url-state.ts: a manifest line, or the table item), and every upsert and deletion
 * appended to the change feed a search index consumes. No per-URL table read or write for a
 * page fetched and indexed normally: its claim was the one write unit it costs.
 */
import { randomUUID } from 'node:crypto';
import { PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { writeStateLines } from '../aws/refresh-manifest.ts';
import { chunkBySize } from '../aws/work-queues.ts';
import { keepsInTable } from '../crawl/url-state.ts';
import { changeVersions, sinkChanges } from '../search/index-sink.ts';
import type { IndexMessage, PageOutcome, UrlItem } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { foldDuplicates } from './duplicates.ts';
import type { BatchResult, StageRecord } from './extract-stage.ts';
import { type OutcomePlan, planContext, planOutcome, previousFromTasks } from './index-plan.ts';

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
  const existing = await previousStates(deps, all);
  const now = deps.now();
  const ctx = planContext(config, existing, now);
  const plans = all.map((o) => planOutcome(o, ctx));
  const changes: ChangeRecord[] = [];
  try {
    // Before the writes: a duplicate's plan changes (no document, state `duplicate`).
    if (config.index.foldDuplicates)
      changes.push(...(await foldDuplicates(deps, plans, existing, new Date(now).toISOString())));
    await writeStates(deps, plans, existing, changes, result.stats);
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
    // The search sink (index.sink): a failure retries the batch, which yields the same changes.
    try {
      const sunk = await sinkChanges(deps.store, config, changes);
      if (sunk) result.stats['search:written'] = sunk.written;
    } catch (err) {
      deps.log.error('search sink failed', { error: err as Error });
      return { failedMessageIds: records.map((r) => r.messageId), stats: result.stats };
    }
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

/**
 * Each URL's state before this fetch: carried by its task when it was queued again (refresh,
 * seed), none for a URL fetched the first time (its claim is all there is). Compound elements
 * have no task of their own: their states are read from the table (one BatchGetItem).
 */
async function previousStates(deps: StageDeps, outcomes: PageOutcome[]): Promise<Map<string, UrlItem>> {
  const existing = previousFromTasks(outcomes);
  const elements = outcomes.filter((o) => o.element).map((o) => o.url);
  if (elements.length > 0) {
    for (const [url, item] of await deps.urls.getMany(elements)) existing.set(url, item);
  }
  return existing;
}

async function loadOutcomes(deps: StageDeps, record: StageRecord<IndexMessage>): Promise<PageOutcome[]> {
  const body = record.body;
  if (!body) return [];
  if (body.spill) return deps.store.getLines<PageOutcome>(body.spill);
  return Array.isArray(body.outcomes) ? body.outcomes : [];
}

/**
 * Writes every URL's new state: as a line in the refresh manifests (one S3 PUT per due day),
 * and — only for the URLs kept in the table (url-state.ts) — as whole items, 25 a BatchWriteItem.
 * Guard against out-of-order deliveries: an outcome fetched before the known state was is
 * stale and recorded nowhere; within a batch the newest outcome of a URL wins.
 */
async function writeStates(
  deps: StageDeps,
  plans: OutcomePlan[],
  existing: Map<string, UrlItem>,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const at = new Date(deps.now()).toISOString();
  const puts = new Map<string, UrlItem>();
  const deletes = new Set<string>();
  for (const plan of plans) {
    const { outcome } = plan;
    // The extract stage wrote the document into its bulk unless the same delta check kept the old one.
    const ref = outcome.docRef;
    const pointer = plan.writeDoc && ref?.bulk ? { bulk: ref.bulk, line: ref.line ?? 0 } : null;
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
      const next = nextItem(outcome.url, prev, plan, pointer);
      next.stored = keepsInTable(outcome, prev) ? 'table' : 'line';
      puts.set(outcome.url, next);
    }
    const version = Date.parse(outcome.fetchedAt);
    if (plan.deleteReason) changes.push({ type: 'delete', url: outcome.url, at, reason: plan.deleteReason });
    if (pointer)
      changes.push({ type: 'upsert', url: outcome.url, at, bulk: pointer.bulk, line: pointer.line });
    for (const c of changes.slice(-2)) if (c.url === outcome.url) changeVersions.set(c, version);
  }
  const states = [...puts.values()];
  // Lines first: a failed table write retries the batch, and a repeated line is harmless.
  await writeStateLines(
    deps.store,
    states.filter((s) => s.stored === 'line' || s.nextRefreshAt),
    at,
  );
  await deps.urls.writeMany(
    states.filter((s) => s.stored === 'table'),
    [...deletes],
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
  for (const key of [...plan.remove, 'at']) delete item[key];
  return item;
}
