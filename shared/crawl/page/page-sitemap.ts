/**
 * Sitemaps, sitemap indexes and feeds as the extract stage reads them, within limits.sitemapBytes,
 * sitemapUrls and sitemapsPerSite (each hit counted and noted).
 */

import type { FetchedPage, UrlTask } from '../../types.ts';
import { parseSitemap } from '../sitemaps/sitemaps.ts';
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
  const children = capped(parsed.sitemaps, sitemapsPerSite, 'sitemapsPerSite', result, cuts);
  for (const loc of children) {
    const task = childSitemap(loc, page, ctx);
    if (task) result.tasks.push(task);
    else count(result.rejected, 'sitemap-out-of-scope');
  }
  for (const { loc } of capped(parsed.urls, sitemapUrls, 'sitemapUrls', result, cuts)) {
    const d = ctx.decider.decide(loc, { depth: page.task.depth + 1, base: page.url });
    if (!d.accepted || !d.normalized) {
      count(result.rejected, d.reason);
      continue;
    }
    result.tasks.push({ ...taskFrom(d, page.task.depth + 1), fromSitemap: true });
  }
  const listed =
    parsed.kind === 'sitemapindex' ? `${parsed.sitemaps.length} sitemaps` : `${parsed.urls.length} URLs`;
  result.outcomes.push(base(page, 'followed', { note: joinNotes(`${parsed.kind}: ${listed}`, ...cuts) }));
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
 * A sitemap index's child: a sitemap of the index's own site is read even though `.xml` is an
 * ignored extension (sitemaps.org: an index lists the site's sitemaps); one elsewhere must be in
 * scope like any link, so an index cannot send the crawler off to arbitrary hosts.
 */
function childSitemap(loc: string, page: FetchedPage, ctx: PageContext): UrlTask | null {
  const d = ctx.decider.decide(loc, { depth: page.task.depth, isStart: true });
  if (!d.accepted || !d.normalized) return null;
  const sameSite = new URL(d.normalized).origin === new URL(page.url).origin;
  if (!sameSite && !ctx.decider.decide(loc, { depth: page.task.depth, base: page.url }).accepted) return null;
  return { ...taskFrom(d, page.task.depth), queue: 'user', index: false, follow: true, kind: 'sitemap' };
}
