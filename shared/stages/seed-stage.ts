/**
 * The seed stage: puts the start URLs (and sitemaps/feeds from the config and robots.txt
 * `Sitemap:` lines) into the user source. It runs at the start of a crawl and on every
 * discovery cycle (seed 004: start URLs are visited again and new pages found).
 */
import type { CrawlConfig } from '../config.ts';
import { robotsSitemaps } from '../crawl/robots/robots.ts';
import { createUrlDecider, sitemapsOf, startTasks, type UrlDecider } from '../crawl/rules/decide.ts';
import { mapLimit } from '../crawl/state/concurrency.ts';
import { isTableKept } from '../crawl/state/url-state.ts';
import { maskUserInfo } from '../crawl/url/mask-url.ts';
import { sitemapCounts } from '../crawl/url/traps.ts';
import type { UrlItem, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { proxyFor } from './fetch-auth.ts';
import { HostTurns } from './politeness/host-turns.ts';
import { createRobotsCache } from './politeness/robots-cache.ts';
import { recordRefreshPolicy } from './refresh-review.ts';
import { decidedUnder, sendTasks } from './send-tasks.ts';

/** A pending start URL or sitemap a seed queued is queued again by a later seed after this long. */
const RESEND_PENDING_MS = 24 * 3600_000;
/** The hosts-table value: the claim time up to which every seed's claims were sent. */
const SEEDS_SENT_KEY = 'seeds-sent';

/**
 * Whether a pending URL's task is in the frontier already: claimed by a seed at or before
 * `sentUpTo` (every seed that finished sent what it claimed, and the pending URLs it found
 * unsent), less than a day ago.
 */
function sentBySeed(item: UrlItem, sentUpTo: string | null, now: number): boolean {
  const claimed = item.claimedBy?.startsWith('seed:') ? item.claimedBy.slice('seed:'.length) : null;
  if (!claimed || !sentUpTo || claimed > sentUpTo) return false;
  return now - Date.parse(claimed) < RESEND_PENDING_MS;
}

export interface SeedSummary {
  startUrls: number;
  sitemaps: number;
  rejected: string[];
}

/** Seeds one crawl or discovery cycle. */
export async function runSeedStage(deps: StageDeps): Promise<SeedSummary> {
  const config = await deps.loadConfig();
  const decider = createUrlDecider(config);
  const summary: SeedSummary = { startUrls: 0, sitemaps: 0, rejected: [] };
  const tasks = startTasks(config, decider, summary.rejected);
  summary.startUrls = tasks.length;
  for (const url of await sitemapUrls(deps, config, tasks, decider, summary)) {
    tasks.push({ url, depth: 0, queue: 'user', index: false, follow: true, priority: 0, kind: 'sitemap' });
    summary.sitemaps++;
  }
  const now = new Date(deps.now()).toISOString();
  const existing = await deps.urls.getMany(tasks.map((t) => t.url));
  // Known start URLs keep their state (seed 002) but are fetched again, conditionally. Start URLs
  // and sitemaps keep their state in the table (url-state.ts), so the item is all there is.
  // Every seed claim up to this time was sent by a seed that finished (written below, after its send).
  const sentUpTo = await deps.hosts.getValue(SEEDS_SENT_KEY, true);
  const queued = tasks.filter((t) => {
    const item = existing.get(t.url);
    if (item && isTableKept(item)) t.prev = { ...item, stored: 'table' };
    // Claimed by a seed that sent it, not yet recorded: its task is in the frontier (a copy at
    // each resumed run reached the site again). A day later it is queued again, in case that task
    // was lost (the frontier keeps messages 7 days).
    else if (item && sentBySeed(item, sentUpTo, deps.now())) return false;
    // Claimed but not yet recorded, and maybe never sent (a seed that failed after its claims):
    // queued, and maybe a second copy; the index stage checks the URL's state before recording it again.
    else if (item) t.redelivered = true;
    // With orphans on, a start page whose links are followed is fetched whole: a 304 names no links.
    if (item?.docBulk && !(config.refresh.orphanGrace && t.follow))
      t.conditional = { etag: item.etag ?? undefined, lastModified: item.lastModified ?? undefined };
    return true;
  });
  const fresh = tasks.filter((t) => !existing.has(t.url));
  await deps.urls.claim(fresh, `seed:${now}`, now);
  // New sitemaps count towards limits.sitemapsPerSite for the whole crawl (trap-gate.ts: the
  // children of sitemap indexes are admitted while their host's count is under it).
  const newSitemaps = fresh.filter((t) => t.kind === 'sitemap').map((t) => t.url);
  if (newSitemaps.length > 0) await deps.hosts.addCounts(sitemapCounts(newSitemaps, 1));
  await sendTasks(deps, decidedUnder(config, queued));
  // Only once sent: a later seed finds this seed's claims (and those it queued again) sent. One
  // write a seed, none a URL. The time never moves back (`refresh --now` moves the crawl's clock).
  if (!sentUpTo || now > sentUpTo) await deps.hosts.putValue(SEEDS_SENT_KEY, now);
  // The policy the pages' refresh times are fixed under, from the crawl's first seed on.
  await recordRefreshPolicy(deps, config);
  await deps.kickFetch();
  return summary;
}

async function sitemapUrls(
  deps: StageDeps,
  config: CrawlConfig,
  starts: UrlTask[],
  decider: UrlDecider,
  summary: SeedSummary,
): Promise<string[]> {
  // In the form every other URL is kept in (`HTTP://Host/./s.xml#x` and `http://host/s.xml` are one sitemap).
  const urls = new Set(sitemapsOf(config, decider));
  // The start sites' robots.txt requests take their hosts' turns, as the fetch stage's do.
  const turns = new HostTurns(deps, config, Number.POSITIVE_INFINITY);
  // robots.txt goes through fetch.proxy as the pages do, with its login.
  const robots = createRobotsCache(deps.hosts, config, deps.now, {
    turns,
    proxy: await proxyFor(config, deps),
  });
  const origins = [...new Set(starts.map((t) => new URL(t.url).origin))];
  // An unreachable or broken robots.txt is an answer (cached by the robots cache); what throws here
  // is the hosts table or S3 failing. The seed then fails and is retried: carrying on would drop
  // the site's sitemaps from this cycle without a trace. The sites are read fetch.concurrency at a
  // time (one after another, 64 sites 200 ms away took 18 s), their lines taken in origin order.
  const found = await mapLimit(origins, config.fetch.concurrency, async (origin) =>
    robotsSitemaps(await robots.get(`${origin}/`)),
  );
  for (const [i, origin] of origins.entries())
    for (const s of robotsSitemapsInScope(found[i] ?? [], origin, decider, config, summary)) urls.add(s);
  return [...urls];
}

/**
 * robots.txt `Sitemap:` lines: the site's own sitemaps are read (`.xml` is an ignored extension,
 * like a sitemap index's children); one on another host must be in scope like a link, so a
 * robots.txt cannot send the crawler anywhere. At most limits.sitemapsPerSite per site.
 */
export function robotsSitemapsInScope(
  lines: string[],
  origin: string,
  decider: UrlDecider,
  config: CrawlConfig,
  summary: SeedSummary,
): string[] {
  const kept: string[] = [];
  const max = config.limits.sitemapsPerSite;
  for (const line of lines) {
    const d = decider.decide(line, { depth: 0, isStart: true });
    const own = d.accepted && d.normalized !== null && new URL(d.normalized).origin === origin;
    // Another host's: in scope as a link to it is, its extension aside (the reason said is that judgement's).
    const linked =
      own || !d.accepted ? d : decider.decide(line, { depth: 0, base: `${origin}/`, sitemap: true });
    if (!own && !linked.accepted) {
      summary.rejected.push(`${maskUserInfo(line)}: robots.txt Sitemap: out of scope (${linked.reason})`);
    } else if (kept.length >= max) {
      summary.rejected.push(
        `${maskUserInfo(line)}: robots.txt Sitemap: over limits.sitemapsPerSite (${max})`,
      );
    } else kept.push(d.normalized as string);
  }
  return kept;
}
