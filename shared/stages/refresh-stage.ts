/**
 * The refresh stage (seed 004 "aged information check"): URLs whose next refresh time has come
 * are fetched again through the refresh source with If-Modified-Since / If-None-Match; URLs that
 * a changed config now rejects are deleted. Due URLs are found by Query on the refresh-time GSI,
 * one hour bucket at a time, so a cycle costs what is due, not the size of the index.
 */
import { randomUUID } from 'node:crypto';
import { refreshBucketOf, type UrlItem } from '../aws/url-table.ts';
import { createUrlDecider, type UrlDecider } from '../crawl/decide.ts';
import type { UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { ChangeRecord } from './index-stage.ts';
import { sendTasks } from './send-tasks.ts';

export interface RefreshSummary {
  due: number;
  requeued: number;
  deleted: number;
  buckets: number;
}

const CURSOR_KEY = 'refresh-cursor';
/** With no cursor yet, look this far back. */
const FIRST_LOOKBACK_MS = 30 * 86_400_000;
const HOUR_MS = 3_600_000;

/** Runs one refresh cycle. */
export async function runRefreshStage(deps: StageDeps): Promise<RefreshSummary> {
  const config = await deps.loadConfig();
  const decider = createUrlDecider(config);
  const now = deps.now();
  const until = new Date(now).toISOString();
  const from = (await deps.hosts.getValue(CURSOR_KEY)) ?? new Date(now - FIRST_LOOKBACK_MS).toISOString();
  const summary: RefreshSummary = { due: 0, requeued: 0, deleted: 0, buckets: 0 };
  const tasks: UrlTask[] = [];
  const changes: ChangeRecord[] = [];
  const starts = new Set(config.startUrls.map((u) => decider.decide(u, { depth: 0, isStart: true }).normalized));
  for (let t = Date.parse(from.slice(0, 13) + ':00:00.000Z'); t <= now; t += HOUR_MS) {
    summary.buckets++;
    for await (const item of deps.urls.dueForRefresh(refreshBucketOf(new Date(t).toISOString()), from, until)) {
      summary.due++;
      const task = await refreshOne(deps, decider, item, starts, changes, until);
      if (task) tasks.push(task);
      else summary.deleted++;
    }
  }
  await sendTasks(deps, tasks);
  summary.requeued = tasks.length;
  if (changes.length > 0) await deps.store.putLines(`changes/${until.replace(/[:.]/g, '-')}-${randomUUID()}.jsonl.gz`, changes);
  await deps.hosts.putValue(CURSOR_KEY, until);
  if (tasks.length > 0) await deps.kickFetch();
  return summary;
}

async function refreshOne(
  deps: StageDeps,
  decider: UrlDecider,
  item: UrlItem,
  starts: Set<string | null>,
  changes: ChangeRecord[],
  at: string,
): Promise<UrlTask | null> {
  const d = decider.decide(item.url, { depth: item.depth ?? 0, isStart: starts.has(item.url) });
  if (!d.accepted) {
    // Seed 004: a document whose link no longer applies after a config change is removed.
    await deps.urls.forget(item.url);
    if (item.docBulk) changes.push({ type: 'delete', url: item.url, at, reason: `out-of-scope: ${d.reason}` });
    return null;
  }
  const lastModified = item.lastModified ?? (item.lastFetched ? new Date(item.lastFetched).toUTCString() : undefined);
  return {
    url: item.url,
    depth: item.depth ?? 0,
    queue: 'refresh',
    index: d.index,
    follow: d.follow,
    priority: d.priorityShift,
    kind: 'page',
    ...(d.source ? { source: d.source } : {}),
    ...(d.addMeta.length ? { addMeta: d.addMeta } : {}),
    // Seed 004: If-Modified-Since with the recorded time; the ETag too when the server gave one.
    ...(item.docBulk ? { conditional: { lastModified, etag: item.etag ?? undefined } } : {}),
  };
}
