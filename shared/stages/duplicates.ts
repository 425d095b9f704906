/**
 * Folds duplicate content in the index stage (index.foldDuplicates): each new or changed document
 * registers its text digest in the hosts table (one conditional write, and a read first only when
 * the digest may be known: retried when another batch wrote first); a URL whose content another URL already keeps becomes `duplicate`
 * (`duplicateOf` that URL), and a preferred URL (canonical, else shorter) takes the document over,
 * the old keeper's document being deleted in the change feed and the URL fetched again to record
 * it as a duplicate. When a keeper's content goes away or changes, a duplicate takes its place:
 * it is fetched again and indexed.
 */

import { withKeyLock } from '../aws/key-lock.ts';
import { admitContent, type DupEntry, releaseContent } from '../crawl/extract/duplicates.ts';
import { taskFrom } from '../crawl/page/page-kit.ts';
import { mapLimit } from '../crawl/state/concurrency.ts';
import { DOC_FIELDS, type OutcomePlan } from '../crawl/state/index-plan.ts';
import type { UrlItem, UrlTask } from '../types.ts';
import type { ChangeRecord } from './change-feed.ts';
import type { StageDeps } from './deps.ts';
import { decidedUnder, sendTasks } from './send-tasks.ts';

const MAX_SWAPS = 8;
/** Digest entries read and written at once by one batch (each a read and a conditional write). */
const CONCURRENCY = 16;

/**
 * Reads, changes and conditionally writes one digest's entry until the write wins. Within this
 * process one digest's updates take turns (two URLs of a batch with the same content); other
 * writers, on other containers, are what the conditional write is for.
 */
async function update<T>(
  deps: StageDeps,
  digest: string,
  change: (entry: DupEntry | null) => { entry: DupEntry | null; result: T },
  likelyAbsent = false,
): Promise<T> {
  const key = `dup#${deps.crawl}#${digest}`;
  return withKeyLock(`update:${key}`, async () => {
    for (let i = 0; i < MAX_SWAPS; i++) {
      // Content new to its URL is nearly always new to the crawl: first try writing it as absent
      // (one conditional write, no read); a failed try reads and swaps as usual.
      const raw = i === 0 && likelyAbsent ? null : await deps.hosts.getValue(key, true);
      const stored = raw === null ? null : (JSON.parse(raw) as DupEntry);
      const { entry, result } = change(stored);
      // Nothing to write: no entry, none needed (a URL leaving content nobody registered).
      if (entry === null) return result;
      const value = JSON.stringify(entry);
      // Nothing to write: a duplicate past the entry's bound, or one listed already.
      if (stored !== null && value === JSON.stringify(stored)) return result;
      if (await deps.hosts.swapValue(key, raw, value)) return result;
    }
    throw new Error(`duplicate registry ${key}: too many concurrent writers`);
  });
}

/**
 * The tasks that fetch duplicates again to take a document over (or to record a demoted keeper),
 * judged as the crawl judges them: their rules' source, addMeta, noFollow and priority, at their
 * own depth (a takeover indexed a page without what its rules add, followed a noFollow PDF's
 * links, at the old keeper's depth). Each may have been fetched since (its own refresh in the same
 * cycle): the index stage checks its state first (`redelivered`), so one change is one record.
 */
/** A URL to fetch again: at the depth it had, and whether it is a demoted keeper (`UrlTask.demoted`). */
type Refetch = { url: string; depth: number; demoted?: true };

async function refetchTasks(deps: StageDeps, wanted: Refetch[]): Promise<UrlTask[]> {
  if (wanted.length === 0) return [];
  const [{ createUrlDecider }, config, items] = await Promise.all([
    import('../crawl/rules/decide.ts'),
    deps.loadConfig(),
    deps.urls.getMany(wanted.map((w) => w.url)),
  ]);
  const decider = createUrlDecider(config);
  const tasks = wanted.flatMap(({ url, depth: fallback, demoted }) => {
    const depth = items.get(url)?.depth ?? fallback;
    const d = decider.decide(url, { depth, isStart: depth === 0 });
    if (!d.accepted) return [];
    const task: UrlTask = { ...taskFrom(d, depth), url, redelivered: true };
    return [demoted ? { ...task, demoted } : task];
  });
  return decidedUnder(config, tasks);
}

/** `url` leaves the entry of content `digest`: the duplicate that takes its place, if it kept it. */
async function release(deps: StageDeps, digest: string, url: string): Promise<string | undefined> {
  return update(deps, digest, (e) => {
    if (!e) return { entry: null, result: undefined };
    const r = releaseContent(e, url);
    return { entry: r.entry, result: r.successor };
  });
}

/**
 * A URL the refresh forgets (out of scope, an orphan, a form the URL identity no longer gives)
 * leaves its content's entry too: a duplicate in line takes the document over (the task that
 * fetches it again), and a page with that content found later is not folded into a URL gone
 * from the index. Before, the entry kept naming the forgotten URL as its keeper.
 */
export async function releaseForgotten(deps: StageDeps, item: UrlItem): Promise<UrlTask | null> {
  if (!item.digest) return null;
  const successor = await release(deps, item.digest, item.url);
  if (!successor) return null;
  return (await refetchTasks(deps, [{ url: successor, depth: item.depth ?? 0 }]))[0] ?? null;
}

/**
 * With folding off, a URL once folded as a duplicate and now indexed keeps no `duplicateOf` (it
 * named the URL that kept its document then).
 */
export function unfold(plans: OutcomePlan[], existing: Map<string, UrlItem>): void {
  for (const plan of plans)
    if (existing.get(plan.outcome.url)?.duplicateOf && plan.outcome.state !== 'duplicate')
      plan.set.duplicateOf = null;
}

/** Rewrites the plans of duplicates and sends the URLs to fetch again; returns the delete changes. */
export async function foldDuplicates(
  deps: StageDeps,
  plans: OutcomePlan[],
  existing: Map<string, UrlItem>,
  at: string,
): Promise<ChangeRecord[]> {
  const changes: ChangeRecord[] = [];
  const again: Refetch[] = [];
  const demotions: { url: string; of: string; depth: number }[] = [];
  // The batch's digests at once, not one after another (a batch holds up to 100 new documents).
  await mapLimit(plans, CONCURRENCY, async (plan) => {
    const o = plan.outcome;
    if (o.element) return;
    const prev = existing.get(o.url);
    // Not indexed now (a rule's noIndex, an error, ignored): folded into no URL; a duplicate
    // again is one below. The URL it named kept the document while it was folded, not now.
    if (prev?.duplicateOf && o.state !== 'indexed') plan.set.duplicateOf = null;
    // The content the URL has now: a 304 keeps the old, and so does an error whose plan keeps the
    // document (a temporary one, seed 001: the page is kept through the outage); any other state
    // but indexed has none. Until 2026-11-28 a keeper's 503 handed its content to a duplicate,
    // and the same content was in the index twice for the outage.
    const keepsDoc =
      o.state === 'error' &&
      Boolean(prev?.docBulk) &&
      !plan.forget &&
      !plan.deleteReason &&
      !plan.remove.includes('docBulk');
    const keepsContent = keepsDoc || (o.state === 'indexed' && o.notModified);
    const digest = keepsContent ? prev?.digest : o.state === 'indexed' ? o.dup?.digest : null;
    // The URL's old content is gone (changed, failed, ignored): a duplicate may take its place.
    if (prev?.digest && prev.digest !== digest) {
      const successor = await release(deps, prev.digest, o.url);
      if (successor) again.push({ url: successor, depth: o.task.depth });
    }
    if (o.state === 'indexed' && !o.notModified && !o.dup) {
      // A page with no text (page-outcome.ts): a document of its own, folded into none.
      if (prev?.digest) plan.set.digest = null;
      if (prev?.duplicateOf) plan.set.duplicateOf = null;
      return;
    }
    if (!digest || o.state !== 'indexed' || o.notModified || !o.dup) return;
    plan.set.digest = digest;
    const canonical = o.dup.canonical;
    const d = await update(
      deps,
      digest,
      (e) => {
        const r = admitContent(e, o.url, o.task.depth, canonical);
        return { entry: r.entry, result: r };
      },
      prev?.digest !== digest,
    );
    if (d.kind === 'keep') {
      plan.set.duplicateOf = null;
      if (d.demoted) demotions.push({ url: d.demoted, of: o.url, depth: d.entry.depth });
      return;
    }
    markDuplicate(plan, d.of, Boolean(prev?.docBulk));
  });
  // A keeper demoted by a URL of the same batch (both new, the preferred one second) is recorded
  // a duplicate here: its plan would upsert the document that the delete removes, in the same
  // feed object. Any other keeper's document is deleted, and the URL fetched again to record it.
  const inBatch = new Map(plans.map((p) => [p.outcome.url, p]));
  for (const { url, of, depth } of demotions) {
    const plan = inBatch.get(url);
    // Its own outcome in this batch says what it is now: indexed (a new document, or one found
    // unchanged), it is recorded a duplicate here, its plan's delete the one record; not indexed,
    // its plan deletes its document itself. Either way no record more and no fetch again (an
    // unchanged one made a second delete record when it was fetched again).
    const prev = existing.get(url);
    // (An outcome older than the URL's state, or a copy of it, is not recorded: planWrites.)
    const recorded = !(prev?.lastFetched && plan && prev.lastFetched >= plan.outcome.fetchedAt);
    if (plan && !plan.outcome.element && recorded) {
      if (plan.outcome.state === 'indexed') markDuplicate(plan, of, Boolean(prev?.docBulk));
      continue;
    }
    changes.push({ type: 'delete', url, at, reason: `duplicate: of ${of}`, version: Date.parse(at) });
    again.push({ url, depth, demoted: true });
  }
  // A demoted keeper fetched again (the task that records it): the delete above removed its
  // document already, so whatever it is now (a duplicate, a 404) it deletes nothing more. It made
  // a second delete record, with the fetch time as version, which the feed's folding kept.
  for (const plan of plans) if (plan.outcome.task.demoted && plan.deleteReason) delete plan.deleteReason;
  const tasks = await refetchTasks(deps, again);
  if (tasks.length > 0) await sendTasks(deps, tasks);
  return changes;
}

function markDuplicate(plan: OutcomePlan, of: string, hadDoc: boolean): void {
  plan.writeDoc = false;
  plan.set = { ...plan.set, state: 'duplicate', duplicateOf: of, note: `same content as ${of}` };
  for (const f of DOC_FIELDS) delete (plan.set as Record<string, unknown>)[f];
  plan.remove.push(...DOC_FIELDS);
  plan.stat = 'duplicate';
  if (hadDoc) plan.deleteReason = `duplicate: of ${of}`;
}
