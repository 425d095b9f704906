/** Frontier work the CLI queues itself: known URLs fetched again (clear-errors, a snapshot restore). */
import type { AwsClients } from '../shared/aws/clients.ts';
import { chunkBySize, createWorkQueues } from '../shared/aws/work-queues.ts';
import { FRONTIER_QUEUE, type QueueUrls } from '../shared/topology.ts';
import type { FrontierMessage, UrlItem, UrlTask } from '../shared/types.ts';

/** The frontier task that fetches a known URL again, as its state last decided it. */
export function taskOf(i: UrlItem): UrlTask {
  return {
    url: i.url,
    depth: i.depth ?? 0,
    // A refresh source is the cycle's: a URL queued again goes where it was found.
    queue: i.queue && i.queue !== 'refresh' ? i.queue : 'index_follow',
    index: i.index ?? true,
    follow: i.follow ?? true,
    priority: i.priority ?? 0,
    ...(i.kind ? { kind: i.kind } : {}),
    ...(i.source ? { source: i.source } : {}),
    ...(i.addMeta?.length ? { addMeta: i.addMeta } : {}),
    // Where it was found: its next state keeps naming the page that links to it (a broken link's page).
    ...(i.foundOn ? { foundOn: i.foundOn } : {}),
  };
}

/** Sends tasks to their frontier queues, bulked as the stages bulk them. */
export async function sendFrontierTasks(
  clients: AwsClients,
  queueUrls: QueueUrls,
  tasks: UrlTask[],
): Promise<void> {
  const queues = createWorkQueues({ client: clients.sqs });
  const queuedAt = new Date().toISOString();
  for (const source of new Set(tasks.map((t) => t.queue))) {
    const mine = tasks.filter((t) => t.queue === source);
    const messages = chunkBySize(mine, FRONTIER_QUEUE.tasksPerMessage).map((chunk) => ({
      body: { tasks: chunk, queuedAt } satisfies FrontierMessage,
    }));
    await queues.send(queueUrls.frontier[source], messages);
  }
}
