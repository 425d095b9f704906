/**
 * The scope.traps caps at claim time: new URLs per host and query-string variants per path are
 * counted in the hosts table (one atomic ADD per counter and extract batch); the URLs past a cap
 * are recorded `ignored` with a `trap: …` note (so `trawl urls` explains them and they are not
 * counted again) and counted in the crawl summary as `rejected:host-cap` / `rejected:query-variants`.
 */
import type { ClaimGate } from '../aws/url-table.ts';
import type { TrapsConfig } from '../config-traps.ts';
import { admitByCaps, capKeys, capNote } from '../crawl/url/traps.ts';
import type { StageDeps } from './deps.ts';

/** The claim gate for these caps; undefined when no cap is set. */
export function trapGate(
  deps: StageDeps,
  traps: TrapsConfig,
  stats: Record<string, number>,
): ClaimGate | undefined {
  if (traps.maxUrlsPerHost === null && traps.maxQueryVariantsPerPath === null) return undefined;
  return async (candidates) => {
    const counts = new Map<string, number>();
    for (const t of candidates)
      for (const k of capKeys(t.url, traps)) counts.set(k.key, (counts.get(k.key) ?? 0) + 1);
    if (counts.size === 0) return { admitted: candidates, stopped: [] };
    const before = await deps.hosts.addCounts(counts);
    const { admitted, stopped } = admitByCaps(candidates, before, traps);
    for (const s of stopped) stats[`rejected:${s.reason}`] = (stats[`rejected:${s.reason}`] ?? 0) + 1;
    return {
      admitted,
      stopped: stopped.map((s) => ({
        task: s.task,
        extra: { state: 'ignored', note: capNote(s.reason, traps), stored: 'table' },
      })),
    };
  };
}
