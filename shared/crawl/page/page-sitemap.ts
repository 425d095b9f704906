/**
 * Sitemaps, sitemap indexes and feeds as the extract stage reads them, within limits.sitemapBytes,
 * sitemapUrls and sitemapsPerSite (each hit counted and noted).
 */

import type { ChangeHint, FetchedPage, UrlTask } from '../../types.ts';
import { parseSitemap, type SitemapUrl } from '../sitemaps/sitemaps.ts';
import { base, count, joinNotes, type PageContext, type PageResult, taskFrom } from './page-kit.ts';

export function sitemap(page: FetchedPage, bytes: Uint8Array, ctx: PageContext, result: PageResult): void {
  const { sitemapBytes, sitemapUrls, sitemapsPerSite } = ctx.config.limits;
  const parsed = parseSitemap(bytes, page.url, sitemapBytes);
  if (parsed.tooLarge) {
    count(result.rejected, 'limit-sitemap-bytes');
    const note = `sitemap over limits.sitemapBytes (${sitemapBytes} bytes): not read`;
    return void result.outcomes.push(base(page, 'ignored', { note }));
  }
  const cuts: string[] = [];
  // Read up to fetch.maxBytes (a gzip sitemap up to limits.sitemapBytes once inflated): said, since
  // the entries after the cut are never seen.
  if (page.truncated)
    cuts.push(
      `truncated at fetch.maxBytes (${ctx.config.fetch.maxBytes} bytes): the entries after it not read`,
    );
  const children = capped(parsed.sitemaps, sitemapsPerSite, 'sitemapsPerSite', result, cuts);
  const entries = capped(parsed.urls, sitemapUrls, 'sitemapUrls', result, cuts);
  const dates = changeDates(page, entries, ctx.now);
  const changed: ChangeHint[] = [];
  const listed = (task: UrlTask, entry: SitemapUrl) => {
    result.tasks.push(task);
    const changedAt = dates.changedAt(entry);
    if (changedAt) changed.push({ url: task.url, changedAt, sitemap: page.url });
  };
  // A child sitemap carries its date: the extract stage reads a known one again when the date is
  // past its last read, or when it has none (change-hints.ts sitemapsAgain).
  for (const entry of children) {
    const task = namedSitemap(entry.loc, page, ctx);
    const at = entry.lastmod === undefined ? Number.NaN : Date.parse(entry.lastmod);
    if (task) result.tasks.push(Number.isNaN(at) ? task : { ...task, lastmod: new Date(at).toISOString() });
    else count(result.rejected, 'sitemap-out-of-scope');
  }
  for (const entry of entries) {
    const d = ctx.decider.decide(entry.loc, { depth: page.task.depth + 1, base: page.url });
    if (!d.accepted || !d.normalized) {
      count(result.rejected, d.reason);
      continue;
    }
    listed({ ...taskFrom(d, page.task.depth + 1), fromSitemap: true }, entry);
  }
  if (changed.length > 0) result.changed = [...(result.changed ?? []), ...changed];
  const size =
    parsed.kind === 'sitemapindex' ? `${parsed.sitemaps.length} sitemaps` : `${parsed.urls.length} URLs`;
  const note = joinNotes(`${parsed.kind}: ${size}`, ...cuts, dates.note);
  result.outcomes.push(base(page, 'followed', { note }));
}

/** A sitemap whose entries this many or more say they changed since its last read… */
const UNTRUSTED_MIN = 10;
/** …more than half of them, dates its entries when it is written, not when its pages change. */
const UNTRUSTED_SHARE = 0.5;
/** A date this far past the clock is a wrong one (a server's zone), not a change: not used. */
const FUTURE_SKEW_MS = 5 * 60_000;

/**
 * The entries' dates (`<lastmod>`, a feed entry's date) that say a page changed after the
 * sitemap's previous read (the time its task carries, `prev.lastFetched`): those pages, if known,
 * are fetched again by the next refresh cycle rather than at their refresh time (refresh-stage.ts).
 * A first read has nothing to compare with (every page it lists is new, or was fetched since it
 * was found). A sitemap most of whose entries say they changed since its last read is one that
 * stamps them with the time it is generated: its dates are left unused, noted on its URL.
 */
export function changeDates(
  page: FetchedPage,
  entries: SitemapUrl[],
  now: string,
): { changedAt: (entry: SitemapUrl) => string | undefined; note?: string } {
  const since = page.task.prev?.lastFetched;
  if (!since) return { changedAt: () => undefined };
  const latest = Date.parse(now) + FUTURE_SKEW_MS;
  const changedAt = (entry: SitemapUrl): string | undefined => {
    const at = entry.lastmod === undefined ? Number.NaN : Date.parse(entry.lastmod);
    if (Number.isNaN(at) || at > latest) return undefined;
    const iso = new Date(at).toISOString();
    return iso > since ? iso : undefined;
  };
  const changed = entries.filter((e) => changedAt(e) !== undefined).length;
  if (changed < UNTRUSTED_MIN || changed <= entries.length * UNTRUSTED_SHARE) return { changedAt };
  return {
    changedAt: () => undefined,
    note: `lastmod not used: ${changed} of ${entries.length} entries say they changed since the last read (${since})`,
  };
}
/** The first `max` items; the rest counted as `limit-<key>` and named in `cuts` for the URL's note. */
function capped<T>(items: T[], max: number, key: string, result: PageResult, cuts: string[]): T[] {
  if (items.length <= max) return items;
  const kebab = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  count(result.rejected, `limit-${kebab}`, items.length - max);
  cuts.push(`${items.length - max} dropped at limits.${key} (${max})`);
  return items.slice(0, max);
}
/**
 * A sitemap named by another (an index's child, a sitemap's redirect target): one of the naming
 * sitemap's own site is read even though `.xml` is an ignored extension (sitemaps.org: an index
 * lists the site's sitemaps); one elsewhere must be in scope like any link, its extension aside
 * (sitemaps.org "cross submits": until 2026-11-28 its `.xml` kept every such sitemap out), so an
 * index cannot send the crawler off to arbitrary hosts.
 */
export function namedSitemap(loc: string, page: FetchedPage, ctx: PageContext): UrlTask | null {
  const d = ctx.decider.decide(loc, { depth: page.task.depth, isStart: true, base: page.url });
  if (!d.accepted || !d.normalized) return null;
  const sameSite = new URL(d.normalized).origin === new URL(page.url).origin;
  if (
    !sameSite &&
    !ctx.decider.decide(loc, { depth: page.task.depth, base: page.url, sitemap: true }).accepted
  )
    return null;
  return { ...taskFrom(d, page.task.depth), queue: 'user', index: false, follow: true, kind: 'sitemap' };
}
