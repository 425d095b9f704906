/**
 * The orphan grace (refresh.orphanGrace) in ms, and the rule that keeps it safe. Links are found
 * again only when the pages holding them are fetched whole (at most every quarter of the grace
 * plus one refresh interval), and a link stamps its target at most every quarter of the grace:
 * a target's stamp is at most half the grace plus one interval old while a page links to it. A
 * grace of three intervals leaves a sixth of it for late cycles; a shorter one would delete
 * pages whose linking page simply was not due yet.
 */
import { parseDuration } from './duration.ts';
import { type RefreshInputs, refreshIntervalRange } from './scheduling.ts';

/** What the grace depends on: the config's refresh section and rules (a structural slice of it). */
export interface OrphanInputs extends RefreshInputs {
  refresh: RefreshInputs['refresh'] & { orphanGrace: string | number | null };
}

/** The longest interval at which a page is refetched: maxAge, adaptive.max or a rule's max. */
export function longestRefreshMs(config: OrphanInputs): number {
  return refreshIntervalRange(config).longestMs;
}

/** The grace in ms (a duration, or a number of longest refresh intervals); null when orphans are kept. */
export function orphanGraceMs(config: OrphanInputs): number | null {
  const grace = config.refresh.orphanGrace;
  if (grace === null) return null;
  return typeof grace === 'number' ? grace * longestRefreshMs(config) : parseDuration(grace);
}

/** Why the configured grace is unsafe, or null. */
export function orphanGraceProblem(config: OrphanInputs): string | null {
  if (config.refresh.orphanGrace === null) return null;
  const grace = orphanGraceMs(config) as number;
  const longest = longestRefreshMs(config);
  if (grace >= 3 * longest) return null;
  return `must be at least three times the longest refresh interval (${longest / 3_600_000}h), or the pages that link to a page may not have been refetched yet`;
}
