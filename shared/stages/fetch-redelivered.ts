/**
 * A frontier message delivered again (its first invocation died: kill -9, a crash, a timeout)
 * holds up to 50 URLs, some of them fetched and recorded before the death. Those are not fetched
 * again: a URL whose current state was fetched after its message was queued is done. Only
 * redeliveries ask, so a crawl that never dies pays nothing: one BatchGetItem for their URLs and
 * the state manifests written since the oldest of them was queued, in the due days a fetch since
 * then can have given (refresh-manifest.ts).
 */
import { recentLines } from '../aws/refresh-manifest.ts';
import type { ReceivedMessage } from '../aws/work-queues.ts';
import type { CrawlConfig } from '../config.ts';
import { longestRefreshMs } from '../crawl/state/orphans.ts';
import { refreshBuckets } from '../crawl/state/scheduling.ts';
import { resolveState } from '../crawl/state/url-state.ts';
import type { FrontierMessage, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';

/** The URLs among redelivered messages' tasks whose state was written by a fetch after the task was queued. */
export async function fetchedSinceQueued(
  deps: StageDeps,
  config: CrawlConfig,
  messages: { message: ReceivedMessage<FrontierMessage>; tasks: UrlTask[] }[],
): Promise<Set<string>> {
  const queuedAt = new Map<string, string>();
  for (const { message, tasks } of messages) {
    const at = message.body?.queuedAt;
    if (message.receiveCount <= 1 || typeof at !== 'string' || Number.isNaN(Date.parse(at))) continue;
    for (const t of tasks) {
      const known = queuedAt.get(t.url);
      if (!known || at < known) queuedAt.set(t.url, at);
    }
  }
  const done = new Set<string>();
  if (queuedAt.size === 0) return done;
  const urls = new Set(queuedAt.keys());
  const oldest = [...queuedAt.values()].reduce((a, b) => (a < b ? a : b));
  // A fetch at t is next due within 1.5 intervals of t (a refresh keeps its grid: scheduling.ts).
  const days = refreshBuckets(Date.parse(oldest), deps.now() + 2 * longestRefreshMs(config));
  const [items, lines] = await Promise.all([
    deps.urls.getMany([...urls]),
    recentLines(deps.store, urls, days, oldest),
  ]);
  for (const [url, at] of queuedAt) {
    const fetched = resolveState(items.get(url), lines.get(url))?.lastFetched;
    if (fetched && fetched >= at) done.add(url);
  }
  return done;
}
