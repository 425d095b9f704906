/**
 * A deployed stack's usage (issue 18): each handler invocation adds its AWS requests, its wall
 * time and the pages it fetched to one item per hour in the hosts table (shared/stages/usage.ts,
 * one UpdateItem). `trawl report` turns each hour back into a run record and prices it as a local
 * run's (priceRunRecord). Pure: the caller passes the counts, the times and the items.
 */
import type { RequestCounts } from '../aws/request-counter.ts';
import { FUNCTIONS, type StageName } from '../topology.ts';
import type { RunRecord } from './run-record.ts';

/** What one invocation did. */
export interface InvocationUsage {
  stage: StageName;
  counts: RequestCounts;
  ms: number;
  /** the function's memory (the Lambda context's memoryLimitInMB): fetch's follows its config */
  memoryMb: number;
  pages: number;
  /** payload bytes of the SQS records an event source mapping received for it (null: not from SQS) */
  sqsEventBytes: number | null;
}

const SQS_CHUNK = 64 * 1024;
/** What the event source mapping sent for the invocation (AWS's requests, billed to the account). */
export const MAPPING_RECEIVE = 'SQS.ReceiveMessage (event source)';
export const MAPPING_DELETE = 'SQS.DeleteMessageBatch (event source)';

/** The hosts-table key of an hour's usage item. */
export const usageKey = (hour: string): string => `usage#${hour}`;

/** The hour `iso` falls in: `2026-11-23T16`. */
export const usageHour = (iso: string): string => iso.slice(0, 13);

/**
 * The counters one invocation adds, its own recording write included (one UpdateItem, one write
 * unit), so the hour's item prices everything the stack sent.
 */
export function usageCounters(u: InvocationUsage): Record<string, number> {
  const out: Record<string, number> = {
    pages: u.pages,
    [`inv.${u.stage}`]: 1,
    [`ms.${u.stage}`]: u.ms,
    [`mbms.${u.stage}`]: u.ms * u.memoryMb,
    ddbW: u.counts.dynamoWriteUnits + 1,
    ddbR: u.counts.dynamoReadUnits,
    sqsBilled: u.counts.sqsBilledRequests,
  };
  for (const [k, n] of Object.entries(u.counts.calls)) out[`call.${k}`] = n;
  out['call.DynamoDB.UpdateItem'] = (out['call.DynamoDB.UpdateItem'] ?? 0) + 1;
  if (u.sqsEventBytes !== null) {
    out[`call.${MAPPING_RECEIVE}`] = 1;
    out[`call.${MAPPING_DELETE}`] = 1;
    out.sqsBilled = u.counts.sqsBilledRequests + Math.max(1, Math.ceil(u.sqsEventBytes / SQS_CHUNK)) + 1;
  }
  return out;
}

/** The usage item's number set of the minutes (0–59) of its hour in which some handler ran. */
export const ACTIVE_MINUTES = 'activeMinutes';

/** The minutes of the hour of `endMs` that an invocation from `startMs` to `endMs` ran in. */
export function activeMinutes(startMs: number, endMs: number): number[] {
  const hourStart = Math.floor(endMs / 3_600_000) * 3_600_000;
  const first = Math.floor((Math.max(startMs, hourStart) - hourStart) / 60_000);
  const last = Math.floor((endMs - hourStart) / 60_000);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/**
 * One hour's item as a run record (`kind: 'deployed'`), ready to be priced. Its seconds are the
 * minutes some handler ran in (so pages/s is the rate while the crawl ran, not over the whole
 * hour); an item from before they were recorded counts the whole hour.
 */
export function usageRunRecord(crawl: string, hour: string, item: Record<string, number>): RunRecord {
  const start = Date.parse(`${hour}:00:00.000Z`);
  const calls: Record<string, number> = {};
  for (const [k, n] of Object.entries(item)) if (k.startsWith('call.')) calls[k.slice(5)] = n;
  const stages = Object.fromEntries(
    (Object.keys(FUNCTIONS) as StageName[]).map((s) => {
      const ms = item[`ms.${s}`] ?? 0;
      const mbms = item[`mbms.${s}`] ?? 0;
      // The hour's MB-ms over its ms: the memory the stage ran with (none in items from before it was recorded).
      const memory = mbms > 0 && ms > 0 ? { memoryMb: mbms / ms } : {};
      return [s, { invocations: item[`inv.${s}`] ?? 0, totalMs: ms, awsWaitMs: 0, ...memory }];
    }),
  ) as RunRecord['stages'];
  return {
    kind: 'deployed',
    crawl,
    startedAt: new Date(start).toISOString(),
    finishedAt: new Date(start + 3_600_000).toISOString(),
    seconds: item[ACTIVE_MINUTES] ? item[ACTIVE_MINUTES] * 60 : 3600,
    pages: item.pages ?? 0,
    stats: {},
    counts: {
      calls,
      sqsBilledRequests: item.sqsBilled ?? 0,
      dynamoWriteUnits: item.ddbW ?? 0,
      dynamoReadUnits: item.ddbR ?? 0,
    },
    stages,
    interrupted: false,
  };
}

/** The hour keys of the `days` days up to `nowIso`, newest first (what the report reads). */
export function recentUsageHours(nowIso: string, days: number): string[] {
  const now = Date.parse(nowIso);
  return Array.from({ length: days * 24 }, (_, i) => usageHour(new Date(now - i * 3_600_000).toISOString()));
}
