// Frontier tasks for tests that send URLs straight to the frontier (sendTasks) instead of seeding.
import type { UrlTask } from '../../shared/types.ts';

/** A start URL's task (depth 0, the user source, indexed and followed), with `over` on top. */
export function urlTask(url: string, over: Partial<UrlTask> = {}): UrlTask {
  return { url, depth: 0, queue: 'user', index: true, follow: true, priority: 0, ...over };
}
