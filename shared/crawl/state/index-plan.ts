/**
 * What the index stage does with one outcome, decided without I/O: the state to store, whether
 * a document is written, and whether a deletion order goes to the change feed (seeds 001, 004).
 */
import type { CrawlConfig } from '../../config.ts';
import type { PageOutcome, UrlItem } from '../../types.ts';
import { compileRules, firstMatchingRule, type RefreshBounds, urlParts } from '../rules/rules.ts';
import { normalizeUrl } from '../url/normalize-url.ts';
import { parseDuration } from './duration.ts';
import { adaptInterval, nextRefreshAt, type RefetchChange } from './scheduling.ts';

export interface OutcomePlan {
  outcome: PageOutcome;
  writeDoc: boolean;
  set: Partial<UrlItem>;
  remove: string[];
  /** delete the URL's state: it will not be crawled again unless a new link to it is found (seed 001) */
  forget: boolean;
  deleteReason?: string;
  stat: string;
}

export interface PlanContext {
  config: CrawlConfig;
  existing: Map<string, UrlItem>;
  now: number;
  maxAgeMs: number;
  /** adaptive refresh bounds of a URL (its first matching rule's, else the config's); null: fixed maxAge */
  bounds(url: string): RefreshBounds | null;
}

const boundsCache = new WeakMap<CrawlConfig, (url: string) => RefreshBounds | null>();
const sitemapsCache = new WeakMap<CrawlConfig, Set<string>>();

/** Whether the config's `sitemaps` name the URL (normalized as the seed keys them). */
function configuredSitemap(config: CrawlConfig, url: string): boolean {
  let named = sitemapsCache.get(config);
  if (!named) {
    named = new Set(config.sitemaps.map((s) => normalizeUrl(s, undefined, config.scope) ?? s));
    sitemapsCache.set(config, named);
  }
  return named.has(url);
}

/** A config's bound lookup, compiled once per config object (its rules are compiled anyway). */
export function boundsOf(config: CrawlConfig): (url: string) => RefreshBounds | null {
  let lookup = boundsCache.get(config);
  if (lookup) return lookup;
  const rules = compileRules(config.rules);
  const { adaptive } = config.refresh;
  const fallback = adaptive
    ? { minMs: parseDuration(adaptive.min), maxMs: parseDuration(adaptive.max) }
    : null;
  lookup = (url) => {
    const parts = urlParts(url);
    const rule = parts ? firstMatchingRule(rules, parts) : undefined;
    return rule?.actions.refresh ?? fallback;
  };
  boundsCache.set(config, lookup);
  return lookup;
}

/** The context both the extract stage (which documents to write) and the index stage plan with. */
export function planContext(config: CrawlConfig, existing: Map<string, UrlItem>, now: number): PlanContext {
  return { config, existing, now, maxAgeMs: parseDuration(config.refresh.maxAge), bounds: boundsOf(config) };
}

/** The document fields of a URL item: removed together when its document is deleted. */
export const DOC_FIELDS = ['docBulk', 'docLine', 'hash', 'indexedAt'];
/** A URL whose fetch failed temporarily is tried again after this long, doubled at each failure in a row. */
const TEMPORARY_RETRY_MS = 3_600_000;

function refreshAt(iso: string): Partial<UrlItem> {
  return { nextRefreshAt: iso };
}

function common(o: PageOutcome, ctx: PlanContext): Partial<UrlItem> {
  return {
    state: o.state,
    httpStatus: o.httpStatus || null,
    lastFetched: o.fetchedAt,
    depth: o.task.depth,
    queue: o.task.queue === 'refresh' ? (ctx.existing.get(o.url)?.queue ?? 'refresh') : o.task.queue,
    index: o.task.index,
    follow: o.task.follow,
    etag: o.etag ?? null,
    lastModified: o.lastModified ?? null,
    note: o.note ?? null,
    errorKind: null,
    errorCode: null,
    temporaryErrors: 0,
    ...(ctx.existing.get(o.url)?.failingSince ? { failingSince: null } : {}),
    ...(o.task.kind ? { kind: o.task.kind } : {}),
    // A redirect target's chain: refreshed, its redirects still count against fetch.maxRedirects.
    ...(o.task.redirectChain?.length ? { redirectChain: o.task.redirectChain } : {}),
    // Where it was found: a refresh's task carries it on from the state (refresh-stage.ts).
    ...(o.task.foundOn ? { foundOn: o.task.foundOn } : {}),
    ...canonicalIgnored(o, ctx.existing.get(o.url)),
    // Orphans: a page's links were read (and their targets stamped) by a whole fetch of it.
    ...(o.task.follow && !o.notModified && o.state !== 'error' ? { linksReadAt: o.fetchedAt } : {}),
    ...schedule(o, ctx, 'unknown'),
  };
}

/**
 * A declined canonical (page-outcome.ts canonicalFallback) is kept while fetches find the page
 * naming it (a 304 reads nothing, so keeps it too), and dropped by one that does not.
 */
function canonicalIgnored(o: PageOutcome, prev: UrlItem | undefined): Partial<UrlItem> {
  if (o.canonicalIgnored) return { canonicalIgnored: o.canonicalIgnored };
  return prev?.canonicalIgnored && !o.notModified ? { canonicalIgnored: null } : {};
}

/**
 * The next refresh time: `maxAge` after the fetch, or with adaptive bounds the URL's interval,
 * halved or doubled by what this fetch found (scheduling.ts), kept on the grid of its due time.
 */
function schedule(o: PageOutcome, ctx: PlanContext, change: RefetchChange): Partial<UrlItem> {
  // Elements of a compound file have no URL of their own to fetch (SMILA webExtractor): refreshing
  // the archive derives them again, so they get no refresh time of their own.
  if (o.element) return {};
  const fetched = Date.parse(o.fetchedAt);
  const at = Number.isNaN(fetched) ? ctx.now : fetched;
  const bounds = ctx.bounds(o.url);
  if (!bounds) return refreshAt(nextRefreshAt(at, ctx.maxAgeMs, dueAt(o, ctx)));
  const previous = ctx.existing.get(o.url)?.refreshInterval;
  const interval = adaptInterval(previous, ctx.maxAgeMs, bounds, change);
  return { ...refreshAt(nextRefreshAt(at, interval, dueAt(o, ctx))), refreshInterval: interval };
}

/** The due time a refresh was fetched for: the next one stays on that grid. */
function dueAt(o: PageOutcome, ctx: PlanContext): number | undefined {
  // The due time the task carried: a second fetch of one refresh task (the first one's run was
  // killed after its states were written) finds the state already moved on, and put the URL a
  // whole maxAge further (two maxAges after its last refresh).
  const due =
    o.task.queue === 'refresh'
      ? (o.task.prev?.nextRefreshAt ?? ctx.existing.get(o.url)?.nextRefreshAt)
      : undefined;
  return due ? Date.parse(due) : undefined;
}

/** The states the outcomes' tasks carried (refresh, seed); compound elements have none of their own. */
export function previousFromTasks(outcomes: PageOutcome[]): Map<string, UrlItem> {
  const out = new Map<string, UrlItem>();
  for (const o of outcomes) if (o.task.prev && !o.element) out.set(o.url, o.task.prev);
  return out;
}

/** Plans the writes for one outcome. */
export function planOutcome(o: PageOutcome, ctx: PlanContext): OutcomePlan {
  const prev = ctx.existing.get(o.url);
  const hadDoc = Boolean(prev?.docBulk);
  const plan: OutcomePlan = {
    outcome: o,
    writeDoc: false,
    set: common(o, ctx),
    remove: ['claimedBy'],
    forget: false,
    stat: o.state,
  };
  if (o.state === 'error') return planError(o, ctx, plan, prev, hadDoc);
  if (o.state !== 'indexed') {
    if (hadDoc) {
      plan.remove.push(...DOC_FIELDS);
      // Out of scope under a changed config: the reason the refresh cycle gives the same deletion.
      plan.deleteReason = o.note?.startsWith('out-of-scope: ')
        ? o.note
        : `${o.state}: ${o.note ?? ''}`.trim();
    }
    return plan;
  }
  const change = refetchChange(o, prev, hadDoc);
  if (change !== 'unknown') plan.set = { ...plan.set, ...schedule(o, ctx, change) };
  if (o.notModified) {
    // Seed 004: 304 to If-Modified-Since → skip reindexing, keep the document.
    plan.set = {
      ...plan.set,
      etag: o.etag ?? prev?.etag ?? null,
      lastModified: o.lastModified ?? prev?.lastModified ?? null,
      // What the page was found to be stays true of it (an archive's "archive with N element(s)").
      // Not an error's: a 304 after a 503 kept "HTTP 503 Service Unavailable" as the note.
      note: o.note ?? (prev?.state === 'error' ? null : (prev?.note ?? null)),
    };
    if (!hadDoc) plan.set.state = prev?.state ?? 'followed';
    plan.stat = 'not-modified';
    return plan;
  }
  const hash = o.docRef?.hash ?? o.doc?.hash ?? null;
  if (hadDoc && prev?.hash === hash) {
    plan.stat = 'unchanged';
    return plan; // seed 003 delta check: same hash, no new document write
  }
  plan.writeDoc = true;
  plan.set = { ...plan.set, hash, indexedAt: o.docRef?.indexedAt ?? o.doc?.indexedAt ?? null };
  plan.stat = hadDoc ? 'reindexed' : 'indexed';
  return plan;
}

/** What a fetch of an indexed page found, compared with the previous one (only a refetch can tell). */
function refetchChange(o: PageOutcome, prev: UrlItem | undefined, hadDoc: boolean): RefetchChange {
  if (!prev?.lastFetched) return 'unknown';
  if (o.notModified) return 'unchanged';
  const hash = o.docRef?.hash ?? o.doc?.hash ?? null;
  if (!hadDoc || !hash) return 'unknown';
  return prev.hash === hash ? 'unchanged' : 'changed';
}

function planError(
  o: PageOutcome,
  ctx: PlanContext,
  plan: OutcomePlan,
  prev: UrlItem | undefined,
  hadDoc: boolean,
) {
  const error = o.error ?? { kind: 'permanent' as const, code: 'unknown', message: '' };
  const refresh = o.task.queue === 'refresh';
  plan.stat = `error:${error.kind}`;
  // Temporary failures are counted per fetch that failed after its quick retries (one a refresh
  // cycle), not per attempt: within one cycle the retries span seconds, and a site down for 15 s
  // during a refresh used to lose its whole index.
  const temporaryErrors = error.kind === 'temporary' ? (prev?.temporaryErrors ?? 0) + 1 : 0;
  // More than maxTemporaryErrors failures in a row, over at least maxAge: the retries back off
  // (1 h, 2 h, 4 h…), and on the count alone an outage of 7 hours (a night's maintenance, a
  // host down) deleted every document of a site whatever its maxAge. A state from before
  // failingSince was kept counts by the number alone.
  const failingSince =
    error.kind !== 'temporary' ? null : prev?.temporaryErrors ? (prev.failingSince ?? null) : o.fetchedAt;
  const failingFor = failingSince ? ctx.now - Date.parse(failingSince) : Number.POSITIVE_INFINITY;
  const tooMany = temporaryErrors > ctx.config.refresh.maxTemporaryErrors && !(failingFor < ctx.maxAgeMs);
  // Seed 001: "the error status is remembered for each URL" and "documents in error are refreshed
  // like other documents": a URL already in error that a refresh finds failing permanently again,
  // or too many temporary failures in a row, is forgotten (its document deleted). A first permanent
  // error deletes the document at once but keeps the URL, tried again after maxAge: forgotten at
  // once, a page behind one 502 of a load balancer never came back while the page linking to it
  // answered 304 (its links not read again). A start URL is never forgotten: the config names it.
  // A sitemap the config does not name (an index's child, a robots.txt line) is none: one that
  // fails for good is forgotten as a page is (a 404 child used to be fetched every cycle for ever).
  const start =
    o.task.depth === 0 &&
    (prev?.queue ?? o.task.queue) === 'user' &&
    (o.task.kind !== 'sitemap' || configuredSitemap(ctx.config, o.url));
  // An element of a compound file has no URL of its own to try again: it goes with its archive.
  const failedAgain =
    refresh && error.kind === 'permanent' && (prev?.state === 'error' || o.element === true);
  if ((failedAgain || tooMany) && !start) {
    plan.forget = true;
    if (hadDoc)
      plan.deleteReason = `${error.kind === 'permanent' ? 'permanent-error' : 'temporary-errors'}: ${error.code}${o.httpStatus ? ` (HTTP ${o.httpStatus})` : ''}`;
    return plan;
  }
  // Seed 001: "documents in error are refreshed like other documents". A temporary error keeps the
  // document and is tried again after an hour, two, four… (within maxAge).
  const retryAt =
    error.kind === 'temporary'
      ? ctx.now + Math.min(ctx.maxAgeMs, TEMPORARY_RETRY_MS * 2 ** (temporaryErrors - 1))
      : ctx.now + ctx.maxAgeMs;
  plan.set = {
    ...plan.set,
    state: 'error',
    errorKind: error.kind,
    errorCode: error.code,
    note: error.message,
    temporaryErrors,
    ...(failingSince ? { failingSince } : prev?.failingSince ? { failingSince: null } : {}),
    ...refreshAt(new Date(retryAt).toISOString()),
    // The kept document's validators: its next refresh is still conditional.
    ...(hadDoc ? { etag: prev?.etag ?? null, lastModified: prev?.lastModified ?? null } : {}),
  };
  if (hadDoc && (error.kind === 'permanent' || tooMany)) {
    // Seed 001: a permanent error on an indexed URL sends its deletion order at once (a start URL
    // past maxTemporaryErrors too: its document goes, the URL stays).
    plan.remove.push(...DOC_FIELDS);
    plan.deleteReason = `${error.kind === 'permanent' ? 'permanent-error' : 'temporary-errors'}: ${error.code}${o.httpStatus ? ` (HTTP ${o.httpStatus})` : ''}`;
  }
  return plan;
}

/**
 * One outcome per URL: the newest fetch. Every plan is made against the states before the batch,
 * so two fetches of one URL in a batch (a frontier message whose delete was lost, fetched again
 * while the first fetch's pages wait) would each look new and each give an upsert.
 */
export function newestPerUrl(outcomes: PageOutcome[]): PageOutcome[] {
  const newest = new Map<string, PageOutcome>();
  for (const o of outcomes) {
    const seen = newest.get(o.url);
    if (!seen || o.fetchedAt > seen.fetchedAt) newest.set(o.url, o);
  }
  return outcomes.filter((o) => newest.get(o.url) === o);
}
