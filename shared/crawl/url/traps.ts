/**
 * Crawler traps (issue 17 item 4), pure: repeating path segments and path depth as URL filters,
 * the keys the per-host and per-path caps count, the admission of new URLs against those counts,
 * and the text fingerprint that recognizes a host's soft-404 page.
 */
import { createHash } from 'node:crypto';
import type { TrapsConfig } from '../../config-traps.ts';
import type { UrlTask } from '../../types.ts';
import { squeeze } from '../extract/visible-text.ts';

/** Repeating blocks longer than this many segments are not looked for (bounds the work per URL). */
const MAX_BLOCK = 8;

function segmentsOf(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

/** True when a block of 1..8 segments occurs more than `maxRepeats` times in a row (`/a/b/a/b/a/b`). */
export function hasRepeatingSegments(path: string, maxRepeats: number): boolean {
  const segs = segmentsOf(path);
  for (let size = 1; size <= MAX_BLOCK && size * (maxRepeats + 1) <= segs.length; size++) {
    // A run of k segments equal to the one `size` back is a block repeated k / size + 1 times.
    let run = 0;
    for (let i = size; i < segs.length; i++) {
      run = segs[i] === segs[i - size] ? run + 1 : 0;
      if (run >= size * maxRepeats) return true;
    }
  }
  return false;
}

/** The path-based trap that stops `path`, if any. */
export function pathTrap(path: string, traps: TrapsConfig): 'repeating-segments' | 'path-too-deep' | null {
  if (traps.maxPathDepth !== null && segmentsOf(path).length > traps.maxPathDepth) return 'path-too-deep';
  return hasRepeatingSegments(path, traps.maxSegmentRepeats) ? 'repeating-segments' : null;
}

export type CapReason = 'host-cap' | 'query-variants';

/**
 * The path whose variants a URL is: its host and path without path parameters (`/cart;x=1` and
 * `/cart;x=2` vary `/cart` as `?x=1` and `?x=2` do); null for a URL with neither a query nor
 * parameters. Path parameters (random tokens a server puts in every link) made an endless crawl
 * that the query-variant cap never counted.
 */
export function variantPath(u: URL): string | null {
  const bare = u.pathname.includes(';') ? u.pathname.replace(/;[^/]*/g, '') : u.pathname;
  return u.search !== '' || bare !== u.pathname ? `${u.host}${bare}` : null;
}

/** The counters a new URL adds to: its host, and its path when it has a query string or path parameters. */
export function capKeys(url: string, traps: TrapsConfig): { key: string; reason: CapReason }[] {
  const u = new URL(url);
  const keys: { key: string; reason: CapReason }[] = [];
  if (traps.maxUrlsPerHost !== null) keys.push({ key: `cap#host#${u.host}`, reason: 'host-cap' });
  const variants = variantPath(u);
  if (traps.maxQueryVariantsPerPath !== null && variants !== null)
    keys.push({ key: `cap#query#${variants}`, reason: 'query-variants' });
  return keys;
}

function limitOf(reason: CapReason, traps: TrapsConfig): number {
  return (reason === 'host-cap' ? traps.maxUrlsPerHost : traps.maxQueryVariantsPerPath) ?? Infinity;
}

/** Why a stopped URL was stopped, as `trawl urls` shows it. */
export function capNote(reason: CapReason, traps: TrapsConfig): string {
  const key = reason === 'host-cap' ? 'maxUrlsPerHost' : 'maxQueryVariantsPerPath';
  return `trap: ${reason} (scope.traps.${key} ${limitOf(reason, traps)})`;
}

/**
 * Splits new URLs into admitted and stopped, in order: `before` holds each counter's value before
 * this batch (the batch's own URLs were added to it after). A URL is admitted while every counter
 * it adds to is still under its limit. A stopped one says how many new URLs its cap had stopped
 * before it (`past`), and whether that is as many as the cap admits (`recorded: false`): past
 * that a row per URL would grow without end (random links, a new set at each refresh).
 */
export function admitByCaps(
  tasks: UrlTask[],
  before: Map<string, number>,
  traps: TrapsConfig,
): { admitted: UrlTask[]; stopped: { task: UrlTask; reason: CapReason; past: number; recorded: boolean }[] } {
  const seen = new Map(before);
  const admitted: UrlTask[] = [];
  const stopped: { task: UrlTask; reason: CapReason; past: number; recorded: boolean }[] = [];
  for (const task of tasks) {
    const keys = capKeys(task.url, traps);
    const over = keys.find((k) => (seen.get(k.key) ?? 0) >= limitOf(k.reason, traps));
    if (over) {
      const limit = limitOf(over.reason, traps);
      const past = (seen.get(over.key) ?? 0) - limit;
      stopped.push({ task, reason: over.reason, past, recorded: past < limit });
    } else admitted.push(task);
    // A URL its path's variants stopped takes no place of its host's: the host cap counts the
    // URLs that enter the frontier (the gate gives back what the batch's ADD counted for it).
    for (const k of keys)
      if (!hostPlaceGivenBack(over?.reason, k.reason)) seen.set(k.key, (seen.get(k.key) ?? 0) + 1);
  }
  return { admitted, stopped };
}

/** Whether a URL stopped for `stopped` gives back its count on the `counter` cap. */
function hostPlaceGivenBack(stopped: CapReason | undefined, counter: CapReason): boolean {
  return stopped === 'query-variants' && counter === 'host-cap';
}

/**
 * What a batch's stopped URLs give back to the counters its ADD counted them in: a URL stopped by
 * its path's variants, its host's place (a calendar or facet trap used up the host cap and the
 * host's real pages were stopped, helper-47).
 */
export function givenBack(
  stopped: { task: UrlTask; reason: CapReason }[],
  traps: TrapsConfig,
): Map<string, number> {
  const back = new Map<string, number>();
  for (const s of stopped)
    for (const k of capKeys(s.task.url, traps))
      if (hostPlaceGivenBack(s.reason, k.reason)) back.set(k.key, (back.get(k.key) ?? 0) - 1);
  return back;
}

/** The counter of a host's sitemaps (robots.txt lines and index children): limits.sitemapsPerSite. */
export function sitemapCapKey(url: string): string {
  return `cap#sitemaps#${new URL(url).host}`;
}

/** What `urls` add to their hosts' sitemap counters, `each` a URL (1 counted, −1 given back). */
export function sitemapCounts(urls: string[], each: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const url of urls) counts.set(sitemapCapKey(url), (counts.get(sitemapCapKey(url)) ?? 0) + each);
  return counts;
}

/**
 * Splits new sitemaps into admitted and stopped, in order, by their host's count of sitemaps
 * before this batch (`before`, the batch's own added after): at most `max` per host over the crawl.
 */
export function admitSitemaps(
  tasks: UrlTask[],
  before: Map<string, number>,
  max: number,
): { admitted: UrlTask[]; stopped: UrlTask[] } {
  const seen = new Map(before);
  const admitted: UrlTask[] = [];
  const stopped: UrlTask[] = [];
  for (const task of tasks) {
    const key = sitemapCapKey(task.url);
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    (n < max ? admitted : stopped).push(task);
  }
  return { admitted, stopped };
}

/**
 * The soft-404 fingerprint of a page's text: lower-cased, the requested path (raw and decoded) and
 * every digit removed (error pages echo the path, request ids and times), whitespace collapsed.
 */
export function soft404Fingerprint(title: string, text: string, url: string): string {
  const u = new URL(url);
  const echoes = [u.pathname, safeDecode(u.pathname), u.pathname.slice(1), safeDecode(u.pathname).slice(1)]
    .filter((e) => e.length > 1)
    .sort((a, b) => b.length - a.length);
  let t = `${title}\n${text}`.toLowerCase();
  for (const e of echoes) t = t.split(e.toLowerCase()).join(' ');
  t = squeeze(t, true);
  return createHash('sha256').update(t).digest('hex').slice(0, 32);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
