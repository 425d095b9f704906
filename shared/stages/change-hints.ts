/**
 * Sitemap dates: a known page that a sitemap or feed lists as changed (`<lastmod>`, a feed
 * entry's date) after the sitemap's previous read is fetched again by the next refresh cycle,
 * not at its own refresh time (`refresh.maxAge` later).
 *
 * The extract stage cannot do it itself: a page's state is most often a line in a refresh
 * manifest (url-state.ts), filed under its due day, which only the URL's last fetch time names.
 * So it leaves a hint (one S3 object per record that has any: `hints/`), and the refresh cycle,
 * which reads manifests anyway, reviews the future lines of the hinted URLs (refresh-review.ts):
 * a line fetched before the date is due now, its old line superseded by a marker, and its
 * refetch is conditional on the validators it kept (a 304 when the date was wrong).
 *
 * Cost: one PUT per extract record with changed entries; a cycle that finds hints lists and reads
 * them, then reads the manifests of the future days once (as a changed policy's review does).
 */
import { randomUUID } from 'node:crypto';
import { manifestStamp } from '../aws/refresh-manifest.ts';
import type { CrawlConfig } from '../config.ts';
import { parseDuration } from '../crawl/state/duration.ts';
import { isTableKept } from '../crawl/state/url-state.ts';
import { KEYS, PREFIXES } from '../layout.ts';
import type { ChangeHint, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';

/**
 * Hints are read from this long before the cycle's window: one written as the last cycle listed
 * them (its key names the time its extract began) is read by this one. One read twice asks for
 * nothing a fetch since (its line is newer than the date) or a marker (its old line superseded) has not answered.
 */
const HINT_LAG_MS = 10 * 60_000;
/** At most this many hinted URLs a cycle: the rest wait for their refresh time (a bound on memory). */
const HINTS_MAX = 200_000;

/** Writes the hints of one extract record; a URL claimed just now is new and on its way already. */
export async function writeChangeHints(
  deps: StageDeps,
  changed: ChangeHint[],
  fresh: UrlTask[],
  now: string,
  stats: Record<string, number>,
): Promise<void> {
  const claimed = new Set(fresh.map((t) => t.url));
  const hints = changed.filter((h) => !claimed.has(h.url));
  if (hints.length === 0) return;
  await deps.store.putLines(KEYS.changeHints(manifestStamp(now), randomUUID()), hints);
  stats['sitemap-changed'] = (stats['sitemap-changed'] ?? 0) + hints.length;
}

/** The hints written from a little before `from` until `until`: the latest date per URL. */
export async function readChangeHints(
  deps: StageDeps,
  from: string,
  until: string,
): Promise<Map<string, ChangeHint>> {
  const hints = new Map<string, ChangeHint>();
  const start = new Date(Date.parse(from) - HINT_LAG_MS).toISOString();
  const end = `${PREFIXES.hints}${manifestStamp(until)}`;
  for await (const key of deps.store.list(PREFIXES.hints, `${PREFIXES.hints}${manifestStamp(start)}`)) {
    if (key > end) break;
    for (const hint of await deps.store.getLines<ChangeHint>(key)) {
      const seen = hints.get(hint.url);
      if (seen ? hint.changedAt > seen.changedAt : hints.size < HINTS_MAX) hints.set(hint.url, hint);
    }
  }
  return hints;
}

/**
 * Known sitemaps a sitemap names again (an index's children, a moved sitemap's new place), read
 * again now: one the index dates later than its last read, or one it gives no date and that was
 * last read more than half a discovery interval ago. Claimed once, they were read only at their
 * refresh time (`refresh.maxAge`): a page added to a child of an index waited days, though the
 * discovery cycle read the index every hour. A sitemap's state is its table item (url-state.ts),
 * so the item says all: its last read, and the state its refetch carries (`prev`).
 */
export async function sitemapsAgain(
  deps: StageDeps,
  config: CrawlConfig,
  tasks: UrlTask[],
  fresh: UrlTask[],
  now: string,
): Promise<UrlTask[]> {
  const claimed = new Set(fresh.map((t) => t.url));
  const named = new Map<string, UrlTask>();
  for (const t of tasks) if (t.kind === 'sitemap' && !claimed.has(t.url)) named.set(t.url, t);
  if (named.size === 0) return [];
  const items = await deps.urls.getMany([...named.keys()]);
  const readBefore = new Date(
    Date.parse(now) - parseDuration(config.refresh.discoveryInterval) / 2,
  ).toISOString();
  const again: UrlTask[] = [];
  for (const [url, task] of named) {
    const item = items.get(url);
    // Not read yet (claimed, on its way) or forgotten: nothing to read again.
    if (!item || !isTableKept(item) || !item.lastFetched) continue;
    const due = task.lastmod ? task.lastmod > item.lastFetched : item.lastFetched < readBefore;
    if (!due) continue;
    const { lastmod: _date, ...rest } = task;
    again.push({
      ...rest,
      depth: item.depth ?? task.depth,
      queue: 'refresh',
      // Its refresh grid starts again from this read, as a page's made due by a review does: kept,
      // each early read added a maxAge to its next one (five reads in a day put it 5 maxAges
      // off; helper-45's audit), and a child its index stopped dating waited that long.
      prev: { ...item, stored: 'table', nextRefreshAt: now },
    });
  }
  return again;
}
