/**
 * The refresh stage (seed 004 "aged information check"): URLs whose next refresh time has come
 * are fetched again through the refresh source with If-Modified-Since / If-None-Match; URLs that
 * a changed config now rejects are deleted. Due URLs are found in the refresh manifests of the
 * days since the last cycle (refresh-manifest.ts), so a cycle costs what is due, not the size of
 * the index: one S3 LIST per day, one GET per manifest, per due URL ½ read unit (BatchGetItem:
 * is it still known?), a share of one frontier message and — only for deletions — one DeleteItem.
 * Each task carries the URL's state, so the index stage's delta check reads nothing.
 */
import { randomUUID } from 'node:crypto';
import { dueLines, writeStateLines } from '../aws/refresh-manifest.ts';
import {
  createUrlDecider,
  sitemapsOf,
  startTasks,
  startUrlsOf,
  type UrlDecider,
} from '../crawl/rules/decide.ts';
import { mapLimit } from '../crawl/state/concurrency.ts';
import { parseDuration } from '../crawl/state/duration.ts';
import { boundsOf, DOC_FIELDS } from '../crawl/state/index-plan.ts';
import { orphanGraceMs } from '../crawl/state/orphans.ts';
import { nextRefreshAt, refreshBuckets } from '../crawl/state/scheduling.ts';
import { isTableKept, keepNewest, orphanReason, reachedAt, resolveState } from '../crawl/state/url-state.ts';
import { KEYS, PREFIXES } from '../layout.ts';
import { sinkChanges } from '../search/index-sink.ts';
import type { ChangeHint, UrlItem, UrlTask } from '../types.ts';
import { type ChangeRecord, publishChanges } from './change-feed.ts';
import { readChangeHints } from './change-hints.ts';
import { elementsOfGone, madeDocuments, putElementList, wasArchive } from './compound-elements.ts';
import type { StageDeps } from './deps.ts';
import { releaseForgotten } from './duplicates.ts';
import { noteForgotten } from './forget-epoch.ts';
import { bump } from './logger.ts';
import {
  NO_CHANGES,
  type PolicyReview,
  policyChanged,
  policyChanges,
  retryReason,
  reviewContext,
  reviewLines,
  storeRefreshPolicy,
  writeReview,
} from './refresh-review.ts';
import { decidedUnder, sendTasks } from './send-tasks.ts';
import { forgetSitemaps } from './trap-gate.ts';

export interface RefreshSummary {
  due: number;
  requeued: number;
  deleted: number;
  buckets: number;
}

const CURSOR_KEY = 'refresh-cursor';
/**
 * A cursor at most this far ahead of the clock was written by an earlier run of the same cycle:
 * `trawl refresh --now T` interrupted and run again starts its clock at T a few seconds later.
 */
const RESUMED_AHEAD_MS = 3_600_000;
/** Parallel manifest reads and deletions: the days are independent. */
const QUERY_CONCURRENCY = 16;

/** What one cycle would do to a URL (`trawl refresh --dry-run`). */
export interface PlannedAction {
  url: string;
  action: 'refresh' | 'delete' | 'forget';
  reason: string;
}

/**
 * One cycle's plan, read only: the due URLs and what the cycle would do to each before fetching
 * (a refresh can still end in a deletion when the server answers 404 or keeps failing).
 */
export async function planRefreshCycle(deps: StageDeps): Promise<PlannedAction[]> {
  const { due, decider, starts, orphanBefore, review, policy, changes, config, hints, seeded } =
    await findDue(deps);
  const early = new Set(review?.due.map((r) => r.url));
  const unknown: PlannedAction[] = [];
  if (policy) {
    const tasks = startTasks(config, decider);
    const known = await deps.urls.getMany(tasks.map((t) => t.url));
    for (const t of tasks)
      if (!known.has(t.url))
        unknown.push({
          url: t.url,
          action: 'refresh',
          reason: 'start URL not crawled yet (refresh policy changed)',
        });
  }
  const planned = due.map((item): PlannedAction => {
    const isStart = starts.has(item.url) || item.kind === 'sitemap';
    const d = decider.decide(item.url, { depth: item.depth ?? 0, isStart });
    const action = item.docBulk ? 'delete' : 'forget';
    if (!d.accepted) return { url: item.url, action, reason: `out-of-scope: ${d.reason}` };
    const renamed = renormalizedReason(item, d.normalized, changes.renormalized);
    if (renamed) return { url: item.url, action, reason: renamed };
    const orphan = orphanReason(item, seeded.has(item.url), orphanBefore);
    if (orphan) return { url: item.url, action, reason: orphan };
    // The cycle deletes the document and fetches the page again (its links, its next state).
    if (item.docBulk && !d.index)
      return { url: item.url, action: 'delete', reason: `not-indexed: ${d.reason} (then fetched again)` };
    const since = `due since ${item.nextRefreshAt ?? '?'}`;
    const retried = retryReason(item, d.index, changes);
    const whys = [
      ...(changes.widened && d.follow ? [`${changes.widened}; links read again`] : []),
      ...(changes.redocument && madeDocuments(item) ? [`${changes.redocument}; document made again`] : []),
      ...(retried ? [`${retried}; skipped URL tried again`] : []),
    ];
    if (whys.length === 0 && changes.described) whys.push(changes.described);
    const hint = hints.get(item.url);
    const why =
      whys.length > 0
        ? `refresh policy changed: ${whys.join('; ')}`
        : policy
          ? 'refresh policy changed'
          : `listed as changed at ${hint?.changedAt ?? '?'} by ${hint?.sitemap ?? 'a sitemap'}`;
    return {
      url: item.url,
      action: 'refresh',
      reason: early.has(item.url) ? `${since} (${why})` : since,
    };
  });
  return [...planned, ...unknown];
}

/** The cycle's window and its due URLs (reads only). */
async function findDue(deps: StageDeps) {
  const config = await deps.loadConfig();
  const decider = createUrlDecider(config);
  const now = deps.now();
  const until = new Date(now).toISOString();
  const cursor = await deps.hosts.getValue(CURSOR_KEY);
  const kept = keptCursor(cursor, now);
  // Without a cursor kept, the due lines from the oldest day any URL is due, and every hint.
  const from = kept ?? (await oldestDueDay(deps, now));
  const hintsFrom = kept ?? new Date(0).toISOString();
  // From a cursor still ahead (a resumed cycle), nothing is due: the earlier run queued it all.
  const buckets = from <= until ? refreshBuckets(Date.parse(from), now) : [];
  const lines = (
    await mapLimit(buckets, QUERY_CONCURRENCY, (b) => dueLines(deps.store, b, from, until))
  ).flat();
  const items = await deps.urls.getMany(lines.map((l) => l.url));
  const due = dueStates(lines, items);
  const starts = new Set(startUrlsOf(config, decider));
  // What the config names is never an orphan; a sitemap it does not (an index's child, a robots.txt
  // line) is one once nothing lists it, as a page is: a retired sitemap kept its pages for good.
  const seeded = new Set([...starts, ...sitemapsOf(config, decider)]);
  // A changed scope or refresh time reaches the pages due later now (refresh-review.ts).
  // A widened one has every followed page fetched whole, for the links it now admits. So do the
  // dates sitemaps give known pages (change-hints.ts): one fetched before its date is due now.
  let review: PolicyReview | null = null;
  let changes = NO_CHANGES;
  const hints =
    hintsFrom <= until ? await readChangeHints(deps, hintsFrom, until) : new Map<string, ChangeHint>();
  const policy = from <= until && (await policyChanged(deps, config));
  if (policy || hints.size > 0) {
    if (policy) changes = await policyChanges(deps, config);
    const ctx = reviewContext(config, decider, starts, now, now, policy ? changes : null, hints);
    review = await reviewLines(deps, ctx, dueStates);
    const inWindow = new Set(due.map((d) => d.url));
    due.push(...review.due.filter((r) => !inWindow.has(r.url)));
  }
  const grace = orphanGraceMs(config);
  // A cycle long after the last one (a stack down, a schedule paused, `trawl refresh` days on) does
  // not count the time no cycle ran: no page was read then, so no link could stamp its target.
  // A linked page's stamp is at most half the grace older than the last cycle (its linker is read
  // whole once a quarter of the grace, and stamps it if its stamp is a quarter old), so only a
  // stamp older than that is an orphan's. Until 2026-11-28 a cycle more than the grace after the
  // last deleted every linked page as an orphan before it read the pages that link to them (and
  // indexed them again as new).
  const last = cursor === null ? Number.NaN : Date.parse(cursor);
  const orphanBefore =
    grace === null
      ? null
      : new Date(Number.isFinite(last) ? Math.min(now - grace, last - grace / 2) : now - grace).toISOString();
  // With discovery off no page's links are read (a whole fetch would buy nothing): conditional
  // GETs throughout. Until 2026-11-28 every page was fetched whole every cycle then.
  const linksBefore = changes.widened
    ? until
    : grace === null || !config.discovery
      ? null
      : new Date(now - grace / 4).toISOString();
  return {
    due,
    decider,
    starts,
    until,
    buckets,
    config,
    orphanBefore,
    linksBefore,
    from,
    review,
    policy,
    changes,
    hints,
    seeded,
  };
}

/**
 * The cursor (the end of the last cycle's window) where the cycle's window starts, or null. A
 * cursor a little ahead of the clock is a resumed cycle's and is kept: starting further back
 * instead found every URL the interrupted run had already refreshed due again, by its older line
 * (kill -9 of `trawl refresh --now T`, then the same command: 400 pages fetched 2–3 times). One
 * far ahead (a `refresh --now` days in the future, then the real schedule) is not kept.
 */
function keptCursor(cursor: string | null, now: number): string | null {
  const ahead = cursor ? Date.parse(cursor) - now : Number.NaN;
  return cursor && ahead <= RESUMED_AHEAD_MS ? cursor : null;
}

/**
 * Where a window with no cursor kept starts: the oldest day any URL is due (the state manifests'
 * first day folder, `refresh/YYYY-MM-DD/`: one LIST), else now. It looked 90 days back only, so
 * a crawl refreshed first four months after it ran (or the README's `refresh --now 2030-…`)
 * refreshed nothing, and its cursor then passed its pages for good (helper-63).
 */
async function oldestDueDay(deps: StageDeps, now: number): Promise<string> {
  for await (const key of deps.store.list(PREFIXES.refresh)) {
    const day = /^(\d{4}-\d{2}-\d{2})\//.exec(key.slice(PREFIXES.refresh.length))?.[1];
    if (day) return new Date(Math.min(Date.parse(`${day}T00:00:00.000Z`), now)).toISOString();
    break;
  }
  return new Date(now).toISOString();
}

/** Runs one refresh cycle. */
export async function runRefreshStage(deps: StageDeps): Promise<RefreshSummary> {
  const found = await findDue(deps);
  const { due, decider, starts, until, buckets, config, orphanBefore, linksBefore, from, review, policy } =
    found;
  const changes: ChangeRecord[] = [];
  const docRemoved: UrlItem[] = [];
  const deferred: (() => Promise<unknown>)[] = [];
  const out: RefreshOutput = {
    changes,
    docRemoved,
    deferred,
    at: until,
    orphanBefore,
    seeded: found.seeded,
    linksBefore,
    wholeDocs: found.changes.redocument !== null,
    renormalized: found.changes.renormalized,
    again: [],
  };
  const results = await mapLimit(due, QUERY_CONCURRENCY, (item) =>
    refreshOne(deps, decider, item, starts, out),
  );
  const tasks = results.filter((t): t is UrlTask => t !== null);
  const requeued = tasks.length;
  tasks.push(...out.again);
  // The cycle that applies a changed config seeds the start URLs the crawl does not know yet
  // (added to the config, or in the form a changed URL identity gives), as `trawl crawl` would.
  if (policy) tasks.push(...(await deps.urls.claim(startTasks(config, decider), `refresh:${until}`, until)));
  await sendTasks(deps, decidedUnder(config, tasks));
  if (changes.length > 0) {
    // The same feed as the index stage's: the S3 log, and the change event when a bus is configured.
    await deps.store.putLines(KEYS.changes(until.replace(/[:.]/g, '-'), randomUUID()), changes);
    await publishChanges(deps, changes, {});
    // Deletions the cycle decides itself (scope, noIndex) reach the search sink too.
    await sinkChanges(deps.store, config, changes);
    // The run's summary counts them with the index stage's (which it used to leave out).
    bump('documents:deleted', changes.filter((c) => c.type === 'delete').length);
  }
  // Only now do the URLs lose their documents: a cycle that failed before (the search engine
  // down) is run again and finds them still there, so their deletions are made again. Forgotten
  // first, they had nothing left to delete, and the search index kept them for good.
  // A URL kept in a line loses its document by a newer line (its refetch writes the next one).
  if (docRemoved.length > 0) await writeStateLines(deps.store, docRemoved, until);
  // A refresh task can be lost on its way (its fetch or index batch dead-lettered and never
  // redriven, or redriven after a later cycle: its line then falls behind the cursor). The line
  // this cycle read is behind the cursor already, so such a URL was never refreshed again: stale
  // for good, a page that now fails kept in the index. A copy of its state due at its next
  // refresh time keeps it in the schedule; the refetch's own line (a later fetch) supersedes it.
  const keep = pendingCopies(tasks, until, parseDuration(config.refresh.maxAge), boundsOf(config));
  if (keep.length > 0) await writeStateLines(deps.store, keep, until);
  await mapLimit(deferred, QUERY_CONCURRENCY, (write) => write());
  if (out.forgot) await noteForgotten(deps);
  // The pages a changed policy made due are queued: their old lines can be superseded now.
  if (review) await writeReview(deps, review, until);
  if (policy) await storeRefreshPolicy(deps, config);
  // A resumed cycle leaves the cursor where it is: the window's end never moves back.
  await deps.hosts.putValue(CURSOR_KEY, from > until ? from : until);
  if (tasks.length > 0) await deps.kickFetch();
  return {
    due: due.length,
    requeued,
    deleted: due.length - requeued,
    buckets: buckets.length,
  };
}

/**
 * For each refresh task of a URL whose state is a manifest line, that state due again at its next
 * refresh time: on the grid of its due time, as its refetch's line will be (index-plan.ts), so the
 * two share a day's manifest and the refetch's line, the newer, is the one read. Not for a URL
 * with adaptive refresh bounds: its refetch halves or doubles its interval, its line lands on
 * another day, and the copy, read alone there, refreshed static pages at their old interval.
 */
function pendingCopies(
  tasks: UrlTask[],
  until: string,
  maxAgeMs: number,
  bounds: (url: string) => unknown,
): UrlItem[] {
  const at = Date.parse(until);
  const copies: UrlItem[] = [];
  for (const t of tasks) {
    const prev = t.prev;
    if (t.queue !== 'refresh' || prev?.stored !== 'line' || bounds(t.url) !== null) continue;
    const due = prev.nextRefreshAt ? Date.parse(prev.nextRefreshAt) : undefined;
    const { stored: _stored, ...state } = prev;
    copies.push({ ...state, nextRefreshAt: nextRefreshAt(at, maxAgeMs, due) });
  }
  return copies;
}

/**
 * The current state of each due URL: a line is current while its URL is still known and, for a
 * URL kept in the table, while the item still carries the line's time (re-fetched or forgotten
 * URLs drop out). A URL on two days' lines is refreshed once, from its newest line.
 */
function dueStates(lines: UrlItem[], items: Map<string, UrlItem>): UrlItem[] {
  const newest = new Map<string, UrlItem>();
  for (const l of lines) keepNewest(newest, l);
  const due: UrlItem[] = [];
  for (const line of newest.values()) {
    const item = items.get(line.url);
    const state = resolveState(item, line);
    if (!item || !state) continue;
    // The reach stamp is the table item's (a line's copy is as old as the fetch that wrote it).
    if (isTableKept(item) ? item.nextRefreshAt === line.nextRefreshAt : state.stored === 'line')
      due.push({ ...state, reachedAt: reachedAt(item) });
  }
  return due;
}

interface RefreshOutput {
  changes: ChangeRecord[];
  docRemoved: UrlItem[];
  /** table writes that drop a document: run once the feed and the search sink have its deletion */
  deferred: (() => Promise<unknown>)[];
  at: string;
  /** now − refresh.orphanGrace; null when orphans are kept */
  orphanBefore: string | null;
  /** the start URLs and sitemaps the config names: never orphans */
  seeded: Set<string>;
  /** now − a quarter of the grace: a page whose links were read before then is fetched whole */
  linksBefore: string | null;
  /** the document policy changed: documents are made again from whole fetches */
  wholeDocs: boolean;
  /** the URL identity changed (policyChanges) */
  renormalized: boolean;
  /** duplicates that take over from URLs the cycle forgets, fetched again to be indexed */
  again: UrlTask[];
  /** the cycle forgets URLs (forget-epoch.ts) */
  forgot?: boolean;
}

/** A URL the config no longer normalizes to itself, after a change of identity: gone. */
function renormalizedReason(item: UrlItem, normalized: string | null, renormalized: boolean): string | null {
  if (!renormalized || normalized === item.url || item.kind === 'sitemap') return null;
  return `out-of-scope: the URL is now ${normalized ?? 'malformed'}`;
}

async function refreshOne(
  deps: StageDeps,
  decider: UrlDecider,
  item: UrlItem,
  starts: Set<string>,
  out: RefreshOutput,
): Promise<UrlTask | null> {
  const { changes, at } = out;
  // Sitemaps and feeds are read like start URLs (seeded, or listed by a sitemap index): `.xml` is
  // an ignored extension for links, which must not make a refreshed sitemap "out of scope".
  const isStart = starts.has(item.url) || item.kind === 'sitemap';
  const d = decider.decide(item.url, { depth: item.depth ?? 0, isStart });
  // Seed 004: a document whose link no longer applies after a config change is removed, and so
  // is one that no page links to and no sitemap lists any more (its "removed pages").
  const gone = d.accepted
    ? (renormalizedReason(item, d.normalized, out.renormalized) ??
      orphanReason(item, out.seeded.has(item.url), out.orphanBefore))
    : `out-of-scope: ${d.reason}`;
  if (gone) {
    out.forgot = true;
    out.deferred.push(async () => {
      await deps.urls.forget(item.url);
      // An index's retired child gives its place in the site's limits.sitemapsPerSite back.
      if (item.kind === 'sitemap') await forgetSitemaps(deps, [item.url]);
    });
    // Its content's duplicate registry entry lets it go: a duplicate in line takes its place.
    const successor = await releaseForgotten(deps, item);
    if (successor) out.again.push(successor);
    if (item.docBulk)
      changes.push({ type: 'delete', url: item.url, at, reason: gone, version: Date.parse(at) });
    // An archive's elements go with it (compound-elements.ts): they have no refresh time of their own.
    for (const el of await elementsOfGone(deps, item)) {
      out.deferred.push(() => deps.urls.forget(el.url));
      if (el.docBulk)
        changes.push({
          type: 'delete',
          url: el.url,
          at,
          reason: `${gone} (archive ${item.url})`,
          version: Date.parse(at),
        });
    }
    if (wasArchive(item)) out.deferred.push(() => putElementList(deps, item.url, []));
    return null;
  }
  let prev = item;
  if (item.docBulk && !d.index) {
    // A rule now says noIndex: the document goes at once; a 304 must not keep it (seed 004).
    prev = Object.fromEntries(
      Object.entries(item).filter(([k]) => !DOC_FIELDS.includes(k)),
    ) as unknown as UrlItem;
    if (item.stored === 'line') out.docRemoved.push(prev);
    else out.deferred.push(() => deps.urls.removeFields(item.url, DOC_FIELDS));
    changes.push({
      type: 'delete',
      url: item.url,
      at,
      reason: `not-indexed: ${d.reason}`,
      version: Date.parse(at),
    });
  }
  // An archive's elements are its documents: it is refreshed conditionally too (a 304 keeps them).
  const hasDoc = madeDocuments(prev);
  const lastModified =
    item.lastModified ?? (item.lastFetched ? new Date(item.lastFetched).toUTCString() : undefined);
  return {
    url: item.url,
    depth: item.depth ?? 0,
    queue: 'refresh',
    // A sitemap or feed is read again as one (its entries are found again); it is never indexed itself.
    index: item.kind === 'sitemap' ? false : d.index,
    follow: d.follow,
    priority: d.priorityShift,
    kind: item.kind ?? 'page',
    ...(item.redirectChain?.length ? { redirectChain: item.redirectChain } : {}),
    ...(item.foundOn ? { foundOn: item.foundOn } : {}),
    ...(d.source ? { source: d.source } : {}),
    ...(d.addMeta.length ? { addMeta: d.addMeta } : {}),
    // Seed 004: If-Modified-Since with the recorded time; the ETag too when the server gave one.
    // With orphans on, a page whose links are followed and were last read a quarter of the grace
    // ago is fetched whole (a 304 names no links); in between, conditional GETs as usual.
    ...(hasDoc &&
    !out.wholeDocs &&
    !(out.linksBefore && d.follow && (item.linksReadAt ?? '') < out.linksBefore)
      ? { conditional: { lastModified, etag: item.etag ?? undefined } }
      : {}),
    prev,
  };
}
