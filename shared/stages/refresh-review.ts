/**
 * A changed refresh policy takes effect at the next cycle, not at each page's old due time.
 *
 * A page's next refresh time is fixed when it is fetched (a line in its due day's manifest,
 * refresh-manifest.ts). Lowering `refresh.maxAge` (or a rule's refresh bounds) or narrowing the
 * scope would otherwise reach a page only at that time: a page fetched under a 30-day maxAge
 * stays 30 days old after the maxAge is cut to 2 days, and a path taken out of scope stays in
 * the search index until its pages come due.
 *
 * The policy is a fingerprint of the config keys that decide scope and refresh times. The seed
 * stage records it when the crawl starts; a refresh cycle that finds another one reviews every
 * future line once, under the current config:
 * - a page the scope now rejects, or a rule now keeps out of the index, is due now (the cycle
 *   deletes it, as it does at a due time);
 * - a page whose interval under the current config ended is due now;
 * - a page whose interval ends earlier than its line says moves to that earlier time;
 * - a URL fetched and skipped is due now when the change may lift its reason (retryReason).
 * A line that moves leaves a marker behind: a copy of itself, written later and flagged `moved`,
 * which supersedes it in its old day's folder (`dueLines` skips a URL whose newest line there is
 * a marker), so the old time does not refresh the page a second time.
 *
 * URLs whose state is kept in the table (errors, start URLs, sitemaps) move by a conditional
 * update of their item (a write unit each; they are few).
 *
 * The same review serves the dates sitemaps give known pages (change-hints.ts): a line of a
 * hinted URL fetched before its date is due now, under an unchanged policy too.
 *
 * Cost: a review reads every manifest of the future days once (S3 GETs, ½ read unit per
 * candidate URL), and only when the policy changed or a sitemap dated a known page.
 */
import { createHash } from 'node:crypto';
import { writeStateLines } from '../aws/refresh-manifest.ts';
import type { CrawlConfig } from '../config.ts';
import { CANONICAL_NOTE, honorsCanonical } from '../crawl/page/page-kit.ts';
import type { UrlDecider } from '../crawl/rules/decide.ts';
import {
  documentChange,
  identityChanged,
  type LinkPolicy,
  linkPolicy,
  linkPolicyChanges,
  storedDocumentPolicy,
  storedLinkPolicy,
  wideningReason,
} from '../crawl/rules/link-policy.ts';
import { type PlanContext, planContext } from '../crawl/state/index-plan.ts';
import { refreshBucket, refreshCycleMs } from '../crawl/state/scheduling.ts';
import { isNewerLine, keepNewest } from '../crawl/state/url-state.ts';
import { KEYS, PREFIXES } from '../layout.ts';
import type { ChangeHint, UrlItem } from '../types.ts';
import { madeDocuments } from './compound-elements.ts';
import type { StageDeps } from './deps.ts';

const POLICY_KEY = 'refresh-policy';
/** The link policy (link-policy.ts) the crawl's pages were last read under. */
const LINKS_KEY = 'link-policy';
/** The document policy (link-policy.ts) the crawl's documents were made under. */
const DOCS_KEY = 'document-policy';

/** The fingerprint of what decides a URL's scope and refresh time in `config`. */
export function refreshPolicy(config: CrawlConfig): string {
  return fingerprint(config, linkPolicy(config), storedDocumentPolicy(config));
}

function fingerprint(config: CrawlConfig, links: LinkPolicy, documents: string): string {
  const { startUrls, sitemaps, scope, rules, domains, limits, refresh, discovery } = config;
  const parts = {
    startUrls,
    sitemaps,
    scope,
    rules,
    domains,
    ruleCount: limits.ruleCount,
    maxAge: refresh.maxAge,
    adaptive: refresh.adaptive,
    discovery,
    reading: links.reading,
    documents,
  };
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

/**
 * The hosts-table values a crawl's policy is recorded in, each computed once: the link and
 * document policies first, the fingerprint last (a run stopped between them finds the policy
 * changed and reviews again).
 */
function policyValues(config: CrawlConfig): [key: string, value: string][] {
  const links = linkPolicy(config);
  const documents = storedDocumentPolicy(config);
  return [
    [LINKS_KEY, storedLinkPolicy(links)],
    [DOCS_KEY, documents],
    [POLICY_KEY, fingerprint(config, links, documents)],
  ];
}

/** Records the crawl's policy when none is recorded yet (the seed stage, at a crawl's start). */
export async function recordRefreshPolicy(deps: StageDeps, config: CrawlConfig): Promise<void> {
  for (const [key, value] of policyValues(config))
    if ((await deps.hosts.getValue(key)) === null) await deps.hosts.swapValue(key, null, value);
}

/** The policy the cycles have reviewed the lines under; none recorded counts as another one. */
export async function policyChanged(deps: Pick<StageDeps, 'hosts'>, config: CrawlConfig): Promise<boolean> {
  return (await deps.hosts.getValue(POLICY_KEY)) !== refreshPolicy(config);
}

/** Stores the current policy once a cycle has acted on its review. */
export async function storeRefreshPolicy(deps: StageDeps, config: CrawlConfig): Promise<void> {
  for (const [key, value] of policyValues(config)) await deps.hosts.putValue(key, value);
}

/** What a changed policy asks of the pages besides their scope and times. */
export interface PolicyChanges {
  /** why every followed page's links are read again (link-policy.ts wideningReason), or null */
  widened: string | null;
  /** why every document is made again from a whole fetch (documentChange), or null */
  redocument: string | null;
  /** the URL identity changed: a URL the config no longer normalizes to itself is gone */
  renormalized: boolean;
  /** the crawl recorded a link policy (one started before they were recorded did not) */
  recorded: boolean;
  /** what changed in the link policy, said (linkPolicyChanges), or null */
  described: string | null;
}

export const NO_CHANGES: PolicyChanges = {
  widened: null,
  redocument: null,
  described: null,
  renormalized: false,
  recorded: false,
};

/**
 * How the current config differs from the policies the crawl's pages were read under. A crawl
 * that recorded none (started by a Trawl before it did) reads nothing again: nothing says what
 * changed.
 */
export async function policyChanges(
  deps: Pick<StageDeps, 'hosts'>,
  config: CrawlConfig,
): Promise<PolicyChanges> {
  const [links, docs] = await Promise.all([deps.hosts.getValue(LINKS_KEY), deps.hosts.getValue(DOCS_KEY)]);
  const now = linkPolicy(config);
  return {
    widened: links === null ? null : wideningReason(links, now),
    redocument: docs === null ? null : documentChange(docs, config),
    renormalized: links !== null && identityChanged(links, now),
    recorded: links !== null,
    described: links === null ? null : linkPolicyChanges(links, now),
  };
}

/**
 * What `trawl crawl` says when the config changed since the crawl's pages were read: the crawl
 * applies it to new pages only, the next refresh cycle to the pages read before. Null: unchanged.
 */
export async function pendingPolicyChange(
  deps: Pick<StageDeps, 'hosts'>,
  config: CrawlConfig,
): Promise<string | null> {
  if (!(await policyChanged(deps, config))) return null;
  const c = await policyChanges(deps, config);
  // A crawl from before the link policy was recorded: its fingerprint took in more keys since,
  // and differs though its config may not.
  if (!c.recorded) return null;
  // What widens the link policy (or else what changed in it) and what changes documents, both: the
  // first alone hid the others (helper-47).
  const said = [c.widened ?? c.described, c.redocument].filter((s): s is string => s !== null);
  return said.length
    ? said.join('; ')
    : 'sitemaps, rules or refresh times (refresh.maxAge, refresh.adaptive) changed';
}

/** The states of pages whose links were read (or would have been, had a rule said follow). */
const LINKS_READ = new Set<string>(['indexed', 'followed', 'duplicate']);

/** What a review found: pages due now, and pages due earlier than their lines say. */
export interface PolicyReview {
  /** current states, due in this cycle (`nextRefreshAt`: the time the current config gives) */
  due: UrlItem[];
  /** line-kept states with their earlier time in `nextRefreshAt` */
  moved: UrlItem[];
  /** the lines `due` and `moved` came from, where a marker must supersede them */
  superseded: UrlItem[];
  /** table-kept states with their earlier time in `nextRefreshAt`, and the time their item holds */
  tableMoved: { state: UrlItem; from: string }[];
}

/** What the current config says of one future line: due now, due at an earlier time, or nothing. */
export type LineVerdict = { due: string } | { moveTo: string } | null;

export interface ReviewContext {
  decider: UrlDecider;
  /** normalized start URLs */
  starts: Set<string>;
  now: number;
  /** the cycle's window end */
  untilMs: number;
  /** maxAge and the refresh bounds of a URL under the current config */
  plan: PlanContext;
  /** how often the refresh cycle runs under the current config */
  cycleMs: number;
  /** what the changed policy asks of the pages besides scope and times */
  changes: PolicyChanges;
  /** whether the policy changed: without a change only the hints are judged */
  policy: boolean;
  /** known pages sitemaps list as changed (change-hints.ts), by URL */
  hints: Map<string, ChangeHint>;
  /** extract.honorCanonical holds (with discovery on): a page followed for its canonical stays so */
  honorCanonical: boolean;
}

/** The context a review judges lines in, compiled once. */
export function reviewContext(
  config: CrawlConfig,
  decider: UrlDecider,
  starts: Set<string>,
  now: number,
  untilMs: number,
  changes: PolicyChanges | null = NO_CHANGES,
  hints: Map<string, ChangeHint> = new Map(),
): ReviewContext {
  return {
    decider,
    starts,
    now,
    untilMs,
    plan: planContext(config, new Map(), now),
    cycleMs: refreshCycleMs(config),
    changes: changes ?? NO_CHANGES,
    policy: changes !== null,
    hints,
    honorCanonical: honorsCanonical(config),
  };
}

/**
 * Judges one future line: under the current config when the policy changed, and against the
 * date a sitemap gives its page (a line fetched before it is due now).
 */
export function judgeLine(line: UrlItem, ctx: ReviewContext): LineVerdict {
  const stored = Date.parse(line.nextRefreshAt ?? '');
  if (Number.isNaN(stored) || stored <= ctx.untilMs) return null;
  const verdict = ctx.policy ? judgePolicy(line, ctx, stored) : null;
  if (verdict && 'due' in verdict) return verdict;
  const hint = ctx.hints.get(line.url);
  if (hint && (line.lastFetched ?? '') < hint.changedAt) return { due: new Date(ctx.now).toISOString() };
  return verdict;
}

/**
 * Judges one line under the current config. A move must bring the time forward by more than
 * one refresh cycle: a few minutes' difference is not worth a marker.
 */
function judgePolicy(line: UrlItem, ctx: ReviewContext, stored: number): LineVerdict {
  const now = new Date(ctx.now).toISOString();
  const isStart = ctx.starts.has(line.url) || line.kind === 'sitemap';
  const d = ctx.decider.decide(line.url, { depth: line.depth ?? 0, isStart });
  if (!d.accepted || (line.docBulk && !d.index)) return { due: now };
  const { widened, redocument, renormalized } = ctx.changes;
  // URLs in a form the config no longer gives are gone; pages the cycle fetches whole: their
  // links, when the scope widened; their documents, when what makes them changed.
  if (renormalized && d.normalized !== line.url) return { due: now };
  if (widened && d.follow && (isStart || LINKS_READ.has(line.state))) return { due: now };
  // A duplicate too: folding turned off indexes it, and any other change may end the likeness.
  if (redocument && (madeDocuments(line) || line.state === 'duplicate')) return { due: now };
  // A page fetched for its links only that the config now indexes: a rule's noIndex dropped, or
  // extract.honorCanonical turned off for a page that deferred to its canonical. Not one the page
  // itself keeps out (meta robots, X-Robots-Tag): the config decided to index it then too, and
  // every config change fetched all of them whole again (helper-60).
  const deferred = line.note?.startsWith(CANONICAL_NOTE) === true && !ctx.honorCanonical;
  if (
    !line.docBulk &&
    line.state === 'followed' &&
    line.kind !== 'sitemap' &&
    d.index &&
    (!line.index || deferred)
  )
    return { due: now };
  if (retryReason(line, d.index, ctx.changes)) return { due: now };
  const fetched = Date.parse(line.lastFetched ?? '');
  if (Number.isNaN(fetched)) return null;
  const { plan } = ctx;
  const bounds = plan.bounds(line.url);
  const interval = bounds
    ? Math.min(bounds.maxMs, Math.max(bounds.minMs, line.refreshInterval ?? plan.maxAgeMs))
    : plan.maxAgeMs;
  const due = fetched + interval;
  if (due + ctx.cycleMs >= stored) return null;
  const at = new Date(due).toISOString();
  return due <= ctx.untilMs ? { due: at } : { moveTo: at };
}

/**
 * Why a URL fetched and then skipped (`ignored`: robots.txt, a media type, a redirect target out
 * of scope or not followed, a `noIndex` rule) is tried again now, or null: the config changed in
 * a way that may lift its reason. Its links were never read, so reading the pages' links again
 * finds it known and leaves it as it was. URLs stopped before any fetch (a trap or sitemap cap)
 * are admitted again when a link reaches them (url-table.ts), and a redirect followed has nothing
 * to lift. A redirect chain cut at `fetch.maxRedirects` (an error) is tried again when it widens.
 */
export function retryReason(line: UrlItem, indexes: boolean, changes: PolicyChanges): string | null {
  if (line.state === 'error')
    return line.errorCode === 'too-many-redirects' && changes.widened ? changes.widened : null;
  if (line.state !== 'ignored' || !line.lastFetched || line.note?.startsWith('redirected to ')) return null;
  if (indexes && line.note?.startsWith('rule: noIndex')) return 'a noIndex rule dropped';
  return changes.widened ?? changes.redocument;
}

/**
 * Reviews the lines due after the cycle's window (reads only). `items` reads the URLs' table
 * items, as the cycle's own due check does: a line counts while it is its URL's current state.
 */
export async function reviewLines(
  deps: StageDeps,
  ctx: ReviewContext,
  current: (lines: UrlItem[], items: Map<string, UrlItem>) => UrlItem[],
): Promise<PolicyReview> {
  const until = new Date(ctx.untilMs).toISOString();
  const newest = new Map<string, UrlItem>();
  const markers = new Map<string, UrlItem>();
  // Day folders sort by date; `never/` (compound elements) sorts after them and is left out.
  for await (const key of deps.store.list(
    PREFIXES.refresh,
    KEYS.refreshDay(refreshBucket(until)).slice(0, -1),
  )) {
    if (!/^\d{4}-\d{2}-\d{2}\//.test(key.slice(PREFIXES.refresh.length))) break;
    for (const line of await deps.store.getLines<UrlItem>(key)) {
      if (line.moved) {
        keepNewest(markers, line);
        continue;
      }
      // One URL with two future lines (a page fetched again before its time): the newer one is
      // its state, and only it is judged. Judging each, the older line of a page refetched early
      // for a sitemap date was due again at the next date before the refetch, and the cycle sent
      // the first fetch's validators (a 200, a "changed" record of unchanged content).
      keepNewest(newest, line);
    }
  }
  const judged = new Map<string, { line: UrlItem; verdict: NonNullable<LineVerdict> }>();
  for (const line of newest.values()) {
    const verdict = judgeLine(line, ctx);
    if (verdict) judged.set(line.url, { line, verdict });
  }
  // A line a marker supersedes moved in an earlier review.
  const lines = [...judged.values()].map((j) => j.line).filter((l) => isNewerLine(l, markers.get(l.url)));
  if (lines.length === 0) return { due: [], moved: [], superseded: [], tableMoved: [] };
  const items = await deps.urls.getMany(lines.map((l) => l.url));
  const review: PolicyReview = { due: [], moved: [], superseded: [], tableMoved: [] };
  for (const state of current(lines, items)) {
    const entry = judged.get(state.url);
    if (!entry) continue;
    const { line, verdict } = entry;
    const lineKept = state.stored === 'line';
    if ('due' in verdict) {
      // The grid of the next refresh starts at the new due time (scheduling.ts nextRefreshAt).
      review.due.push({ ...state, nextRefreshAt: verdict.due });
      if (lineKept) review.superseded.push(line);
    } else if (lineKept) {
      review.moved.push({ ...line, nextRefreshAt: verdict.moveTo });
      review.superseded.push(line);
    } else if (line.nextRefreshAt) {
      review.tableMoved.push({ state: { ...line, nextRefreshAt: verdict.moveTo }, from: line.nextRefreshAt });
    }
  }
  return review;
}

/**
 * Writes what a review decided, after the cycle has queued its due pages: the markers that
 * supersede the old lines, then the moved lines, a millisecond later so a listing takes them.
 */
export async function writeReview(deps: StageDeps, review: PolicyReview, nowIso: string): Promise<void> {
  if (review.superseded.length > 0) {
    const markers = review.superseded.map((l) => ({ ...l, moved: nowIso }));
    await writeStateLines(deps.store, markers, nowIso);
  }
  if (review.moved.length > 0) {
    const later = new Date(Date.parse(nowIso) + 1).toISOString();
    await writeStateLines(deps.store, review.moved, later);
  }
  // A table-kept URL's time is its item's (a line is only a hint that must match it): the item
  // moves first, conditionally (a refetch since wins), then a line in the new day points at it.
  const moved: UrlItem[] = [];
  for (const { state, from } of review.tableMoved)
    if (state.nextRefreshAt && (await deps.urls.moveRefresh(state.url, from, state.nextRefreshAt)))
      moved.push(state);
  if (moved.length > 0) await writeStateLines(deps.store, moved, nowIso);
}
