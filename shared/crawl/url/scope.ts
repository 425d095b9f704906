/**
 * Crawl scope as small chained URL filters (StormCrawler `URLFilter` style): each filter returns
 * null to let a normalized URL pass, or a typed reason to reject it. Sources: seed 002 (FDSE link
 * rules: protocol, address length, query strings, file extension, offsite links, "Index Entire
 * Site"), seed 003 (SMILA include/exclude patterns, maxCrawlDepth), seed 004 (Smartsite: host and
 * scheme of a start URL, must/must-not contain, ignored extensions).
 */
import { domainToUnicode } from 'node:url';
import type { CrawlConfig } from '../../config.ts';
import { ConfigError } from '../../errors.ts';
import { compileLinearRegex, type LinearRegex } from '../rules/linear-regex.ts';
import { normalizeUrl, stripFragment } from './normalize-url.ts';
import { pathTrap } from './traps.ts';

export type ScopeReason =
  | 'scheme-not-allowed'
  | 'url-too-long'
  | 'offsite'
  | 'outside-start-path'
  | 'query-string'
  | 'must-contain'
  | 'must-not-contain'
  | 'not-included'
  | 'excluded'
  | 'ignored-extension'
  | 'max-depth'
  | 'repeating-segments'
  | 'path-too-deep';

/** A normalized URL being judged, with its parsed form and crawl depth (start URLs: 0). */
export interface ScopeCandidate {
  url: string;
  parsed: URL;
  depth: number;
}

export type UrlFilter = (candidate: ScopeCandidate) => ScopeReason | null;

export type ScopeConfig = CrawlConfig['scope'];

/** The filter chains: hard limits apply to every URL, `scope` only when no rule accepted it. */
export interface ScopeFilters {
  hardLimits: UrlFilter[];
  scope: UrlFilter[];
  /** `scope` without the ignored extensions: a sitemap's `.xml` or `.gz` is no reason to leave it out */
  sitemapScope: UrlFilter[];
  depth: UrlFilter;
  /** crawler traps decided from the URL alone (scope.traps): even a rule's `accept` does not lift them */
  traps: UrlFilter;
}

/** Builds the filter chains of a scope config for the given start URLs. */
export function createScopeFilters(scope: ScopeConfig, startUrls: string[]): ScopeFilters {
  const starts = startUrls
    .map((u) => normalizeUrl(u, undefined, scope))
    .filter((u): u is string => u !== null)
    .map((u) => new URL(u));
  const chain: UrlFilter[] = [];
  const hostFilter = scope.underStartPath ? underStartPathFilter(starts) : offsiteFilter(scope, starts);
  if (hostFilter) chain.push(hostFilter);
  if (!scope.followQueryStrings) chain.push(queryStringFilter());
  if (scope.mustContain.length) chain.push(mustContainFilter(scope.mustContain));
  if (scope.mustNotContain.length) chain.push(mustNotContainFilter(scope.mustNotContain));
  if (scope.include.length)
    chain.push(includeFilter(compilePatterns(scope.include, 'scope.include'), scope.include));
  if (scope.exclude.length)
    chain.push(excludeFilter(compilePatterns(scope.exclude, 'scope.exclude'), scope.exclude));
  const sitemapScope = [...chain];
  if (scope.ignoredExtensions.length) chain.push(ignoredExtensionFilter(scope.ignoredExtensions));
  return {
    hardLimits: [schemeFilter(scope.schemes), maxUrlLengthFilter(scope.maxUrlLength)],
    scope: chain,
    sitemapScope,
    depth: maxDepthFilter(scope.maxDepth),
    traps: ({ parsed }) => pathTrap(parsed.pathname, scope.traps),
  };
}

/** Runs filters in order; the first rejection wins, null when every filter passes. */
export function runFilters(filters: UrlFilter[], candidate: ScopeCandidate): ScopeReason | null {
  for (const filter of filters) {
    const reason = filter(candidate);
    if (reason !== null) return reason;
  }
  return null;
}

/** Seed 002 "Protocol": only the listed schemes are crawled. */
export function schemeFilter(schemes: string[]): UrlFilter {
  const allowed = new Set(schemes.map((s) => s.toLowerCase().replace(/:$/, '')));
  return ({ parsed }) => (allowed.has(parsed.protocol.slice(0, -1)) ? null : 'scheme-not-allowed');
}

/**
 * The longest URL the crawl can keep, start URLs and archive elements too: the URL is the URLs
 * table's key, and DynamoDB takes 2048 bytes of one (a normalized URL is ASCII). A robots.txt
 * `Sitemap:` line, an index's child or a tar entry's name past it failed its whole batch, again and
 * again: one hostile site stopped the crawl (helper-51).
 */
export const MAX_STORED_URL_BYTES = 2048;

/** Seed 002 "Address length": URLs longer than the maximum are ignored. */
export function maxUrlLengthFilter(max: number): UrlFilter {
  return ({ url }) => (url.length > max ? 'url-too-long' : null);
}

/**
 * The host restriction: lifted by followOffsite (seed 002 "Follow Offsite Links"); else host and
 * scheme of a start URL (seed 004), or with sameHostAndScheme false only its host name (seed 002:
 * "the offsite links rule only limits the links to the same hostname"), any scheme and port.
 */
export function offsiteFilter(scope: ScopeConfig, starts: URL[]): UrlFilter | null {
  if (scope.followOffsite) return null;
  return scope.sameHostAndScheme ? sameHostAndSchemeFilter(starts) : sameHostnameFilter(starts);
}

/** Seed 002 offsite rule: the host name (without port) of one start URL. */
export function sameHostnameFilter(starts: URL[]): UrlFilter {
  const hostnames = new Set(starts.map((s) => s.hostname));
  return ({ parsed }) => (hostnames.has(parsed.hostname) ? null : 'offsite');
}

/** Seed 004: "the host must match … the scheme must match" one start URL (the port too). */
export function sameHostAndSchemeFilter(starts: URL[]): UrlFilter {
  const origins = new Set(starts.map((s) => `${s.protocol}//${s.host}`));
  return ({ parsed }) => (origins.has(`${parsed.protocol}//${parsed.host}`) ? null : 'offsite');
}

/** Seed 002 "Index Entire Site": same host and scheme as a start URL, in its directory or below. */
export function underStartPathFilter(starts: URL[]): UrlFilter {
  const prefixes = starts.map((s) => `${s.protocol}//${s.host}${directoryOf(s.pathname)}`);
  return ({ parsed }) => {
    const here = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    return prefixes.some((p) => here.startsWith(p)) ? null : 'outside-start-path';
  };
}

/** The directory of a path: "/a/b.html" -> "/a/", "/a/" -> "/a/". */
export function directoryOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/') + 1) || '/';
}

/** Seed 002 "Follow Query Strings" off: any URL with a query string is ignored. */
export function queryStringFilter(): UrlFilter {
  return ({ parsed }) => (parsed.search ? 'query-string' : null);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is what a normalized URL holds
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * A normalized URL as a person reads and writes it: the host in Unicode, the path and query's
 * UTF-8 escapes decoded (`http://xn--bcher-kva.test/caf%C3%A9` is `http://bücher.test/café`).
 * A value written with non-ASCII characters is matched against this form too: against the
 * normalized URL alone, an `exclude` of `/privé/` never matched and the pages were indexed.
 */
export function readableUrl(url: string): string {
  const u = URL.parse(url);
  if (!u) return url;
  let rest = u.pathname + u.search;
  try {
    rest = decodeURI(rest);
  } catch {
    // an escape that is not UTF-8 (a legacy-encoded query): kept as it is
  }
  const host = domainToUnicode(u.hostname) || u.hostname;
  return `${u.protocol}//${host}${u.port ? `:${u.port}` : ''}${rest}${u.hash}`;
}

/**
 * Whether `url` (or its readable form, when a value written with non-ASCII characters needs it)
 * satisfies `matches`.
 */
function anyForm(values: string[], matches: (form: string) => boolean): (url: string) => boolean {
  if (!values.some((v) => NON_ASCII.test(v))) return matches;
  return (url) => matches(url) || matches(readableUrl(url));
}

/** Whether one of the substrings occurs in the URL without its #fragment. */
function containsAny(substrings: string[]): (url: string) => boolean {
  const found = anyForm(substrings, (f) => substrings.some((s) => f.includes(s)));
  return (url) => found(stripFragment(url));
}

/** Seed 004 "Uri must contain": one of the substrings occurs in the URL without its #fragment. */
export function mustContainFilter(substrings: string[]): UrlFilter {
  const found = containsAny(substrings);
  return ({ url }) => (found(url) ? null : 'must-contain');
}

/** Seed 004 "Uri must not contain": none of the substrings occurs in the URL without its #fragment. */
export function mustNotContainFilter(substrings: string[]): UrlFilter {
  const found = containsAny(substrings);
  return ({ url }) => (found(url) ? 'must-not-contain' : null);
}

/** Seed 003 urlPatterns.include: with includes, at least one must match the normalized URL. */
export function includeFilter(patterns: LinearRegex[], sources: string[] = []): UrlFilter {
  const matched = anyForm(sources, (f) => patterns.some((p) => p.test(f)));
  return ({ url }) => (matched(url) ? null : 'not-included');
}

/** Seed 003 urlPatterns.exclude: a matching exclude pattern filters the URL out. */
export function excludeFilter(patterns: LinearRegex[], sources: string[] = []): UrlFilter {
  const matched = anyForm(sources, (f) => patterns.some((p) => p.test(f)));
  return ({ url }) => (matched(url) ? 'excluded' : null);
}

/**
 * Seeds 002/004: the extension of the path's last segment, case-insensitive, in the ignored list.
 * The segment's parameters are not part of its name: `/logo.png;jsessionid=A1` is a `.png` (Java
 * servers add the session to every link of a page), as is `/a.css;v=2`.
 */
export function ignoredExtensionFilter(extensions: string[]): UrlFilter {
  const ignored = new Set(extensions.map((e) => e.toLowerCase().replace(/^\./, '')));
  // A multi-part extension ("tar.gz") is matched against the segment's end: it never matched.
  const multi = [...ignored].filter((e) => e.includes('.')).map((e) => `.${e}`);
  return ({ parsed }) => {
    const ext = extensionOf(parsed.pathname);
    if (ext !== null && ignored.has(ext)) return 'ignored-extension';
    if (multi.length === 0) return null;
    const segment = lastSegmentName(parsed.pathname).toLowerCase();
    return multi.some((e) => segment.endsWith(e) && segment.length > e.length) ? 'ignored-extension' : null;
  };
}

/** Lower-cased extension of a path's last segment ("/a/B.JPG" -> "jpg"); null when it has none. */
export function extensionOf(path: string): string | null {
  const segment = lastSegmentName(path);
  const dot = segment.lastIndexOf('.');
  return dot === -1 || dot === segment.length - 1 ? null : segment.slice(dot + 1).toLowerCase();
}

/** The last segment of a path without its parameters (`;jsessionid=…`, RFC 3986 §3.3). */
function lastSegmentName(path: string): string {
  const segment = path.slice(path.lastIndexOf('/') + 1);
  const semicolon = segment.indexOf(';');
  return semicolon === -1 ? segment : segment.slice(0, semicolon);
}

/** Seed 003 maxCrawlDepth: links deeper than the maximum are discarded (start URLs have depth 0). */
export function maxDepthFilter(maxDepth: number | null): UrlFilter {
  return ({ depth }) => (maxDepth !== null && depth > maxDepth ? 'max-depth' : null);
}

function compilePatterns(patterns: string[], path: string): LinearRegex[] {
  return patterns.map((p, i) => {
    try {
      return compileLinearRegex(p);
    } catch (err) {
      throw new ConfigError(
        `${path}.${i}: invalid regular expression ${JSON.stringify(p)}: ${(err as Error).message}`,
      );
    }
  });
}
