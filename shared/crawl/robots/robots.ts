/**
 * The robots exclusion protocol (RFC 9309) with Google's parsing and matching semantics
 * (github.com/google/robotstxt). Pure: the caller fetches `robotsUrlFor(url)`, maps the status
 * with `robotsForStatus`, parses the body, caches the JSON result and asks `isAllowed`.
 */
import type { RobotsTxt } from './robots-parse.ts';

export { escapePattern, MAX_ROBOTS_BYTES } from './robots-lines.ts';
export {
  crawlDelayMs,
  disallowedBy,
  getPathParamsQuery,
  isAllowed,
  isValidUserAgentToObey,
  matchesPattern,
  robotsForAgent,
  userAgentToken,
} from './robots-match.ts';
export {
  parseRobotsTxt,
  type RobotsGroup,
  type RobotsParseStats,
  type RobotsTxt,
  robotsParseStats,
} from './robots-parse.ts';

/** What to do with a robots.txt response: parse it, or act as if it allowed or disallowed all. */
export type RobotsDisposition = 'parse' | 'allow-all' | 'disallow-all';

/** No rules: everything is allowed (RFC 9309 §2.3.1.3, robots.txt unavailable). */
export const ALLOW_ALL: RobotsTxt = Object.freeze({
  groups: Object.freeze([]),
  crawlDelays: Object.freeze([]),
  sitemaps: Object.freeze([]),
});

/** `User-agent: * / Disallow: /`: nothing is allowed (RFC 9309 §2.3.1.4, robots.txt unreachable). */
export const DISALLOW_ALL: RobotsTxt = Object.freeze({
  groups: Object.freeze([
    Object.freeze({ agents: Object.freeze(['*']), allow: Object.freeze([]), disallow: Object.freeze(['/']) }),
  ]),
  crawlDelays: Object.freeze([]),
  sitemaps: Object.freeze([]),
});

/**
 * Maps the final HTTP status of the robots.txt fetch (after redirects, §2.3.1.2) to a disposition.
 * 2xx: parse (§2.3.1.1). 4xx: unavailable, allow all (§2.3.1.3) — except 429, which Google treats
 * like a server error. 5xx, 429 and anything else, 0 for unreachable included: disallow all
 * (§2.3.1.4); the caller retries after the cache expiry.
 */
export function robotsForStatus(status: number): RobotsDisposition {
  if (status >= 200 && status < 300) return 'parse';
  if (status >= 400 && status < 500 && status !== 429) return 'allow-all';
  // §2.3.1.2: more than five redirects MAY be treated as unavailable; a final 3xx is that case.
  if (status >= 300 && status < 400) return 'allow-all';
  return 'disallow-all';
}

/** scheme://host[:port]/robots.txt for a URL's origin (RFC 9309 §2.3); throws TypeError if malformed. */
export function robotsUrlFor(url: string): string {
  // WHATWG URL lower-cases scheme and host, drops user info and a default port.
  const { protocol, host } = new URL(url);
  return `${protocol}//${host}/robots.txt`;
}

/** Absolute sitemap URLs the robots.txt lists (global, not tied to a group). */
export function robotsSitemaps(robots: RobotsTxt): string[] {
  return [...robots.sitemaps];
}
