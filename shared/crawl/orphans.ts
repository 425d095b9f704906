/**
 * The orphan grace (refresh.orphanGrace) in ms, and the rule that keeps it safe. Links are found
 * again only when the pages holding them are refetched, so a grace shorter than twice the longest
 * refresh interval would delete pages whose linking page simply was not due yet.
 */
import type { CrawlConfig } from '../config.ts';
import { parseDuration } from './duration.ts';
import { compileRules } from './rules.ts';

/** The longest interval at which a page is refetched: maxAge, adaptive.max or a rule's max. */
export function longestRefreshMs(config: CrawlConfig): number {
  const { maxAge, adaptive } = config.refresh;
  let longest = Math.max(parseDuration(maxAge), adaptive ? parseDuration(adaptive.max) : 0);
  for (const rule of compileRules(config.rules))
    longest = Math.max(longest, rule.actions.refresh?.maxMs ?? 0);
  return longest;
}

/** The grace in ms (a duration, or a number of longest refresh intervals); null when orphans are kept. */
export function orphanGraceMs(config: CrawlConfig): number | null {
  const grace = config.refresh.orphanGrace;
  if (grace === null) return null;
  return typeof grace === 'number' ? grace * longestRefreshMs(config) : parseDuration(grace);
}

/** Why the configured grace is unsafe, or null. */
export function orphanGraceProblem(config: CrawlConfig): string | null {
  const grace = orphanGraceMs(config);
  const longest = longestRefreshMs(config);
  if (grace === null || grace >= 2 * longest) return null;
  return `must be at least twice the longest refresh interval (${longest / 3_600_000}h), or the pages that link to a page may not have been refetched yet`;
}
