/**
 * robots.txt matching (RFC 9309 §2.2.1–§2.2.3) with the semantics of Google's robots.cc
 * RobotsMatcher: the groups naming the agent, else the `*` groups; the longest matching pattern
 * wins; allow wins a tie; `*` matches any run of characters and a final `$` anchors the end.
 */
import { asciiLower } from './robots-lines.ts';
import { extractUserAgent, type RobotsGroup, type RobotsTxt } from './robots-parse.ts';

const NO_MATCH = -1;

/** robots.cc IsValidUserAgentToObey: a non-empty token of `[a-zA-Z_-]` only (RFC 9309 §2.2.1). */
export function isValidUserAgentToObey(userAgent: string | null | undefined): boolean {
  return !!userAgent && extractUserAgent(userAgent) === userAgent;
}

/**
 * The product token of a full User-Agent string: `trawl/1.0 (+https://…)` → `trawl` (§2.2.1);
 * `Mozilla/5.0 (compatible; AcmeBot/1.0)` → `AcmeBot`.
 */
export function userAgentToken(userAgent: string): string {
  const ua = userAgent.trim();
  // `Mozilla/5.0 (compatible; AcmeBot/1.0; +https://…)`, as Googlebot and bingbot present
  // themselves: `Mozilla` is the browsers' prefix, the crawler's own token follows `compatible;`.
  if (/^mozilla\//i.test(ua)) {
    const named = /[(;]\s*compatible;\s*([A-Za-z_-]+)/i.exec(ua)?.[1];
    if (named) return named;
  }
  return extractUserAgent(ua);
}

function firstOf(url: string, chars: string, from: number): number {
  for (let i = from; i < url.length; i++) {
    if (chars.includes(url.charAt(i))) return i;
  }
  return -1;
}

/** robots.cc GetPathParamsQuery: the path, params and query of a URL, without the fragment. */
export function getPathParamsQuery(url: string): string {
  // Initial two slashes are ignored (a scheme-relative URL).
  const searchStart = url.startsWith('//') ? 2 : 0;
  const earlyPath = firstOf(url, '/?;', searchStart);
  let protocolEnd = url.indexOf('://', searchStart);
  // A `://` after the start of the path, params or query is not a scheme separator.
  if (earlyPath !== -1 && earlyPath < protocolEnd) protocolEnd = -1;
  protocolEnd = protocolEnd === -1 ? searchStart : protocolEnd + 3;
  const pathStart = firstOf(url, '/?;', protocolEnd);
  if (pathStart === -1) return '/';
  const hashPos = url.indexOf('#', searchStart);
  if (hashPos !== -1 && hashPos < pathStart) return '/';
  const path = url.slice(pathStart, hashPos === -1 ? url.length : hashPos);
  return path.startsWith('/') ? path : `/${path}`;
}

/** Matching with `*` and a final `$` (RFC 9309 §2.2.3), as robots.cc Matches does it. */
export function matchesPattern(path: string, pattern: string): boolean {
  if (!pattern.includes('*')) {
    // Fast path: without a wildcard a pattern is a prefix, or the whole path when `$`-anchored.
    return pattern.endsWith('$') ? path === pattern.slice(0, -1) : path.startsWith(pattern);
  }
  // pos[0..count) are the path offsets the pattern prefix read so far can end at, ascending.
  const pos = new Int32Array(path.length + 1);
  let count = 1;
  for (let p = 0; p < pattern.length; p++) {
    const c = pattern.charAt(p);
    if (c === '$' && p === pattern.length - 1) return pos[count - 1] === path.length;
    if (c === '*') {
      count = path.length - pos[0]! + 1;
      for (let i = 1; i < count; i++) pos[i] = pos[i - 1]! + 1;
      continue;
    }
    let next = 0;
    for (let i = 0; i < count; i++) {
      const at = pos[i]!;
      if (at < path.length && path.charAt(at) === c) pos[next++] = at + 1;
    }
    count = next;
    if (count === 0) return false;
  }
  return true;
}

/** Priority of a pattern for the path: its length in octets when it matches (§2.2.2), else -1. */
function priority(path: string, pattern: string): number {
  return matchesPattern(path, pattern) ? pattern.length : NO_MATCH;
}

/** Google: an allow of `…/index.htm(l)` also allows the directory itself, `…/`. */
function allowPriority(path: string, pattern: string): number {
  const direct = priority(path, pattern);
  if (direct !== NO_MATCH) return direct;
  const slash = pattern.lastIndexOf('/');
  if (slash === -1 || !pattern.startsWith('/index.htm', slash)) return NO_MATCH;
  return priority(path, `${pattern.slice(0, slash + 1)}$`);
}

/** RFC 9309 §2.2.1: the agent when a group names it (case-insensitively), else `*`. */
function groupKey(robots: RobotsTxt, userAgent: string): string {
  const agent = asciiLower(userAgent);
  return robots.groups.some((g) => g.agents.includes(agent)) ? agent : '*';
}

/** RFC 9309 §2.2.1: the groups naming the agent (combined, as Google does), else the `*` groups. */
export function groupsFor(robots: RobotsTxt, userAgent: string): readonly RobotsGroup[] {
  const key = groupKey(robots, userAgent);
  return robots.groups.filter((g) => g.agents.includes(key));
}

/**
 * Whether `userAgent` (a product token, see userAgentToken) may fetch `url` (percent-encoded,
 * RFC 3986). Matches on path+params+query; the longest match wins and allow wins a tie (§2.2.2).
 */
export function isAllowed(robots: RobotsTxt, userAgent: string, url: string): boolean {
  return disallowedBy(robots, userAgent, url) === null;
}

/** The `Disallow` pattern that keeps `userAgent` from `url` (the longest match, as decided above); null when allowed. */
export function disallowedBy(robots: RobotsTxt, userAgent: string, url: string): string | null {
  const path = getPathParamsQuery(url);
  let allow = NO_MATCH;
  let disallow = NO_MATCH;
  let rule: string | null = null;
  for (const group of groupsFor(robots, userAgent)) {
    for (const pattern of group.allow) allow = Math.max(allow, allowPriority(path, pattern));
    for (const pattern of group.disallow) {
      const p = priority(path, pattern);
      if (p > disallow) [disallow, rule] = [p, pattern];
    }
  }
  // robots.cc disallow(): a priority-0 (empty) match never decides; no match allows (§2.2.2).
  return disallow > 0 && disallow > allow ? rule : null;
}

function crawlDelaySeconds(robots: RobotsTxt, key: string): number | null {
  return robots.crawlDelays.find(([agent]) => agent === key)?.[1] ?? null;
}

/** Crawl-delay for the agent in ms, from the groups that apply to it (as for rules); null if none. */
export function crawlDelayMs(robots: RobotsTxt, userAgent: string): number | null {
  const seconds = crawlDelaySeconds(robots, groupKey(robots, userAgent));
  return seconds === null ? null : Math.round(seconds * 1000);
}

/**
 * RFC 9309 §2.2.2: a percent-encoded unreserved character (ALPHA, DIGIT, `-._~`) is the
 * character itself. The crawler's URLs are normalized that way (normalize-url.ts), so its
 * patterns must be too: `Disallow: /%7Ejoe/` let the crawler fetch `/~joe/…`.
 */
export function decodeUnreserved(pattern: string): string {
  return pattern.replace(/%([0-9A-Fa-f]{2})/g, (escaped, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(c) ? c : escaped;
  });
}

/**
 * The robots.txt reduced to one group for one agent, its patterns in the crawler's URL form
 * (`decodeUnreserved`): smaller to cache, same answers for that agent's normalized URLs.
 */
export function robotsForAgent(robots: RobotsTxt, userAgent: string): RobotsTxt {
  const key = groupKey(robots, userAgent);
  const groups = groupsFor(robots, userAgent);
  const seconds = crawlDelaySeconds(robots, key);
  return {
    groups:
      groups.length === 0
        ? []
        : [
            {
              agents: [key],
              allow: [...new Set(groups.flatMap((g) => g.allow.map(decodeUnreserved)))],
              disallow: [...new Set(groups.flatMap((g) => g.disallow.map(decodeUnreserved)))],
            },
          ],
    crawlDelays: seconds === null ? [] : [[key, seconds]],
    sitemaps: robots.sitemaps,
  };
}
