/** Run records in the crawl's bucket (`runs/`): one small JSON object per local crawl or refresh. */
import { createHash } from 'node:crypto';
import { RUNS_PREFIX, type RunRecord, runRecordKey } from '../report/run-record.ts';
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
