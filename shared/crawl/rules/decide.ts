/**
 * What the crawl does with one URL: normalization, scope filters and crawl rules combined.
 * Evaluation order (each step can end it):
 *
 * 1. Normalize (seed 003: filters see normalized URLs). Null -> rejected, reason `malformed-url`
 *    (unparsable, or relative without a base) or `opaque-url` (javascript:, mailto:, data:, tel:…).
 * 2. Hard limits, for every URL but start URLs: `scheme-not-allowed`, `url-too-long` (seed 002).
 * 3. Crawl rules, FIRST MATCHING RULE WINS (seed 001). A rule with `ignore`, or with both `noIndex`
 *    and `noFollow`, rejects (reason `rule N: <its actions>`, N as in the config path `rules.N`).
 *    index/noIndex/follow/noFollow/source/addMeta/priority set the decision; unset flags keep the
 *    defaults, index and follow (seed 004: "the default to index and to follow").
 * 4. Start URLs (`isStart`) are accepted now (reason `start-url`, queue `user`, seed 001 "fifo:
 *    user: user-submitted root URLs"); only an ignoring rule or a malformed URL rejects them.
 * 5. maxDepth (`max-depth`), even for URLs a rule accepts (seed 003 maxCrawlDepth), then the
 *    URL-only crawler traps of scope.traps (`path-too-deep`, `repeating-segments`), likewise.
 * 6. Unless the matching rule has `accept`, the scope filters decide (first rejection wins, see
 *    scope.ts); `accept` bypasses them, but not steps 2 and 5.
 * 7. Accepted: reason `rule N: <its actions>` when a rule matched, else `default`. Queue from the
 *    actions: index+follow -> `index_follow`, index only -> `index`, follow only -> `follow`; then a
 *    priority shift −2..2 moves it up (negative) or down (positive) that many places in
 *    QUEUE_ORDER, clamped to its ends (seed 001 "How Priorities Work": −2 highest … 2 lowest).
 *
 * A rejected decision has index/follow false, queue `index_follow`, no shift, source or meta.
 */
import type { CrawlConfig } from '../../config.ts';
import type { MetaValue, SourceName, UrlTask } from '../../types.ts';
import { domainOf } from '../url/domains.ts';
import { maskUserInfo } from '../url/mask-url.ts';
import { normalizeUrl, normalizeUrlDetailed } from '../url/normalize-url.ts';
import {
  createScopeFilters,
  MAX_STORED_URL_BYTES,
  runFilters,
  type ScopeCandidate,
  type ScopeFilters,
} from '../url/scope.ts';
import { pathTrap, variantPath } from '../url/traps.ts';
import { type CompiledRule, compileRules, firstMatchingRule, type RuleActions, urlParts } from './rules.ts';

export interface UrlDecision {
  normalized: string | null;
  domain: string | null;
  accepted: boolean;
  /** what decided: a scope reason, `rule N: …`, `start-url` or `default` */
  reason: string;
  index: boolean;
  follow: boolean;
  queue: SourceName;
  priorityShift: number;
  source: string | null;
  addMeta: MetaValue[];
}

export interface DecideContext {
  /** crawl depth of the URL: start URLs 0, links found on them 1, … */
  depth: number;
  isStart?: boolean;
  /** base URL for relative links (the page URL, or its `<base href>`) */
  base?: string;
  /**
   * a sitemap or feed named by a sitemap index, a robots.txt `Sitemap:` line or a sitemap's
   * redirect: judged by the scope as a link is, but not by its extension (`.xml`, `.gz`)
   */
  sitemap?: boolean;
}

export interface UrlDecider {
  decide(url: string, ctx: DecideContext): UrlDecision;
}

/** Seed 001 URL sources from highest to lowest weight; priority shifts move along this list. */
export const QUEUE_ORDER = [
  'user',
  'redir',
  'index',
  'index_follow',
  'follow',
] as const satisfies SourceName[];

/** The config's start URLs as the crawl keys them (normalized; an unusable one left out). */
export function startUrlsOf(config: CrawlConfig, decider: UrlDecider): string[] {
  return config.startUrls
    .map((u) => decider.decide(u, { depth: 0, isStart: true }).normalized)
    .filter((u): u is string => u !== null);
}

/** The config's `sitemaps` as the crawl keys them (normalized; written as given when unusable). */
export function sitemapsOf(config: CrawlConfig, decider: UrlDecider): string[] {
  return config.sitemaps.map((s) => decider.decide(s, { depth: 0, isStart: true }).normalized ?? s);
}

/** The config's start URLs as tasks of the user source; those the config rejects go to `rejected`. */
export function startTasks(config: CrawlConfig, decider: UrlDecider, rejected: string[] = []): UrlTask[] {
  const tasks: UrlTask[] = [];
  for (const url of config.startUrls) {
    const d = decider.decide(url, { depth: 0, isStart: true });
    if (!d.accepted || !d.normalized) {
      rejected.push(`${maskUserInfo(url)}: ${d.reason}`);
      continue;
    }
    tasks.push({
      url: d.normalized,
      depth: 0,
      queue: 'user',
      index: d.index,
      follow: d.follow,
      priority: d.priorityShift,
      kind: 'page',
      ...(d.source ? { source: d.source } : {}),
      ...(d.addMeta.length ? { addMeta: d.addMeta } : {}),
    });
  }
  return tasks;
}

/** A queued task's URL judged again (queuedTaskJudge). */
export type QueuedJudge = (task: Pick<UrlTask, 'url' | 'depth' | 'kind'>) => UrlDecision;

/**
 * Judges queued tasks again under `config` (the fetch stage, for tasks queued under another
 * config), in the context discovery judged them in: at the task's depth (a link's, a sitemap
 * entry's one below its sitemap, a redirect target's its source's); as a start URL when the config
 * names it now, or when it is a sitemap or feed (read as seeded). The refresh cycle judges its due
 * URLs the same way: a start URL the config no longer names is judged as any URL at its depth.
 */
export function queuedTaskJudge(
  config: CrawlConfig,
  decider: UrlDecider = createUrlDecider(config),
): QueuedJudge {
  const known = judges.get(decider);
  if (known) return known;
  const starts = new Set(startUrlsOf(config, decider));
  const judge: QueuedJudge = (task) =>
    decider.decide(task.url, { depth: task.depth, isStart: starts.has(task.url) || task.kind === 'sitemap' });
  judges.set(decider, judge);
  return judge;
}

/** One judge a decider (a decider is made from one config): the extract stage judges every page. */
const judges = new WeakMap<UrlDecider, QueuedJudge>();

/** Compiles a config's rules and scope once; throws ConfigError for bad rules or patterns. */
export function createUrlDecider(config: CrawlConfig): UrlDecider {
  const rules = compileRules(config.rules, config.limits.ruleCount);
  const filters = createScopeFilters(config.scope, config.startUrls);
  return { decide: (url, ctx) => decide(config, rules, filters, url, ctx) };
}

function decide(
  config: CrawlConfig,
  rules: CompiledRule[],
  filters: ScopeFilters,
  url: string,
  ctx: DecideContext,
): UrlDecision {
  const result = normalizeUrlDetailed(url, ctx.base, config.scope);
  if (!('url' in result)) return rejected(null, null, result.reason);
  const normalized = result.url;
  const parsed = new URL(normalized);
  const domain = domainOf(parsed.hostname, config.domains);
  const candidate: ScopeCandidate = { url: normalized, parsed, depth: ctx.depth };
  // Start URLs and named sitemaps skip the hard limits, but none skips what storage takes.
  if (Buffer.byteLength(normalized) > MAX_STORED_URL_BYTES)
    return rejected(normalized, domain, 'url-too-long');
  const limit = ctx.isStart ? null : runFilters(filters.hardLimits, candidate);
  if (limit) return rejected(normalized, domain, limit);
  const rule = firstMatchingRule(rules, urlParts(normalized)!);
  if (rule && ignores(rule.actions)) return rejected(normalized, domain, ruleReason(rule));
  const base = acceptedFields(normalized, domain, rule?.actions);
  if (ctx.isStart) return { ...base, reason: 'start-url', queue: 'user' };
  const chain = rule?.actions.accept
    ? [filters.depth, filters.traps]
    : [filters.depth, filters.traps, ...(ctx.sitemap ? filters.sitemapScope : filters.scope)];
  const scopeReason = runFilters(chain, candidate);
  if (scopeReason) return rejected(normalized, domain, scopeReason);
  const queue = shiftQueue(queueFor(base.index, base.follow), base.priorityShift);
  return { ...base, reason: rule ? ruleReason(rule) : 'default', queue };
}

/** Seed 001 "Ignore" is <NoIndex/><NoFollow/><Ignore/>: either form rejects the URL. */
function ignores(actions: RuleActions): boolean {
  return actions.ignore || (actions.index === false && actions.follow === false);
}

function ruleReason(rule: CompiledRule): string {
  return `rule ${rule.index}: ${rule.actions.names.join(', ')}`;
}

/** The decision fields a matching rule sets; flags it leaves unset default to index and follow. */
function acceptedFields(
  normalized: string,
  domain: string,
  actions: RuleActions | undefined,
): Omit<UrlDecision, 'reason' | 'queue'> {
  return {
    normalized,
    domain,
    accepted: true,
    index: actions?.index ?? true,
    follow: actions?.follow ?? true,
    priorityShift: actions?.priority ?? 0,
    source: actions?.source ?? null,
    addMeta: [...(actions?.addMeta ?? [])],
  };
}

function rejected(normalized: string | null, domain: string | null, reason: string): UrlDecision {
  const queue = 'index_follow';
  return {
    normalized,
    domain,
    accepted: false,
    reason,
    index: false,
    follow: false,
    queue,
    priorityShift: 0,
    source: null,
    addMeta: [],
  };
}

/** Seed 001 fifos: index+follow -> index_follow, index only -> index, follow only -> follow. */
export function queueFor(index: boolean, follow: boolean): SourceName {
  if (index && follow) return 'index_follow';
  return index ? 'index' : 'follow';
}

/** Moves `queue` up (negative shift) or down (positive) QUEUE_ORDER, clamped to its ends. */
export function shiftQueue(queue: SourceName, shift: number): SourceName {
  const at = QUEUE_ORDER.indexOf(queue as (typeof QUEUE_ORDER)[number]);
  if (at === -1 || shift === 0) return queue;
  const to = Math.min(Math.max(at + shift, 0), QUEUE_ORDER.length - 1);
  return QUEUE_ORDER[to]!;
}

/** `trawl explain`: the decision for `url` as a link found at depth 1, or depth 0 if it is a start URL. */
export function explainUrl(
  config: CrawlConfig,
  url: string,
  opts: {
    /** the depth to judge the URL at (`trawl explain --depth`); by default 0 for a start URL, else 1 */
    depth?: number;
    /**
     * the crawl read the URL as a sitemap (an index's child, a robots.txt line: its recorded
     * state says so): judged as one, in scope as a link is but for its extension
     */
    sitemap?: boolean;
  } = {},
): Record<string, unknown> {
  const keep = config.scope;
  const normalized = normalizeUrl(url, undefined, keep);
  const named = (list: string[]) =>
    normalized !== null && list.some((s) => normalizeUrl(s, undefined, keep) === normalized);
  const isStartUrl = named(config.startUrls);
  // A sitemap the config names is seeded as start URLs are, whatever its extension (.xml is ignored).
  const configured = named(config.sitemaps);
  const isSitemap = configured || opts.sitemap === true;
  const depth = opts.depth ?? (isStartUrl || isSitemap ? 0 : 1);
  const judged = createUrlDecider(config).decide(url, {
    depth,
    isStart: isStartUrl || configured,
    sitemap: isSitemap,
  });
  // As the seed stage queues it: read for its entries, not indexed (seed-stage.ts).
  const d =
    isSitemap && !isStartUrl && judged.accepted
      ? { ...judged, reason: 'sitemap', index: false, follow: true }
      : judged;
  return {
    normalized: d.normalized,
    domain: d.domain,
    accepted: d.accepted,
    reason: d.reason,
    index: d.index,
    // discovery: false follows no page's links (the crawl reads start URLs and sitemap entries only)
    follow: d.follow && (config.discovery || isSitemap),
    // A rejected URL is queued nowhere (its queue read as if it were, helper-46).
    queue: d.accepted ? d.queue : null,
    priorityShift: d.priorityShift,
    source: d.source,
    addMeta: d.addMeta,
    depth,
    traps: d.normalized ? trapLimits(config, d.normalized) : null,
  };
}

/**
 * `trawl explain --state`: a URL the crawl knows, judged as the crawl found it — a sitemap as one
 * (`.xml` is an ignored extension for links), at the depth its state records unless `depth` (the
 * `--depth` option) says otherwise (judged at 1, a page past scope.maxDepth read "accepted" beside
 * its state's depth 3, helper-46) — with its state.
 */
export function explainKnown(
  config: CrawlConfig,
  url: string,
  depth: number | undefined,
  state: Record<string, unknown> | null,
): Record<string, unknown> {
  const at = depth ?? (typeof state?.depth === 'number' ? state.depth : undefined);
  const answer = explainUrl(config, url, {
    depth: at,
    ...(state?.kind === 'sitemap' ? { sitemap: true } : {}),
  });
  answer.state = state;
  // No state: the answer is for a link at the depth assumed, which the crawl may not have found it
  // at (an audit: a page rejected at depth 4 past maxDepth 3 read "accepted" at depth 1).
  if (state === null) {
    const deeper =
      depth === undefined && config.scope.maxDepth !== null
        ? `; a link to it found deeper than scope.maxDepth (${config.scope.maxDepth}) was rejected as max-depth`
        : '';
    answer.stateNote = `the crawl has no state for it: never queued (no accepted link or sitemap entry led to it, or its links were rejected: the crawl's summary names rejected links with the page they were on)${deeper}; judged here at depth ${answer.depth}${depth === undefined ? ' (--depth sets another)' : ''}`;
  }
  return answer;
}

/** The scope.traps limits that count this URL (the caps stop it only once reached: `trawl urls` notes). */
function trapLimits(config: CrawlConfig, normalized: string): Record<string, unknown> {
  const t = config.scope.traps;
  const u = new URL(normalized);
  return {
    stoppedBy: pathTrap(u.pathname, t),
    pathDepth: u.pathname.split('/').filter(Boolean).length,
    maxPathDepth: t.maxPathDepth,
    maxSegmentRepeats: t.maxSegmentRepeats,
    hostCap: t.maxUrlsPerHost === null ? null : { host: u.host, maxUrlsPerHost: t.maxUrlsPerHost },
    queryVariants:
      t.maxQueryVariantsPerPath === null || variantPath(u) === null
        ? null
        : { path: variantPath(u), maxQueryVariantsPerPath: t.maxQueryVariantsPerPath },
    soft404Probe: t.soft404,
  };
}
