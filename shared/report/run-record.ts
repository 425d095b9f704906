/**
 * A run record: what one local crawl or refresh counted (stage counters, AWS requests, handler
 * time), kept in S3 under `runs/` so `trawl report` can show throughput and cost over the last
 * runs. Pure: the caller passes the times and the counters.
 */
import type { RequestCounts } from '../aws/request-counter.ts';
import { type CostBreakdown, priceRun, type StageTime } from '../pricing.ts';
import { FUNCTIONS, type StageName } from '../topology.ts';

export const RUNS_PREFIX = 'runs/';

export interface RunRecord {
  /** a local crawl or refresh, or an hour of a deployed stack (usage-record.ts) */
  kind: 'crawl' | 'refresh' | 'deployed';
  crawl: string;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  /** URLs fetched to a final state (the pages a cost per million pages divides by) */
  pages: number;
  /** the stages' counters (fetched, indexed, rejected:<reason>, requeued:<reason> …) */
  stats: Record<string, number>;
  counts: RequestCounts;
  stages: Record<StageName, StageTime>;
  interrupted: boolean;
}

export interface RunRecordInput {
  kind: RunRecord['kind'];
  crawl: string;
  startedMs: number;
  finishedMs: number;
  stats: Record<string, number>;
  counts: RequestCounts;
  /** the runner's per-stage invocations and wall time */
  stages: Partial<Record<StageName, { invocations: number; totalMs: number; memoryMb?: number }>>;
  interrupted?: boolean;
}

/** Builds the record of one run (copies the counters: the caller's objects keep changing). */
export function buildRunRecord(i: RunRecordInput): RunRecord {
  const stages = Object.fromEntries(
    (Object.keys(FUNCTIONS) as StageName[]).map((s) => {
      const t = i.stages[s];
      const memory = t?.memoryMb !== undefined ? { memoryMb: t.memoryMb } : {};
      return [s, { invocations: t?.invocations ?? 0, totalMs: t?.totalMs ?? 0, awsWaitMs: 0, ...memory }];
    }),
  ) as Record<StageName, StageTime>;
  return {
    kind: i.kind,
    crawl: i.crawl,
    startedAt: new Date(i.startedMs).toISOString(),
    finishedAt: new Date(i.finishedMs).toISOString(),
    seconds: Math.max(0, (i.finishedMs - i.startedMs) / 1000),
    pages: i.stats.fetched ?? 0,
    stats: { ...i.stats },
    counts: structuredClone(i.counts),
    stages,
    interrupted: i.interrupted ?? false,
  };
}

/** The record's cost at list prices, per million pages (shared/pricing.ts, as `npm run bench`). */
export function priceRunRecord(r: RunRecord): CostBreakdown {
  return priceRun({
    pages: r.pages,
    calls: r.counts.calls,
    sqsBilledRequests: r.counts.sqsBilledRequests,
    dynamoReadUnits: r.counts.dynamoReadUnits ?? 0,
    dynamoWriteUnits: r.counts.dynamoWriteUnits ?? 0,
    stages: r.stages,
  });
}

/** The object key of a record: time first, so key order is run order. */
export function runRecordKey(r: RunRecord, id: string): string {
  return `${RUNS_PREFIX}${r.startedAt.replace(/[:.]/g, '-')}-${r.kind}-${id}.json`;
}
