/**
 * Where a URL's state lives, decided without I/O. Every URL has one item in the URL table: its
 * claim (the conditional write that makes "enqueued once per crawl" true). The index stage adds
 * one more table write only where the table must answer by key — error states (`clear-errors`,
 * retries), start URLs and sitemaps (each discovery cycle re-reads them), compound elements, and
 * any URL already kept there. Every other URL's state after a fetch is a line in the refresh
 * manifests (S3), which cost a share of one PUT instead of a write unit ($0.625 per million).
 */
import type { PageOutcome, UrlItem } from '../../types.ts';

/** True when the table item is the URL's whole state (the index stage wrote it after a fetch). */
export function isTableKept(item: UrlItem): boolean {
  return item.stored === 'table' || (item.stored === undefined && Boolean(item.lastFetched));
}

/** Whether the index stage keeps this URL's new state in the table. */
export function keepsInTable(outcome: PageOutcome, prev: UrlItem | undefined): boolean {
  return (
    outcome.state === 'error' ||
    outcome.task.depth === 0 ||
    outcome.task.kind === 'sitemap' ||
    outcome.element === true ||
    (prev !== undefined && isTableKept(prev))
  );
}

/** Orders two state lines of one URL: the later fetch wins, then the later write. */
export function isNewerLine(a: UrlItem, b: UrlItem | undefined): boolean {
  if (!b) return true;
  const fa = a.lastFetched ?? '';
  const fb = b.lastFetched ?? '';
  if (fa !== fb) return fa > fb;
  const [wa, wb] = [a.at ?? '', b.at ?? ''];
  return wa !== wb ? wa > wb : (a.nextRefreshAt ?? '') > (b.nextRefreshAt ?? '');
}

/** Keeps `line` in `newest` when it is the newest line of its URL so far. */
export function keepNewest(newest: Map<string, UrlItem>, line: UrlItem): void {
  if (isNewerLine(line, newest.get(line.url))) newest.set(line.url, line);
}

/**
 * A URL's current state from its table item and its newest state line. A line older than the
 * claim belongs to a URL forgotten since (404 on refresh, clear-errors) and found again; a line
 * without an item belongs to a forgotten URL. The result carries `stored` so whoever queues the
 * URL again knows where its next state goes.
 */
export function resolveState(item: UrlItem | undefined, line: UrlItem | undefined): UrlItem | undefined {
  if (!item) return undefined;
  if (isTableKept(item)) return { ...item, stored: 'table' };
  if (line && (!item.discoveredAt || (line.lastFetched ?? '') >= item.discoveredAt)) {
    const { claimedBy: _claim, ...claim } = item;
    // The claim carries the link stamp (a line's copy is as old as the fetch that wrote it).
    return keepLaterStamps({ ...claim, ...line, stored: 'line' }, item);
  }
  return item;
}

/** A table item or a manifest line, tagged so both travel in one stream sorted by URL (cli/session.ts). */
export type StateRecord = { item: UrlItem } | { line: UrlItem };

export const recordUrl = (r: StateRecord): string => ('item' in r ? r.item : r.line).url;

/** A URL's current state from all of its records (one group of that stream), as `resolveState`. */
export function resolveRecords(records: StateRecord[]): UrlItem | undefined {
  let item: UrlItem | undefined;
  let line: UrlItem | undefined;
  for (const r of records) {
    if ('item' in r) item = r.item;
    else if (isNewerLine(r.line, line)) line = r.line;
  }
  return resolveState(item, line);
}

/** When a URL was last reached by a link or a sitemap entry: its stamp, else its claim. */
export function reachedAt(item: UrlItem): string | undefined {
  return laterTime(item.reachedAt, item.discoveredAt);
}

/**
 * Stamps no write may move back (orphans): when a link or a sitemap last reached the URL, and
 * when its links were last read. Whoever writes a whole item from a state read earlier (a refresh
 * task's, a scan's) folds in the later stamps of the item as it is now.
 */
export const LATER_KEPT = ['reachedAt', 'linksReadAt'] as const;

/** `item` with each of {@link LATER_KEPT} the later of its own and `current`'s. */
export function keepLaterStamps<T extends Partial<UrlItem>>(
  item: T,
  current: Partial<UrlItem> | undefined,
): T {
  if (!current) return item;
  let out = item;
  for (const key of LATER_KEPT) {
    const later = laterTime(item[key], current[key]);
    if (later !== item[key]) out = { ...out, [key]: later };
  }
  return out;
}

/** The later of two ISO times, either of which may be missing. */
export function laterTime<T extends null | undefined>(a: string | T, b: string | T): string | T {
  return a && b ? (a > b ? a : b) : (a ?? b);
}

/**
 * Orphans (issue 15): a URL that no fetched page has linked to and no sitemap listed since
 * `before` (now − refresh.orphanGrace). Start URLs and sitemaps are seeded, never orphans.
 * Returns the change-feed reason, or null.
 */
export function orphanReason(item: UrlItem, seeded: boolean, before: string | null): string | null {
  if (!before || seeded) return null;
  const reach = reachedAt(item);
  return reach && reach < before ? `orphan: not linked or listed since ${reach}` : null;
}
