/**
 * Puts URL tasks into their frontier sources: grouped by source, bulked into messages of up to
 * `tasksPerMessage` tasks (SMILA linksPerBulk) and sent 10 messages per request.
 */
import { chunkBySize } from '../aws/work-queues.ts';
import type { CrawlConfig } from '../config.ts';
import { scopeVersion } from '../crawl/rules/scope-version.ts';
import { addToGroup } from '../groups.ts';
import { FRONTIER_QUEUE } from '../topology.ts';
import type { FrontierMessage, SourceName, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';

/**
 * Tasks just decided under `config`, each marked with its scope version: the fetch stage decides
 * again only the tasks marked with another (fetch-scope.ts).
 */
export function decidedUnder(config: CrawlConfig, tasks: UrlTask[]): UrlTask[] {
  const version = scopeVersion(config);
  return tasks.map((t) => ({ ...t, decidedUnder: version }));
}

/** Sends tasks to the frontier, each to the source named by its `queue`. */
export async function sendTasks(deps: StageDeps, tasks: UrlTask[], delaySeconds = 0): Promise<void> {
  const bySource = new Map<SourceName, UrlTask[]>();
  for (const t of tasks) addToGroup(bySource, t.queue, t);
  const queuedAt = new Date(deps.now()).toISOString();
  await Promise.all(
    [...bySource].map(([source, list]) => {
      const messages = chunkBySize(list, FRONTIER_QUEUE.tasksPerMessage).map((chunk) => ({
        body: { tasks: chunk, queuedAt } satisfies FrontierMessage,
        delaySeconds,
      }));
      return deps.queues.send(deps.queueUrls.frontier[source], messages);
    }),
  );
}

/** Sends tasks that each carry their own delay, grouping equal delays into one send. */
export async function sendDelayedTasks(
  deps: StageDeps,
  items: { task: UrlTask; delaySeconds: number }[],
): Promise<void> {
  const byDelay = new Map<number, UrlTask[]>();
  for (const { task, delaySeconds } of items) {
    const d = Math.ceil(delaySeconds);
    addToGroup(byDelay, d, task);
  }
  await Promise.all([...byDelay].map(([delay, list]) => sendTasks(deps, list, delay)));
}
