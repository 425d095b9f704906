/**
 * robots.txt per host: memory (per invocation) → hosts table (shared, with expiry) → the site.
 * RFC 9309 §2.3.1: 4xx means no restrictions; 5xx or unreachable means complete disallow for a while.
 */
import { awaitLeaseHolder, type HostTable } from '../../aws/host-table.ts';
import type { CrawlConfig } from '../../config.ts';
import {
  ALLOW_ALL,
  crawlDelayMs,
  DISALLOW_ALL,
  parseRobotsTxt,
  type RobotsTxt,
  robotsForAgent,
  robotsForStatus,
  robotsUrlFor,
  userAgentToken,
} from '../../crawl/robots/robots.ts';
import { PROXY_ERROR_CODES } from '../../crawl/state/classify.ts';
import { fetchUrl } from '../../net/fetcher.ts';
import type { FetchProxy } from '../../net/proxy.ts';
import { siteConnection } from '../fetch-context.ts';
import { type RobotsSlot, type RobotsTurns, SLOT_MARGIN_MS } from './host-turns.ts';

/** How long a parsed robots.txt is trusted (RFC 9309 §2.4: SHOULD NOT be used for more than 24 hours). */
export const ROBOTS_TTL_MS = 24 * 3_600_000;
/** After a server error the site is retried sooner. */
const ROBOTS_ERROR_TTL_MS = 10 * 60_000;
/** The shortest wait before a robots.txt that answered with a Retry-After is asked again. */
const ROBOTS_MIN_RETRY_MS = 1_000;
/**
 * After the proxy's own refusal or failure (fetch.proxy), sooner still: it says nothing about the
 * site, and a proxy put right (its login, its policy) should let the crawl on within a minute.
 */
const PROXY_ERROR_TTL_MS = 60_000;
/** RFC 9309 §2.5: parse at least 500 KiB. */
const ROBOTS_MAX_BYTES = 500 * 1024;
/** The robots.txt fetch lease: longer than a robots fetch may take (its timeout is ≤ 15 s). */
const LEASE_MS = 20_000;
const LEASE_WAIT_MS = 20_000;
const LEASE_POLL_MS = 150;
/** How long a robots.txt request waits for its host's turn at most (another worker's run of slots). */
const ROBOTS_TURN_WAIT_MS = 10_000;
/** The slots a robots.txt request took, per host (a redirect may make two requests). */
type Booked = Map<string, RobotsSlot>;
/** DynamoDB items are at most 400 KB: a bigger parsed file stays in memory only. */
const MAX_STORED_CHARS = 300_000;
/**
 * Failures that reached no server: the crawler's own refusals (SSRF guard, a bad `fetch.resolve`)
 * and a host name that does not exist (DNS NXDOMAIN). The site is not "unreachable" (RFC 9309
 * §2.3.1.4: there is no server to ask), and the page fetch meets the same failure and records it
 * as the URL's own error: a host not found is a permanent error (seed 001), where a "robots.txt
 * unavailable" made it a temporary one while a cached robots.txt made it permanent.
 */
const NO_SERVER = new Set(['private-address', 'bad-resolve', 'dns-not-found']);

/**
 * An error reading robots.txt that is not the site's robots.txt's but every page's of the host;
 * null for the others. The proxy's (it turned the request away or could not reach the site): no
 * answer of the site's, so neither "no robots.txt" (a 407 read as the site's 4xx allowed the whole
 * site for 24 h) nor "the site's robots.txt is unavailable"; its pages are told why, a temporary
 * error. The host's certificate (tls-error): its pages meet the same refusal, a permanent error
 * (seed 001, other connection errors), as they did when a cached robots.txt let them be fetched,
 * not a temporary "robots.txt unavailable" that kept a broken host's pages for days.
 */
function hostError(code: string): { ttlMs: number; errorKind?: 'permanent' } | null {
  if (PROXY_ERROR_CODES.has(code)) return { ttlMs: PROXY_ERROR_TTL_MS };
  if (code === 'tls-error') return { ttlMs: ROBOTS_ERROR_TTL_MS, errorKind: 'permanent' };
  return null;
}

/**
 * A robots.txt as cached: `unavailable` names why the whole site counts as disallowed for now, and
 * `errorCode` the error its pages get when that is not the site's robots.txt's doing (hostError:
 * the proxy's proxy-refused, proxy-failed; the host's tls-error), `errorKind` when that error is
 * permanent; without it they get a temporary `robots-unavailable`.
 */
export type CachedRobots = RobotsTxt & {
  unavailable?: string;
  errorCode?: string;
  errorKind?: 'permanent';
  /** not read: the host stays taken this long (its turn did not come in time); never cached */
  notDueSeconds?: number;
  /**
   * Unavailable with a Retry-After (a 429 or 503 of robots.txt): asked again from then (epoch ms),
   * and the pages that needed it retried after it. Without one a brief 429 kept the whole site
   * disallowed for ROBOTS_ERROR_TTL_MS, its pages' retries all spent inside it (helper-44's audit).
   */
  retryAt?: number;
};

export interface RobotsCache {
  get(url: string): Promise<CachedRobots>;
}

/**
 * Creates a robots.txt cache bound to one config and host table.
 */
export function createRobotsCache(
  hosts: HostTable,
  config: CrawlConfig,
  now: () => number,
  opts: {
    /** runs each robots.txt request (the fetch stage's bound on requests in flight) */
    limit?: <T>(request: () => Promise<T>) => Promise<T>;
    /** the hosts' turns (host-turns.ts); without them a robots.txt request takes none */
    turns?: RobotsTurns;
    /** `fetch.proxy` with its login resolved (fetch-auth.ts proxyFor): robots.txt goes through it too */
    proxy: FetchProxy | null;
    /** how long a robots.txt request waits for its host's turn (ROBOTS_TURN_WAIT_MS; tests) */
    turnWaitMs?: number;
  },
): RobotsCache {
  const limit = opts.limit ?? (<T>(request: () => Promise<T>) => request());
  // The groups kept are this agent's: a copy stored for another (fetch.userAgent changed) is not ours.
  const agent = userAgentToken(config.fetch.userAgent);
  const ours = (stored: string | null): CachedRobots | null => {
    if (stored === null) return null;
    const { agent: storedFor, ...robots } = JSON.parse(stored) as CachedRobots & { agent?: string };
    return storedFor === agent ? robots : null;
  };
  const store = (robotsUrl: string, robots: RobotsTxt, expiresAt: number) =>
    hosts.putRobots(robotsUrl, JSON.stringify({ ...robots, agent }), expiresAt);
  const memory = new Map<string, { robots: RobotsTxt; expiresAt: number }>();
  const inflight = new Map<string, Promise<RobotsTxt>>();

  /**
   * Another worker holds the fetch lease: wait for what it stores, a bounded while. A failed look
   * is only "not yet": the holder may be a crashed invocation whose lease runs out, and one lost
   * read among a hundred must not fail the worker that waits for it.
   */
  function awaitOther(robotsUrl: string): Promise<CachedRobots | null> {
    return awaitLeaseHolder(
      // A failed read is only "not yet".
      async () => ours(await hosts.getRobots(robotsUrl, now()).catch(() => null)),
      LEASE_WAIT_MS,
      LEASE_POLL_MS,
    );
  }

  async function load(robotsUrl: string): Promise<CachedRobots> {
    let stored = ours(await hosts.getRobots(robotsUrl, now()));
    // One worker fetches a host's robots.txt; the others wait for its answer in the hosts table.
    const leasedAt = now();
    const leased = !stored && (await hosts.lease(`robots#${robotsUrl}`, leasedAt, LEASE_MS));
    if (!stored && !leased) stored = await awaitOther(robotsUrl);
    if (stored) return remember(robotsUrl, stored, ttlOf(stored));
    const booked: Booked = new Map();
    const read = { url: robotsUrl };
    const res = await fetchFollowing(robotsUrl, booked, read);
    // The host's turn did not come: nothing was sent, nothing is known (not cached), and the lease
    // is given back for whichever worker gets the turn.
    if (res.kind === 'not-due') {
      if (leased) await hosts.endLease(`robots#${robotsUrl}`, leasedAt + LEASE_MS).catch(() => false);
      return { ...DISALLOW_ALL, notDueSeconds: res.requeueSeconds };
    }
    const pagesError = res.kind === 'error' ? hostError(res.code) : null;
    if (res.kind === 'error' && pagesError) {
      // Disallowed for a while, the pages given that error (not robots-unavailable): stored too, so
      // workers waiting on the lease get the answer.
      const robots: CachedRobots = { ...DISALLOW_ALL, unavailable: res.message, errorCode: res.code };
      if (pagesError.errorKind) robots.errorKind = pagesError.errorKind;
      await store(robotsUrl, robots, now() + pagesError.ttlMs);
      return remember(robotsUrl, robots, pagesError.ttlMs);
    }
    if (res.kind === 'error' && NO_SERVER.has(res.code)) {
      // Stored too (briefly), so workers waiting on the lease get their answer.
      await store(robotsUrl, ALLOW_ALL, now() + ROBOTS_ERROR_TTL_MS);
      return remember(robotsUrl, ALLOW_ALL, ROBOTS_ERROR_TTL_MS);
    }
    let robots: RobotsTxt;
    let ttl = ROBOTS_TTL_MS;
    // Only the groups that apply to our agent are kept: same answers, a much smaller item.
    if (res.kind === 'ok') robots = robotsForAgent(parseRobotsTxt(res.body, robotsUrl), agent);
    else if (res.kind === 'error' && res.status && robotsForStatus(res.status) === 'allow-all')
      robots = ALLOW_ALL;
    else if (res.kind === 'redirect' || res.kind === 'skipped' || res.kind === 'not-modified')
      robots = ALLOW_ALL;
    else {
      // RFC 9309 §2.3.1.3–4: a server error or an unreachable site means complete disallow, for a while.
      const why = res.status ? `HTTP ${res.status}` : res.code;
      robots = { ...DISALLOW_ALL, unavailable: why } as CachedRobots;
      ttl = ROBOTS_ERROR_TTL_MS;
      // The server says when to come back: then, if sooner (a site cannot park it longer).
      const after = res.kind === 'error' ? res.retryAfterMs : undefined;
      if (after !== undefined && after < ttl) {
        ttl = Math.max(ROBOTS_MIN_RETRY_MS, after);
        (robots as CachedRobots).retryAt = now() + ttl;
      }
    }
    const own = new URL(robotsUrl).host;
    await holdForCrawlDelay(own, booked, robots);
    // Redirected to another host's robots.txt: what was read is that host's own file, and its
    // Crawl-delay holds that host from the request too (its next page came 1.4 s after it under a
    // 2 s Crawl-delay; helper-44's audit).
    const last = [...booked.keys()].at(-1);
    if (res.kind === 'ok' && last !== undefined && last !== own && isRobotsPath(read.url))
      await holdForCrawlDelay(last, booked, robots);
    if (JSON.stringify(robots).length <= MAX_STORED_CHARS) await store(robotsUrl, robots, now() + ttl);
    return remember(robotsUrl, robots, ttl);
  }

  /**
   * The robots.txt request takes its host's turn as a page request does (HostTurns books the same
   * slots in the hosts table), so the site's first page follows it by the delay, not a few hundred
   * ms later (seen in a site's own log: 206-458 ms with a 0.5-2 s delay). Like a page's, the turn
   * is taken once connected and a slot whose start has passed unused is not used (fetcher.ts:
   * `late`). A host still taken after ROBOTS_TURN_WAIT_MS (a long Crawl-delay, a back-off, another
   * worker's run of slots) is not asked: the pages that needed it go back until it is free.
   */
  async function takeTurn(
    host: string,
    booked: Booked,
    deadline: number,
  ): Promise<{ sendBy?: number } | { requeueSeconds: number }> {
    const slot = await opts.turns?.robotsTurn(host, deadline);
    if (!slot) return {};
    if ('busyForMs' in slot) return { requeueSeconds: Math.ceil(slot.busyForMs / 1000) };
    booked.set(host, slot);
    return slot.sendBy === undefined ? {} : { sendBy: slot.sendBy };
  }

  /**
   * A Crawl-delay longer than the config's wait holds the host from the robots.txt request on, so
   * the first page keeps that gap too. A write that fails (another worker booked the host since)
   * leaves the host to its bookings.
   */
  async function holdForCrawlDelay(host: string, booked: Booked, robots: RobotsTxt): Promise<void> {
    const asked = Math.min(crawlDelayMs(robots, agent) ?? 0, config.limits.crawlDelayMs);
    const last = booked.get(host); // the host's last robots.txt request (a redirect may make two)
    // Only a longer delay: a host that asks for none had a slot write of its own for nothing.
    if (!last || asked <= config.fetch.waitBetweenRequestsMs) return;
    // From the end of the slot it took (its start, with no wait configured), plus the margin.
    const until = last.start + asked + SLOT_MARGIN_MS;
    if (until > last.end) await opts.turns?.hold(host, last.end, until);
  }

  /** `read.url` ends as the URL the last request went to. */
  async function fetchFollowing(first: string, booked: Booked, read: { url: string }) {
    let target = first;
    const deadline = now() + (opts.turnWaitMs ?? ROBOTS_TURN_WAIT_MS);
    // RFC 9309 §2.3.1.2: follow at least five consecutive redirects.
    for (let hop = 0; ; hop++) {
      const host = new URL(target).host;
      let res: Awaited<ReturnType<typeof fetchUrl>>;
      // A slot missed (a slow connect, a stall) is booked again, until the deadline.
      do
        res = await limit(() =>
          fetchUrl(target, {
            // Kept alive: the site's first page usually follows on the same connection.
            ...siteConnection(config, opts.proxy),
            timeoutMs: Math.min(config.fetch.timeoutMs, 15_000),
            maxBytes: ROBOTS_MAX_BYTES,
            maxHeaderBytes: config.limits.headerBytes,
            ignoredMimeTypes: [],
            metadataFirst: false,
            now,
            // Past the deadline (slots missed until then) nothing is sent: the host is busy.
            turn: () =>
              now() < deadline || !opts.turns
                ? takeTurn(host, booked, deadline)
                : Promise.resolve({ requeueSeconds: 1 }),
          }),
        );
      while (res.kind === 'late');
      read.url = target;
      if (res.kind !== 'redirect' || !res.location || hop >= 5) return res;
      target = res.location;
    }
  }

  function ttlOf(robots: CachedRobots): number {
    if (robots.errorCode) return PROXY_ERROR_TTL_MS;
    if (robots.retryAt !== undefined) return Math.max(0, robots.retryAt - now());
    return robots.unavailable ? ROBOTS_ERROR_TTL_MS : ROBOTS_TTL_MS;
  }

  function remember(key: string, robots: RobotsTxt, ttl: number): RobotsTxt {
    memory.set(key, { robots, expiresAt: now() + ttl });
    return robots;
  }

  return {
    async get(url) {
      const robotsUrl = robotsUrlFor(url);
      const hit = memory.get(robotsUrl);
      if (hit && hit.expiresAt > now()) return hit.robots;
      let p = inflight.get(robotsUrl);
      if (!p) {
        p = load(robotsUrl).finally(() => inflight.delete(robotsUrl));
        inflight.set(robotsUrl, p);
      }
      return p;
    },
  };
}

/** Whether a URL is a site's robots.txt (where a redirected robots.txt request ended). */
function isRobotsPath(url: string): boolean {
  try {
    return new URL(url).pathname === '/robots.txt';
  } catch {
    return false;
  }
}
