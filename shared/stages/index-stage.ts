/**
 * The index stage: delta check against the previous hash (carried by the task), documents
 * adopted from the extract stage's bulks (SMILA: crawled records in bulks), each URL's state
 * recorded (url-state.ts: a manifest line, or the table item), and every upsert and deletion
 * appended to the change feed a search index consumes. No per-URL table read or write for a
 * page fetched and indexed normally: its claim was the one write unit it costs.
 */
import { createHash } from 'node:crypto';
import { manifestStamp, recentLines, writeStateLines } from '../aws/refresh-manifest.ts';
import type { CrawlConfig } from '../config.ts';
import {
  newestPerUrl,
  type OutcomePlan,
  planContext,
  planOutcome,
  previousFromTasks,
} from '../crawl/state/index-plan.ts';
import { refreshBucket } from '../crawl/state/scheduling.ts';
import { keepLaterStamps, keepsInTable, resolveState } from '../crawl/state/url-state.ts';
import { KEYS } from '../layout.ts';
import { sinkChanges } from '../search/index-sink.ts';
import type { BatchResult, IndexMessage, PageOutcome, StageRecord, UrlItem } from '../types.ts';
import { type ChangeRecord, publishChanges } from './change-feed.ts';
import { putElementList, retireElements } from './compound-elements.ts';
import type { StageDeps } from './deps.ts';
import { foldDuplicates, unfold } from './duplicates.ts';
import { noteForgotten } from './forget-epoch.ts';
import { forgetSitemaps } from './trap-gate.ts';

/** Processes a batch of index messages. */
export async function runIndexStage(
  deps: StageDeps,
  records: StageRecord<IndexMessage>[],
): Promise<BatchResult> {
  const config = await deps.loadConfig();
  const result: BatchResult = { failedMessageIds: [], stats: {} };
  const all: PageOutcome[] = [];
  for (const record of records) {
    try {
      all.push(...(await loadOutcomes(deps, record)));
    } catch (err) {
      deps.log.error('index record unreadable', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  const now = deps.now();
  let writes: PlannedWrites | undefined;
  let linesWritten = false;
  try {
    const forgotten = new Set<string>();
    const existing = await previousStates(deps, config, all, now, forgotten);
    const ctx = planContext(config, existing, now);
    const kept = all.filter((o) => !(o.redelivered && forgotten.has(o.url)));
    if (kept.length < all.length) result.stats.forgotten = all.length - kept.length;
    const live = newestPerUrl(kept);
    if (live.length < kept.length) result.stats.superseded = kept.length - live.length;
    const plans = live.map((o) => planOutcome(o, ctx));
    // Elements an archive no longer gives (or a gone archive's) are retired with it.
    const retiring = await retireElements(deps, plans, ctx);
    plans.push(...retiring.plans);
    // Before the writes: a duplicate's plan changes (no document, state `duplicate`).
    if (!config.index.foldDuplicates) unfold(plans, existing);
    const folded = config.index.foldDuplicates
      ? await foldDuplicates(deps, plans, existing, new Date(now).toISOString())
      : [];
    writes = planWrites(plans, existing, now);
    writes.changes.unshift(...folded);
    // The change feed and the search sink first, the states last: a batch retried after a failure
    // finds its states not yet current and yields the same changes again (the same feed object);
    // once the states are written, a redelivered copy finds them current and changes nothing.
    await writeChanges(deps, writes.changes);
    const sunk = await sinkChanges(deps.store, config, writes.changes);
    if (sunk) result.stats['search:written'] = sunk.written;
    if (sunk?.refused.length) {
      result.stats['search:refused'] = sunk.refused.length;
      deps.log.warn('the search engine refused documents (they are in trawl docs and the feed)', {
        refused: sunk.refused,
      });
    }
    await persistStates(deps, writes, () => {
      linesWritten = true;
    });
    for (const list of retiring.lists) await putElementList(deps, list.archive, list.urls);
  } catch (err) {
    // Every write is idempotent (whole items, the same pointers, a key named by its content).
    // The message only: a search engine's error carries the request (every document of the batch, twice).
    deps.log.error('index writes failed', { error: String((err as Error)?.message ?? err).slice(0, 2000) });
    const stats: Record<string, number> = {};
    if (writes && linesWritten) countWritten(writes, true, stats);
    return { failedMessageIds: records.map((r) => r.messageId), stats };
  }
  countWritten(writes, false, result.stats);
  for (const c of writes.changes) {
    const k = c.type === 'upsert' ? 'documents:upserted' : 'documents:deleted';
    result.stats[k] = (result.stats[k] ?? 0) + 1;
  }
  await publishChanges(deps, writes.changes, result.stats);
  return result;
}

/**
 * The batch's change records in one object. Its key is named by the changes' identity (URL,
 * fetch time, kind), so the same changes written twice — a batch retried before its states were
 * recorded — are one object, not two.
 */
async function writeChanges(deps: StageDeps, changes: ChangeRecord[]): Promise<void> {
  if (changes.length === 0) return;
  const identity = changes.map((c) => [c.type, c.url, c.version ?? 0, c.reason ?? '']);
  const digest = createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 32);
  const newest = Math.max(...changes.map((c) => c.version ?? 0));
  await deps.store.putLines(KEYS.changes(manifestStamp(new Date(newest).toISOString()), digest), changes);
}

/** How long after a first delivery a copy can still arrive (SQS receives × visibility, with room). */
const REDELIVERY_WINDOW_MS = 2 * 3_600_000;

/**
 * Each URL's state before this fetch: carried by its task when it was queued again (refresh,
 * seed), none for a URL fetched the first time (its claim is all there is). Compound elements
 * have no task of their own: their states are read from the table (one BatchGetItem). An outcome
 * that may be a copy (a message on its way was delivered twice) is checked against the URL's
 * current state: its table item and the state lines written since its fetch could have been.
 */
async function previousStates(
  deps: StageDeps,
  config: CrawlConfig,
  outcomes: PageOutcome[],
  now: number,
  forgotten: Set<string>,
): Promise<Map<string, UrlItem>> {
  const existing = previousFromTasks(outcomes);
  const elements = outcomes.filter((o) => o.element).map((o) => o.url);
  if (elements.length > 0) {
    for (const [url, item] of await deps.urls.getMany(elements)) existing.set(url, item);
  }
  // Start URLs and sitemaps live in the table: their item is read for every outcome (a few per
  // cycle), so a copy indexed before its original (a race after a lost delete) cannot slip through.
  const copies = outcomes.filter((o) => o.redelivered && !o.element);
  const tableKept = outcomes.filter((o) => !o.element && (o.task.depth === 0 || o.task.kind === 'sitemap'));
  const urls = new Set([...copies, ...tableKept].map((o) => o.url));
  if (urls.size === 0) return existing;
  const items = await deps.urls.getMany([...urls]);
  const lines = await copyLines(deps, config, copies, existing, now);
  for (const url of urls) {
    const current = resolveState(items.get(url), lines.get(url));
    const known = existing.get(url);
    if (current && (!known || (current.lastFetched ?? '') > (known.lastFetched ?? '')))
      existing.set(url, current);
    else if (current && known) existing.set(url, keepLaterStamps(known, current));
  }
  // No item: forgotten since (a 404 on refresh, clear-errors): the copy has nothing left to record.
  for (const o of copies) if (!items.has(o.url)) forgotten.add(o.url);
  return existing;
}

/** The state lines an earlier delivery of these outcomes could have written: their due days, since their fetch. */
async function copyLines(
  deps: StageDeps,
  config: CrawlConfig,
  copies: PageOutcome[],
  existing: Map<string, UrlItem>,
  now: number,
): Promise<Map<string, UrlItem>> {
  if (copies.length === 0) return new Map();
  const ctx = planContext(config, existing, now);
  const days = copies.flatMap((o) => {
    const due = planOutcome(o, ctx).set.nextRefreshAt;
    if (!due) return [];
    return [
      refreshBucket(due),
      refreshBucket(new Date(Date.parse(due) - REDELIVERY_WINDOW_MS).toISOString()),
    ];
  });
  const since = Math.min(...copies.map((o) => Date.parse(o.fetchedAt) || now)) - REDELIVERY_WINDOW_MS;
  const urls = new Set(copies.map((o) => o.url));
  return recentLines(deps.store, urls, days, new Date(since).toISOString());
}

async function loadOutcomes(deps: StageDeps, record: StageRecord<IndexMessage>): Promise<PageOutcome[]> {
  const body = record.body;
  if (!body) return [];
  const outcomes = body.spill
    ? await deps.store.getLines<PageOutcome>(body.spill)
    : Array.isArray(body.outcomes)
      ? body.outcomes
      : [];
  // A message received before may have been indexed already (a crash before its delete).
  return (record.receiveCount ?? 1) > 1 ? outcomes.map((o) => ({ ...o, redelivered: true })) : outcomes;
}

interface PlannedWrites {
  changes: ChangeRecord[];
  puts: Map<string, UrlItem>;
  deletes: Set<string>;
  /** sitemaps among the deletes that had a row (their sites' sitemap counts give their places back) */
  forgottenSitemaps: Set<string>;
  at: string;
  /** each recorded URL's outcome (`indexed`, `reindexed`, `unchanged`, `error:…`): counted once its state is written */
  outcomes: Map<string, string>;
  /** outcomes not recorded again (`redelivered`, `stale`) */
  skipped: Record<string, number>;
}

/**
 * The outcomes whose states this attempt wrote: all of them, or — when the table write failed
 * after the manifest lines were written — those recorded as lines. A retry finds those current
 * and counts them `redelivered`, and counts the others itself: each outcome is counted once,
 * where counting every attempt of a failed batch made a crawl's summary say "585 new" for 293
 * documents.
 */
function countWritten(writes: PlannedWrites, linesOnly: boolean, stats: Record<string, number>): void {
  for (const [url, stat] of writes.outcomes) {
    if (linesOnly && writes.puts.get(url)?.stored !== 'line') continue;
    stats[stat] = (stats[stat] ?? 0) + 1;
  }
  if (linesOnly) return;
  for (const [k, v] of Object.entries(writes.skipped)) stats[k] = (stats[k] ?? 0) + v;
}

/**
 * Every URL's new state and the batch's change records, decided without I/O. Guard against
 * out-of-order and repeated deliveries: an outcome fetched before the known state was is stale,
 * one fetched at the same time is a copy of one recorded already, and neither is recorded again;
 * within a batch the newest outcome of a URL wins.
 */
function planWrites(plans: OutcomePlan[], existing: Map<string, UrlItem>, now: number): PlannedWrites {
  const at = new Date(now).toISOString();
  const writes: PlannedWrites = {
    changes: [],
    puts: new Map(),
    deletes: new Set(),
    forgottenSitemaps: new Set(),
    at,
    outcomes: new Map(),
    skipped: {},
  };
  const { changes, puts, deletes, outcomes, skipped: stats } = writes;
  for (const plan of plans) {
    const { outcome } = plan;
    // The extract stage wrote the document into its bulk unless the same delta check kept the old one.
    const ref = outcome.docRef;
    const pointer = plan.writeDoc && ref?.bulk ? { bulk: ref.bulk, line: ref.line ?? 0 } : null;
    const prev = puts.get(outcome.url) ?? existing.get(outcome.url);
    if (prev?.lastFetched && prev.lastFetched >= outcome.fetchedAt) {
      const kind = prev.lastFetched === outcome.fetchedAt ? 'redelivered' : 'stale';
      stats[kind] = (stats[kind] ?? 0) + 1;
      continue;
    }
    outcomes.set(outcome.url, plan.stat);
    if (plan.forget) {
      puts.delete(outcome.url);
      deletes.add(outcome.url);
      // Its place in its site's sitemap count, given back once: a repeated delivery finds no row.
      if (outcome.task.kind === 'sitemap' && existing.has(outcome.url))
        writes.forgottenSitemaps.add(outcome.url);
    } else {
      deletes.delete(outcome.url);
      const next = nextItem(outcome.url, prev, plan, pointer);
      next.stored = keepsInTable(outcome, prev) ? 'table' : 'line';
      puts.set(outcome.url, next);
    }
    const version = Date.parse(outcome.fetchedAt);
    if (plan.deleteReason)
      changes.push({ type: 'delete', url: outcome.url, at, reason: plan.deleteReason, version });
    if (pointer) {
      const { bulk, line } = pointer;
      changes.push({
        type: 'upsert',
        url: outcome.url,
        at,
        // docs/documents.md: why — a page new to the index, or a changed one
        reason: plan.stat === 'reindexed' ? 'changed' : 'new',
        bulk,
        line,
        hash: plan.set.hash ?? undefined,
        version,
      });
    }
  }
  return writes;
}

/**
 * Writes the states: as lines in the refresh manifests (one S3 PUT per due day), and — only for
 * the URLs kept in the table (url-state.ts) — as whole items, 25 a BatchWriteItem.
 */
async function persistStates(
  deps: StageDeps,
  writes: PlannedWrites,
  linesWritten: () => void,
): Promise<void> {
  const states = [...writes.puts.values()];
  // Lines first: a failed table write retries the batch, and a repeated line is harmless.
  await writeStateLines(
    deps.store,
    states.filter((s) => s.stored === 'line' || s.nextRefreshAt),
    writes.at,
  );
  linesWritten();
  // Each put keeps a link stamp written since its state was read (url-table.ts putStates): a
  // refresh task's state is as old as its cycle's start, and a page linking to it read whole in
  // that cycle stamps it meanwhile.
  await deps.urls.putStates(states.filter((s) => s.stored === 'table'));
  await deps.urls.writeMany([], [...writes.deletes]);
  if (writes.deletes.size > 0) await noteForgotten(deps);
  await forgetSitemaps(
    deps,
    [...writes.forgottenSitemaps].filter((url) => writes.deletes.has(url)),
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
