/**
 * The refresh schedule without a GSI: the index stage appends `(url, nextRefreshAt)` to a gzip
 * JSON-lines manifest under `refresh/<due day>/` (one PUT per batch and due day), and the refresh
 * stage reads the manifests of the days since its last cycle. A manifest line is only a hint:
 * the URL item's own `nextRefreshAt` must still equal it (a later fetch re-schedules the URL and
 * writes a newer line), so stale and forgotten URLs drop out. Writing a GSI key costs a DynamoDB
 * write unit per page ($0.625 per million); a manifest line costs a share of one S3 PUT.
 */
import { randomUUID } from 'node:crypto';
import { refreshBucket } from '../crawl/scheduling.ts';
import type { PageStore } from './page-store.ts';

export interface RefreshEntry {
  url: string;
  nextRefreshAt: string;
}

export const REFRESH_PREFIX = 'refresh/';

/** Appends the entries, one manifest object per due day. */
export async function writeRefreshManifests(
  store: PageStore,
  entries: RefreshEntry[],
  nowIso: string,
): Promise<void> {
  const byDay = new Map<string, RefreshEntry[]>();
  for (const e of entries) {
    const day = refreshBucket(e.nextRefreshAt);
    byDay.set(day, [...(byDay.get(day) ?? []), e]);
  }
  const stamp = nowIso.replace(/[:.]/g, '-');
  for (const [day, list] of byDay) {
    await store.putLines(`${REFRESH_PREFIX}${day}/${stamp}-${randomUUID()}.jsonl.gz`, list);
  }
}

/** The entries of `day` due in [from, until], the latest per URL. */
export async function dueEntries(
  store: PageStore,
  day: string,
  from: string,
  until: string,
): Promise<RefreshEntry[]> {
  const latest = new Map<string, RefreshEntry>();
  for await (const key of store.list(`${REFRESH_PREFIX}${day}/`)) {
    for (const e of await store.getLines<RefreshEntry>(key)) {
      if (e.nextRefreshAt < from || e.nextRefreshAt > until) continue;
      const seen = latest.get(e.url);
      if (!seen || seen.nextRefreshAt < e.nextRefreshAt) latest.set(e.url, e);
    }
  }
  return [...latest.values()];
}
