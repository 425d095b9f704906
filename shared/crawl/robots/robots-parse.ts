/**
 * robots.txt parsing into groups (RFC 9309 §2.2) with the grouping of Google's robots.cc:
 * consecutive user-agent lines share a group, and only an allow/disallow line ends the list of
 * agents (sitemap, crawl-delay and unknown lines do not). The result is a plain JSON object that
 * can be cached (§2.4).
 */
import { asciiLower, forEachRobotsDirective, type RobotsDirective, utf8FromBinary } from './robots-lines.ts';

/** One group (RFC 9309 §2.2.1); groups naming the same set of agents are merged. */
export interface RobotsGroup {
  /** lower-cased product tokens; `*` is the global group */
  readonly agents: readonly string[];
  /** allow patterns, percent-encoding normalized (§2.2.2); empty patterns are dropped */
  readonly allow: readonly string[];
  /** disallow patterns, normalized like `allow`; an empty disallow allows, so it is dropped */
  readonly disallow: readonly string[];
}

/** A parsed robots.txt: JSON-serializable, so it can be cached (RFC 9309 §2.4). */
export interface RobotsTxt {
  readonly groups: readonly RobotsGroup[];
  /**
   * Crawl-delay seconds per agent token (not in RFC 9309: a §2.2.4 "other record" Bing and Yandex
   * honour). A delay belongs to the user-agent lines above it, not to agents named after it.
   */
  readonly crawlDelays: readonly (readonly [agent: string, seconds: number])[];
  /** http(s) sitemap URLs (relative ones resolved), in file order, without duplicates (§2.2.4) */
  readonly sitemaps: readonly string[];
}

/** Counts Google's parser test reports (robots_test.cc RobotsStatsReporter). */
export interface RobotsParseStats {
  /** user-agent, allow, disallow, sitemap and crawl-delay lines */
  validDirectives: number;
  unknownDirectives: number;
  /** number of the last line that held a directive, known or not */
  lastLineSeen: number;
  /** raw values of the sitemap lines */
  sitemaps: string[];
}

interface DraftGroup {
  agents: Set<string>;
  allow: Set<string>;
  disallow: Set<string>;
}

/** RFC 9309 §2.2.1 product token: robots.cc ExtractUserAgent keeps the leading `[a-zA-Z_-]` run. */
export function extractUserAgent(value: string): string {
  return /^[A-Za-z_-]*/.exec(value)?.[0] ?? '';
}

/** The agent a user-agent line names; Google also takes `* anything` as the global agent. */
function agentOf(value: string): string {
  if (value[0] === '*' && (value.length === 1 || /[ \t\n\v\f\r]/.test(value.charAt(1)))) return '*';
  return asciiLower(extractUserAgent(value));
}

/** A non-negative decimal number of seconds; anything else is ignored. */
function parseSeconds(value: string): number | null {
  return /^(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : null;
}

/**
 * Sitemaps are not tied to a group (§2.2.4); only http(s) URLs are kept. A relative one
 * (`Sitemap: /sitemap.xml`, common though the sitemaps protocol asks for a full URL) is resolved
 * against the robots.txt's own URL when it is known, as crawler-commons does for Nutch.
 */
function sitemapUrl(value: string, base: string | undefined): string | null {
  if (value.trim() === '') return null;
  try {
    const url = new URL(utf8FromBinary(value), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Builds groups following robots.cc's RobotsMatcher state (seen_separator_). */
class GroupCollector {
  constructor(private readonly base: string | undefined) {}
  readonly drafts: DraftGroup[] = [];
  readonly delays = new Map<string, number>();
  readonly sitemaps = new Set<string>();
  private current: DraftGroup | null = null;
  private inRules = false;

  add({ key, value }: RobotsDirective): void {
    if (key === 'user-agent') this.addAgent(agentOf(value));
    else if (key === 'sitemap') this.addSitemap(value);
    else if (this.current === null)
      return; // rules before any user-agent line belong to no group
    else if (key === 'allow' || key === 'disallow') this.addRule(this.current, key, value);
    else if (key === 'crawl-delay') this.addDelay(this.current, value);
  }

  private addAgent(agent: string): void {
    // A user-agent line after a rule starts a new group (RFC 9309 §2.2 ABNF `group`).
    if (this.current === null || this.inRules) {
      this.current = { agents: new Set(), allow: new Set(), disallow: new Set() };
      this.drafts.push(this.current);
      this.inRules = false;
    }
    this.current.agents.add(agent);
  }

  private addRule(group: DraftGroup, key: 'allow' | 'disallow', pattern: string): void {
    this.inRules = true;
    // An empty pattern matches with priority 0, which never decides (robots.cc disallow()).
    if (pattern !== '') group[key].add(pattern);
  }

  private addDelay(group: DraftGroup, value: string): void {
    const seconds = parseSeconds(value);
    if (seconds === null) return;
    for (const agent of group.agents) {
      this.delays.set(agent, Math.max(seconds, this.delays.get(agent) ?? 0));
    }
  }

  private addSitemap(value: string): void {
    const url = sitemapUrl(value, this.base);
    if (url !== null) this.sitemaps.add(url);
  }
}

/** RFC 9309 §2.2.1: groups for the same agents are combined; identical agent sets merge here. */
function mergeGroups(drafts: readonly DraftGroup[]): RobotsGroup[] {
  const byAgents = new Map<string, DraftGroup>();
  for (const draft of drafts) {
    const key = [...draft.agents].sort().join('\n');
    const seen = byAgents.get(key);
    if (seen === undefined) {
      byAgents.set(key, draft);
      continue;
    }
    for (const p of draft.allow) seen.allow.add(p);
    for (const p of draft.disallow) seen.disallow.add(p);
  }
  return [...byAgents.values()].map((g) => ({
    agents: [...g.agents],
    allow: [...g.allow],
    disallow: [...g.disallow],
  }));
}

/**
 * Parses robots.txt content (text, or the raw bytes as fetched) into a cacheable RobotsTxt;
 * `robotsUrl`, where it was fetched from, resolves relative Sitemap lines.
 */
export function parseRobotsTxt(content: string | Uint8Array, robotsUrl?: string): RobotsTxt {
  const collector = new GroupCollector(robotsUrl);
  forEachRobotsDirective(content, (directive) => collector.add(directive));
  return {
    groups: mergeGroups(collector.drafts),
    crawlDelays: [...collector.delays],
    sitemaps: [...collector.sitemaps],
  };
}

/** Line statistics of a robots.txt, as Google's parser tests count them. */
export function robotsParseStats(content: string | Uint8Array): RobotsParseStats {
  const stats: RobotsParseStats = { validDirectives: 0, unknownDirectives: 0, lastLineSeen: 0, sitemaps: [] };
  forEachRobotsDirective(content, ({ line, key, value }) => {
    stats.lastLineSeen = line;
    if (key === 'unknown') {
      stats.unknownDirectives++;
      return;
    }
    stats.validDirectives++;
    if (key === 'sitemap') stats.sitemaps.push(utf8FromBinary(value));
  });
  return stats;
}
