/**
 * Seed 001's scheduler: pick a URL source with probability proportional to its weight among
 * the sources that still have work, so higher weights are served first and none starves.
 */
import type { CrawlConfig } from '../../config.ts';
import type { Rule } from '../../config-rules.ts';
import { FRONTIER, SCHEDULES } from '../../topology.ts';
import { SOURCES, type SourceName } from '../../types.ts';
import { compileRules } from '../rules/rules.ts';
import { parseDuration } from './duration.ts';

export type Weights = Record<SourceName, number>;

/** Default weights from the topology, overridden by the config's `weights`. */
export function sourceWeights(overrides: Partial<Record<SourceName, number | undefined>> = {}): Weights {
  const out = {} as Weights;
  for (const { name, weight } of FRONTIER) out[name] = overrides[name] ?? weight;
  return out;
}

/** Weighted random choice among non-exhausted sources; null when every source is exhausted. */
export function pickSource(
  weights: Weights,
  exhausted: ReadonlySet<SourceName>,
  random: () => number,
): SourceName | null {
  const open = SOURCES.filter((s) => !exhausted.has(s) && weights[s] > 0);
  const total = open.reduce((sum, s) => sum + weights[s], 0);
  if (total <= 0) return null;
  let r = random() * total;
  for (const s of open) {
    r -= weights[s];
    if (r < 0) return s;
  }
  return open[open.length - 1] ?? null;
}

/**
 * When a fetched document is due again: `maxAge` after the fetch. A refresh keeps the URL on its
 * grid instead: its previous due time plus whole `maxAge`s, at least half a `maxAge` ahead. Two
 * fetches of one refresh task (an SQS redelivery) then get the same due time, and the next cycle
 * refreshes the URL once, not twice for ever.
 */
export function nextRefreshAt(fetchedAtMs: number, maxAgeMs: number, dueAtMs?: number): string {
  if (dueAtMs === undefined || Number.isNaN(dueAtMs) || maxAgeMs <= 0)
    return new Date(fetchedAtMs + maxAgeMs).toISOString();
  const k = Math.max(1, Math.ceil((fetchedAtMs + maxAgeMs / 2 - dueAtMs) / maxAgeMs));
  return new Date(dueAtMs + k * maxAgeMs).toISOString();
}

/** What a refetch found: new content, the same content (304 or same delta hash), or nothing to compare. */
export type RefetchChange = 'changed' | 'unchanged' | 'unknown';

/**
 * Adaptive refresh (Norconex / StormCrawler style): the interval halves when a refetch finds the
 * page changed and doubles when it finds it unchanged, within [min, max]; a first fetch, or one
 * with nothing to compare, starts from (or keeps) `baseMs`, seed 004's max age.
 */
export function adaptInterval(
  previousMs: number | null | undefined,
  baseMs: number,
  bounds: { minMs: number; maxMs: number },
  change: RefetchChange,
): number {
  const from = previousMs && previousMs > 0 ? previousMs : baseMs;
  const next = change === 'changed' ? from / 2 : change === 'unchanged' ? from * 2 : from;
  return Math.round(Math.min(bounds.maxMs, Math.max(bounds.minMs, next)));
}

const DAY_MS = 86_400_000;

/**
 * The refresh manifests' folder for a refresh time: its UTC day (`YYYY-MM-DD`). A cycle reads the
 * folders of the days since the last cycle, so it reads only what is due; a day, not an hour, keeps
 * a first cycle with a long look-back to a few dozen LISTs.
 */
export function refreshBucket(iso: string): string {
  return iso.slice(0, 10);
}

/** The buckets that hold refresh times in [fromMs, untilMs], oldest first. */
export function refreshBuckets(fromMs: number, untilMs: number): string[] {
  const out: string[] = [];
  for (let t = Math.floor(fromMs / DAY_MS) * DAY_MS; t <= untilMs; t += DAY_MS) {
    out.push(refreshBucket(new Date(t).toISOString()));
  }
  return out;
}

/** How often the scheduled stages run: discovery (seed) and the aged-document refresh. */
export interface ScheduleIntervals {
  discoveryMs: number;
  refreshMs: number;
}

/** The refresh cycle runs at most this often (EventBridge rates are whole minutes)… */
const REFRESH_CYCLE_MIN_MS = 60_000;
/** …and at least this often: the topology's hourly rate. */
const REFRESH_CYCLE_MAX_MS = SCHEDULES.refresh.everyMinutes * 60_000;
/** Cycles per shortest refresh interval: a URL is refreshed at most this share of it late. */
const CYCLES_PER_INTERVAL = 4;

/** What the refresh intervals depend on: the config's refresh section and rules (a structural slice). */
export interface RefreshInputs {
  refresh: { maxAge: string; adaptive: { min: string; max: string } | null };
  rules: Rule[] | string;
}

/**
 * The shortest and longest intervals at which a URL comes due: `maxAge`, the adaptive bounds
 * (`refresh.adaptive`) and every rule's `refresh` bounds.
 */
export function refreshIntervalRange(config: RefreshInputs): { shortestMs: number; longestMs: number } {
  const { maxAge, adaptive } = config.refresh;
  const ms = [
    parseDuration(maxAge),
    ...(adaptive ? [parseDuration(adaptive.min), parseDuration(adaptive.max)] : []),
  ];
  try {
    for (const rule of compileRules(config.rules))
      if (rule.actions.refresh) ms.push(rule.actions.refresh.minMs, rule.actions.refresh.maxMs);
  } catch {
    // A bad rule is reported, with its path, where the rules are compiled for the crawl.
  }
  return { shortestMs: Math.min(...ms), longestMs: Math.max(...ms) };
}

/**
 * How often the refresh cycle runs: a quarter of the shortest refresh interval, in whole minutes,
 * between 1 minute and 1 hour. A page is then refreshed at most a quarter of its interval late
 * (the default 48h maxAge: hourly cycles); a cycle reads only the manifests of the days since
 * the last one, so a faster cadence costs a LIST and the current day's manifests a cycle.
 */
export function refreshCycleMs(config: RefreshInputs): number {
  const quarter = Math.ceil(refreshIntervalRange(config).shortestMs / CYCLES_PER_INTERVAL / 60_000) * 60_000;
  return Math.min(REFRESH_CYCLE_MAX_MS, Math.max(REFRESH_CYCLE_MIN_MS, quarter));
}

/** The intervals the stack uses: `refresh.discoveryInterval` for discovery, `refreshCycleMs` for refresh. */
export function scheduleIntervals(config: CrawlConfig): ScheduleIntervals {
  return {
    discoveryMs: parseDuration(config.refresh.discoveryInterval),
    refreshMs: refreshCycleMs(config),
  };
}
