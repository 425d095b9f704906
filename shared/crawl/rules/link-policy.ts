/**
 * Whether a config change can admit links the crawl turned down before.
 *
 * A crawl records no links it rejected, and a conditional refresh (a 304) reads no links: after
 * a widened scope (an exclude removed, a rule that ignored a path dropped, a deeper maxDepth) the
 * pages the new config admits are found only by reading the crawled pages' links again. That is a
 * whole fetch of every followed page, so it is done only when the change can widen: narrowing
 * changes (an exclude added, an `ignore` rule added) are handled without reading any link again
 * (refresh-review.ts deletes what they take out).
 *
 * The test is sound and simple: a change it cannot show to be narrowing counts as widening.
 * Rules are compared by their link effect (reject, or accept/follow flags) in first-match order.
 */
import { createHash } from 'node:crypto';
import type { CrawlConfig } from '../../config.ts';
import { normalizeUrl } from '../url/normalize-url.ts';
import type { ScopeConfig } from '../url/scope.ts';
import { compileRules, type RuleActions } from './rules.ts';
import { parseXmlRules } from './rules-xml.ts';

/** What a rule does to the URLs it matches first, as far as links go. */
type Effect = 'reject' | { accept: boolean; follow: boolean };

interface RuleEffect {
  /** the rule's match expression as written (JSON) */
  match: string;
  effect: Effect;
}

/** The parts of a config that decide which links a fetched page's links lead to. */
export interface LinkPolicy {
  startUrls: string[];
  discovery: boolean;
  scope: ScopeConfig;
  rules: RuleEffect[];
  domains: CrawlConfig['domains'];
  /** what limits or skips the links read from a page */
  reading: {
    linksPerPage: number;
    honorRelNofollow: boolean;
    honorMetaRobots: boolean;
    respectRobotsTxt: boolean;
    /** where a redirect leads is a link too (absent in policies recorded before 2026-11-28) */
    followRedirects?: boolean;
    maxRedirects?: number;
    /** an honored canonical is fetched: a link too (present only when on) */
    honorCanonical?: true;
  };
}

/** A stored policy over this size is kept as a digest: any change to it then counts as widening. */
const MAX_STORED_CHARS = 256 * 1024;
const DIGEST_PREFIX = 'sha256:';

/** No rule matched: accepted if the scope filters pass, links followed. */
const DEFAULT_EFFECT: Effect = { accept: false, follow: true };

/** The config's rules in order: each one's match expression as written (JSON), and its actions. */
function writtenRules(config: CrawlConfig): { match: string; actions: RuleActions }[] {
  const written: unknown = typeof config.rules === 'string' ? parseXmlRules(config.rules) : config.rules;
  const list = Array.isArray(written) ? (written as { match?: unknown }[]) : [];
  return compileRules(config.rules, config.limits.ruleCount).map((r, i) => ({
    match: JSON.stringify(list[i]?.match ?? null),
    actions: r.actions,
  }));
}

/** A policy as the crawl stores it: its JSON, or a digest of a very large one. */
function storedForm(policy: unknown): string {
  const json = JSON.stringify(policy);
  if (json.length <= MAX_STORED_CHARS) return json;
  return DIGEST_PREFIX + createHash('sha256').update(json).digest('hex');
}

export function linkPolicy(config: CrawlConfig): LinkPolicy {
  const rules = writtenRules(config).map(({ match, actions: a }) => {
    const effect: Effect =
      a.ignore || (a.index === false && a.follow === false)
        ? 'reject'
        : { accept: a.accept, follow: a.follow ?? true };
    return { match, effect };
  });
  return {
    startUrls: config.startUrls.map((u) => normalizeUrl(u, undefined, config.scope) ?? u),
    discovery: config.discovery,
    scope: config.scope,
    rules,
    domains: config.domains,
    reading: {
      linksPerPage: config.limits.linksPerPage,
      honorRelNofollow: config.extract.honorRelNofollow,
      honorMetaRobots: config.extract.honorMetaRobots,
      respectRobotsTxt: config.fetch.respectRobotsTxt,
      followRedirects: config.fetch.followRedirects,
      maxRedirects: config.fetch.maxRedirects,
      // Only when on: the policies stored before the option keep their form.
      ...(config.extract.honorCanonical ? { honorCanonical: true as const } : {}),
    },
  };
}

/** The link policy as the crawl stores it. */
export function storedLinkPolicy(policy: LinkPolicy): string {
  return storedForm(policy);
}

/** A stored link policy read back; null for a digest (or what does not parse). */
function readLinkPolicy(stored: string): LinkPolicy | null {
  if (stored.startsWith(DIGEST_PREFIX)) return null;
  try {
    return JSON.parse(stored) as LinkPolicy;
  } catch {
    return null;
  }
}

/**
 * Why the change from the `stored` policy to `now` can admit links turned down before, or null
 * when it cannot (the same policy, or a narrower one).
 */
export function wideningReason(stored: string, now: LinkPolicy): string | null {
  const before = readLinkPolicy(stored);
  if (!before) return stored === storedLinkPolicy(now) ? null : 'the link policy changed';
  if (!before.discovery && now.discovery) return 'discovery turned on';
  const added = now.startUrls.filter((u) => !before.startUrls.includes(u));
  if (added.length > 0 && !offsiteFree(now.scope)) return `start URL ${added[0]} added`;
  if (JSON.stringify(before.domains) !== JSON.stringify(now.domains)) return 'domains changed';
  const r = before.reading;
  if (r && now.reading.linksPerPage > r.linksPerPage) return 'limits.linksPerPage raised';
  for (const k of ['honorRelNofollow', 'honorMetaRobots', 'respectRobotsTxt'] as const)
    if (r?.[k] && !now.reading[k]) return `${k === 'respectRobotsTxt' ? 'fetch' : 'extract'}.${k} turned off`;
  if (r?.followRedirects === false && now.reading.followRedirects) return 'fetch.followRedirects turned on';
  if (r && !r.honorCanonical && now.reading.honorCanonical) return 'extract.honorCanonical turned on';
  if (r?.maxRedirects !== undefined && (now.reading.maxRedirects ?? 0) > r.maxRedirects)
    return 'fetch.maxRedirects raised';
  return scopeWidening(before.scope, now.scope) ?? rulesWidening(before.rules, now.rules);
}

/**
 * What changed in the link policy, for a change that widens nothing (an exclude added, a start URL
 * dropped): `scope.exclude gained "/private/"; rules changed`. Null when nothing in it changed
 * (the change is elsewhere: refresh times), or it is kept as a digest.
 */
export function linkPolicyChanges(stored: string, now: LinkPolicy): string | null {
  const before = readLinkPolicy(stored);
  if (!before) return null;
  const out: string[] = [];
  const list = (name: string, from: unknown[], to: unknown[]) => {
    const gained = to.filter((x) => !from.some((y) => JSON.stringify(y) === JSON.stringify(x)));
    const lost = from.filter((x) => !to.some((y) => JSON.stringify(y) === JSON.stringify(x)));
    const show = (xs: unknown[]) =>
      xs
        .slice(0, 2)
        .map((x) => JSON.stringify(x))
        .join(', ') + (xs.length > 2 ? ', …' : '');
    if (gained.length) out.push(`${name} gained ${show(gained)}`);
    if (lost.length) out.push(`${name} lost ${show(lost)}`);
    if (!gained.length && !lost.length && JSON.stringify(from) !== JSON.stringify(to))
      out.push(`${name} reordered`);
  };
  const value = (name: string, from: unknown, to: unknown) => {
    if (Array.isArray(from) && Array.isArray(to)) list(name, from, to);
    else if (JSON.stringify(from) !== JSON.stringify(to))
      out.push(`${name} ${JSON.stringify(from) ?? 'unset'} → ${JSON.stringify(to) ?? 'unset'}`);
  };
  list('startUrls', before.startUrls, now.startUrls);
  value('discovery', before.discovery, now.discovery);
  const keys = new Set([...Object.keys(before.scope ?? {}), ...Object.keys(now.scope)]);
  for (const k of keys)
    value(
      `scope.${k}`,
      (before.scope as Record<string, unknown>)?.[k],
      (now.scope as Record<string, unknown>)[k],
    );
  if (JSON.stringify(before.rules) !== JSON.stringify(now.rules)) out.push('rules changed');
  value('domains', before.domains, now.domains);
  for (const k of Object.keys(now.reading) as (keyof LinkPolicy['reading'])[])
    if (before.reading?.[k] !== undefined) value(k, before.reading[k], now.reading[k]);
  if (out.length === 0) return null;
  return out.length > 3 ? `${out.slice(0, 3).join('; ')}; …` : out.join('; ');
}

/** Start URLs do not bound the hosts or paths followed. */
function offsiteFree(scope: ScopeConfig): boolean {
  return scope.followOffsite && !scope.underStartPath;
}

const missing = (from: string[], to: string[]) => from.find((x) => !to.includes(x));
/** Raised, or lifted (null: no limit). */
const raised = (from: number | null, to: number | null) => from !== null && (to === null || to > from);

/** Why the scope now admits URLs it rejected, or null. */
function scopeWidening(a: ScopeConfig, b: ScopeConfig): string | null {
  const on = (k: 'sameHostAndScheme' | 'underStartPath') => a[k] && !b[k];
  if (on('underStartPath')) return 'scope.underStartPath turned off';
  if (!b.underStartPath && on('sameHostAndScheme')) return 'scope.sameHostAndScheme turned off';
  if (!b.underStartPath && !a.followOffsite && b.followOffsite) return 'scope.followOffsite turned on';
  const scheme = missing(b.schemes, a.schemes);
  if (scheme) return `scope.schemes gained ${scheme}`;
  if (b.maxUrlLength > a.maxUrlLength) return 'scope.maxUrlLength raised';
  if (!a.followQueryStrings && b.followQueryStrings) return 'scope.followQueryStrings turned on';
  // Either list, when not empty, admits what matches one of its entries.
  for (const k of ['mustContain', 'include'] as const) {
    if (a[k].length === 0) continue;
    if (b[k].length === 0) return `scope.${k} emptied`;
    const gained = missing(b[k], a[k]);
    if (gained !== undefined) return `scope.${k} gained ${gained}`;
  }
  for (const k of ['mustNotContain', 'exclude', 'ignoredExtensions'] as const) {
    const lost = missing(a[k], b[k]);
    if (lost !== undefined) return `scope.${k} lost ${lost}`;
  }
  if (raised(a.maxDepth, b.maxDepth)) return 'scope.maxDepth raised';
  const t = ['maxSegmentRepeats', 'maxPathDepth', 'maxUrlsPerHost', 'maxQueryVariantsPerPath'] as const;
  for (const k of t) if (raised(a.traps[k], b.traps[k])) return `scope.traps.${k} raised`;
  // What makes a URL's identity (query parameters kept, session ids): every URL may change.
  for (const k of ['keepQueryParams', 'stripSessionIds'] as const)
    if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) return `scope.${k} changed`;
  // A key this test does not know: any change counts.
  const known = new Set([
    'sameHostAndScheme',
    'underStartPath',
    'followOffsite',
    'schemes',
    'maxUrlLength',
    'followQueryStrings',
    'keepQueryParams',
    'stripSessionIds',
    'mustContain',
    'mustNotContain',
    'include',
    'exclude',
    'ignoredExtensions',
    'ignoredMimeTypes',
    'maxDepth',
    'traps',
  ]);
  const other = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => !known.has(k)));
  for (const k of other) {
    const key = k as keyof ScopeConfig;
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return `scope.${k} changed`;
  }
  return null;
}

/** `x` admits no more than `y`: a rejecting rule admits nothing; otherwise flag by flag. */
function within(x: Effect, y: Effect): boolean {
  if (x === 'reject') return true;
  if (y === 'reject') return false;
  return (!x.accept || y.accept) && (!x.follow || y.follow);
}

/**
 * Why the rules now admit or follow URLs they did not, or null. First match wins, so the new
 * list must be the old one, in order, with each kept rule no wider than before, plus rules that
 * narrow whatever they take over: a rejecting rule, or one no wider than every old rule and the
 * default. A dropped rule is narrowing only when what takes its URLs over is no wider than it.
 */
function rulesWidening(before: RuleEffect[], now: RuleEffect[]): string | null {
  const effects = [DEFAULT_EFFECT, ...before.map((r) => r.effect), ...now.map((r) => r.effect)];
  const dropSafe = (r: RuleEffect) => effects.every((e) => within(e, r.effect));
  const keeps = (rule: RuleEffect, old: RuleEffect) =>
    old.match === rule.match && within(rule.effect, old.effect);
  let next = 0;
  for (const [k, rule] of now.entries()) {
    // A kept rule: the next old one, or a later one with only droppable rules in between.
    let j = next;
    while (j < before.length && !keeps(rule, before[j]!) && dropSafe(before[j]!)) j++;
    if (j < before.length && keeps(rule, before[j]!)) {
      next = j + 1;
      continue;
    }
    // An added rule.
    if (within(rule.effect, DEFAULT_EFFECT) && before.every((r) => within(rule.effect, r.effect))) continue;
    return `rules.${k} admits or follows URLs the old rules turned down`;
  }
  const dropped = before.slice(next).findIndex((r) => !dropSafe(r));
  return dropped === -1 ? null : `rule ${next + dropped} of the old rules was removed`;
}

/**
 * What decides a fetched page's document beyond its bytes: extraction, the limits that cut it,
 * what the rules add to it, the media types skipped, duplicate folding. A 304 keeps the document
 * as it was made, so after a change to any of these the documents are made again from a whole
 * fetch (the pages' own changes are what conditional requests are for).
 */
export function documentPolicy(config: CrawlConfig): Record<string, unknown> {
  // honorCanonical only when on: the policies stored before the option keep their form.
  const { honorRelNofollow: _links, honorCanonical, ...rest } = config.extract;
  const extract = honorCanonical ? { ...rest, honorCanonical } : rest;
  const l = config.limits;
  // What a rule adds to the documents it matches (first match wins: the order counts).
  const rules = writtenRules(config);
  const adds = rules.some((r) => r.actions.source !== null || r.actions.addMeta.length > 0);
  return {
    extract,
    limits: [
      l.titleChars,
      l.metaValueChars,
      l.pdfPages,
      l.pdfBytes,
      l.pdfTimeMs,
      l.archiveEntries,
      l.archiveBytes,
      l.archiveDepth,
    ],
    maxBytes: config.fetch.maxBytes,
    ignoredMimeTypes: config.scope.ignoredMimeTypes,
    foldDuplicates: config.index.foldDuplicates,
    rules: adds ? rules.map((r) => [r.match, r.actions.source, r.actions.addMeta]) : [],
  };
}

/** The document policy as the crawl stores it. */
export function storedDocumentPolicy(config: CrawlConfig): string {
  return storedForm(documentPolicy(config));
}

/** Which part of the document policy changed since `stored`, or null. */
export function documentChange(stored: string, config: CrawlConfig): string | null {
  const after = documentPolicy(config);
  const now = storedForm(after);
  if (stored === now) return null;
  if (stored.startsWith(DIGEST_PREFIX) || now.startsWith(DIGEST_PREFIX)) return 'the document policy changed';
  const before = JSON.parse(stored) as Record<string, unknown>;
  const names: Record<string, string> = {
    maxBytes: 'fetch.maxBytes',
    ignoredMimeTypes: 'scope.ignoredMimeTypes',
    limits: 'limits (titleChars, metaValueChars, pdf…, archive…)',
  };
  // Every change named (the first alone hid the others, helper-47).
  const changed: string[] = [];
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) === JSON.stringify(after[key])) continue;
    if (key === 'extract') {
      const a = (before.extract ?? {}) as Record<string, unknown>;
      const b = after.extract as Record<string, unknown>;
      // A key on one side only (an option kept only while on) differs too.
      const keys = new Set([...Object.keys(b), ...Object.keys(a)]);
      const fields = [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
      changed.push(
        ...(fields.length ? fields.map((f) => `extract.${f} changed`) : ['extract settings changed']),
      );
    } else if (key === 'rules') changed.push('what the rules add to documents (source, addMeta) changed');
    else if (key === 'foldDuplicates') changed.push('index.foldDuplicates changed');
    else changed.push(`${names[key] ?? key} changed`);
  }
  return changed.length ? changed.join(', ') : 'the document policy changed';
}

/** The URL identity changed (query parameters kept, session ids): URLs stored in the old form are gone. */
export function identityChanged(stored: string, now: LinkPolicy): boolean {
  const before = readLinkPolicy(stored);
  return (['keepQueryParams', 'stripSessionIds'] as const).some(
    (k) => before !== null && JSON.stringify(before.scope[k]) !== JSON.stringify(now.scope[k]),
  );
}
