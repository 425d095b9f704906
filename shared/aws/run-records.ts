/**
 * Run records in the crawl's bucket (`runs/`): one small JSON object per local crawl or refresh;
 * and a deployed stack's hourly usage items (hosts table) read back as run records.
 */
import { createHash } from 'node:crypto';
import { RUNS_PREFIX, type RunRecord, runRecordKey } from '../report/run-record.ts';
import { recentUsageHours, usageKey, usageRunRecord } from '../report/usage-record.ts';
import type { HostTable } from './host-table.ts';
import type { PageStore } from './page-store.ts';

/**
 * Stores one run's record (one PUT per run). The key's id is a digest of the record: saving the
 * same record again (a retried save) replaces it instead of counting the run twice in reports.
 */
export async function saveRunRecord(store: PageStore, record: RunRecord): Promise<string> {
  const id = createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 32);
  const key = runRecordKey(record, id);
  await store.putJson(key, record);
  return key;
}

/** The newest `limit` records, oldest first: keys start with the run's start time. */
export async function lastRunRecords(store: PageStore, limit = 20): Promise<RunRecord[]> {
  const keys: string[] = [];
  for await (const key of store.list(RUNS_PREFIX)) {
    keys.push(key);
    // Keep the list bounded however many runs there were.
    if (keys.length > limit * 4) keys.sort().splice(0, keys.length - limit);
  }
  const newest = keys.sort().slice(-limit);
  const out: RunRecord[] = [];
  for (const key of newest) {
    const r = await store.getJson<RunRecord>(key);
    if (r) out.push(r);
  }
  return out;
}

/**
 * A deployed stack's usage (shared/stages/usage.ts) over the last `days` days, one run record per
 * hour that has any, oldest first, the newest `limit` of them: 2 BatchGetItem calls a week.
 */
export async function deployedUsageRecords(
  hosts: HostTable,
  crawl: string,
  nowIso: string,
  days = 7,
  limit = 24,
): Promise<RunRecord[]> {
  const hours = recentUsageHours(nowIso, days);
  const items = await hosts.getItems(hours.map((h) => usageKey(h)));
  return hours
    .filter((h) => items.has(usageKey(h)))
    .slice(0, limit)
    .reverse()
    .map((h) => usageRunRecord(crawl, h, items.get(usageKey(h)) ?? {}));
}
