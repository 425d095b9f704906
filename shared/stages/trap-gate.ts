/**
 * The caps at claim time: scope.traps' new URLs per host and query-string variants per path, and
 * limits.sitemapsPerSite's sitemaps per host across the whole crawl (robots.txt lines, which the
 * seed stage counts, and every index's children), are counted in the hosts table (one atomic ADD
 * per counter and extract batch); the URLs past a cap are recorded `ignored` with a note (so
 * `trawl urls` explains them and they are not counted again) and counted in the crawl summary as
 * `rejected:host-cap` / `rejected:query-variants` / `rejected:limit-sitemaps-per-site`. A trap
 * cap records as many URLs past it as it admits; the ones after that are counted only
 * (`unrecorded:host-cap`, `unrecorded:query-variants`): a cart page's random links made a new row
 * each at every refresh (1,004 rows, 2,006 after two refreshes).
 */
import type { ClaimGate } from '../aws/url-table.ts';
import type { TrapsConfig } from '../config-traps.ts';
import {
  admitByCaps,
  admitSitemaps,
  capKeys,
  capNote,
  givenBack,
  sitemapCapKey,
  sitemapCounts,
} from '../crawl/url/traps.ts';
import type { UrlItem, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';

/** The claim gate for these caps. */
export function trapGate(
  deps: StageDeps,
  traps: TrapsConfig,
  sitemapsPerSite: number,
  stats: Record<string, number>,
): ClaimGate {
  const trapsOn = traps.maxUrlsPerHost !== null || traps.maxQueryVariantsPerPath !== null;
  return async (candidates, known) => {
    const sitemaps = candidates.filter((t) => t.kind === 'sitemap');
    const counts = new Map<string, number>();
    if (trapsOn)
      for (const t of candidates)
        for (const k of capKeys(t.url, traps)) counts.set(k.key, (counts.get(k.key) ?? 0) + 1);
    for (const t of sitemaps) counts.set(sitemapCapKey(t.url), (counts.get(sitemapCapKey(t.url)) ?? 0) + 1);
    if (counts.size === 0) return { admitted: candidates, stopped: [] };
    const before = await deps.hosts.addCounts(counts);
    const trapped = trapsOn ? admitByCaps(candidates, before, traps) : { admitted: candidates, stopped: [] };
    const back = givenBack(trapped.stopped, traps);
    if (back.size > 0) await deps.hosts.addCounts(back);
    const overSitemaps = new Set<UrlTask>(admitSitemaps(sitemaps, before, sitemapsPerSite).stopped);
    const stopped: { task: UrlTask; extra: Partial<UrlItem> }[] = [];
    for (const s of trapped.stopped) {
      bump(stats, `rejected:${s.reason}`);
      // One that has a row (stopped under other caps, judged again) gets the current note: kept
      // with the old one, it was judged again at every sighting.
      if (!s.recorded && !known(s.task)) {
        bump(stats, `unrecorded:${s.reason}`);
        continue;
      }
      stopped.push({
        task: s.task,
        extra: { state: 'ignored', note: capNote(s.reason, traps), stored: 'table' },
      });
    }
    for (const task of overSitemaps) {
      if (!trapped.admitted.includes(task)) continue; // stopped by a trap cap already
      bump(stats, 'rejected:limit-sitemaps-per-site');
      const note = sitemapCapNote(sitemapsPerSite);
      stopped.push({ task, extra: { state: 'ignored', note, stored: 'table' } });
    }
    // The sitemap counter counts the sitemaps read, not the ones it stopped: one forgotten (an
    // index's retired child) gives its place back (forgetSitemaps), and a stopped one is judged
    // again at its next sighting (reopenCapped). Counted for good, a site whose index lists this
    // week's sitemaps reached the cap and no new sitemap of it was ever read again.
    await forgetSitemaps(
      deps,
      sitemaps.filter((t) => overSitemaps.has(t) || !trapped.admitted.includes(t)).map((t) => t.url),
    );
    return { admitted: trapped.admitted.filter((t) => !overSitemaps.has(t)), stopped };
  };
}

const sitemapCapNote = (max: number) =>
  `sitemap over limits.sitemapsPerSite (${max}) for this site: not read`;
const CAP_NOTES = ['trap: host-cap (', 'trap: query-variants (', 'sitemap over limits.sitemapsPerSite ('];

/**
 * Which known URLs a gate with these caps judges again (url-table.ts `reopen`): those a cap stopped
 * whose note the caps now write differently (raised, lowered, turned off), and sitemaps stopped by
 * limits.sitemapsPerSite at every sighting (their site's count falls as sitemaps are forgotten). Until 2026-11-28 a URL
 * stopped once stayed stopped whatever the config said later.
 */
export function reopenCapped(traps: TrapsConfig, sitemapsPerSite: number): (item: UrlItem) => boolean {
  const current = new Set([
    capNote('host-cap', traps),
    capNote('query-variants', traps),
    sitemapCapNote(sitemapsPerSite),
  ]);
  const sitemapNote = CAP_NOTES[2] as string;
  return (item) =>
    item.state === 'ignored' &&
    item.note != null &&
    CAP_NOTES.some((p) => item.note?.startsWith(p)) &&
    (!current.has(item.note) || item.note.startsWith(sitemapNote));
}

/**
 * Gives back the places of sitemaps in their sites' limits.sitemapsPerSite counts (the gate counts
 * the sitemaps read): those it stopped, and forgotten ones, once each URL is gone from the table
 * and only for a URL that was there (a repeated delivery finds none and gives nothing back twice).
 */
export async function forgetSitemaps(deps: Pick<StageDeps, 'hosts'>, urls: string[]): Promise<void> {
  if (urls.length > 0) await deps.hosts.addCounts(sitemapCounts(urls, -1));
}

function bump(stats: Record<string, number>, key: string): void {
  stats[key] = (stats[key] ?? 0) + 1;
}
