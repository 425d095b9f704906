/**
 * The fetch stage: weighted polling across the six frontier sources (seed 001), many
 * concurrent fetches per invocation, one page bundle (S3) and one extract message per round.
 */
import { randomUUID } from 'node:crypto';
import { Lane, mapLimit } from '../crawl/concurrency.ts';
import { pickSource, sourceWeights } from '../crawl/scheduling.ts';
import { FRONTIER_QUEUE } from '../topology.ts';
import type { FetchedPage, FrontierMessage, SourceName, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { type FetchContext, fetchOne, type TaskResult } from './fetch-one.ts';
import { bump } from './logger.ts';
import { createRobotsCache } from './robots-cache.ts';
import { sendDelayedTasks } from './send-tasks.ts';

export interface FetchRunOptions {
  /** epoch ms after which no new fetch starts (Lambda: remaining time minus a margin) */
  deadline: number;
  /** stop after this many receive rounds (tests, the local runner's fairness) */
  maxRounds?: number;
  /** raised when the caller stops (the local runner on Ctrl-C): no new round starts */
  signal?: AbortSignal;
}

export interface FetchRunSummary {
  rounds: number;
  fetched: number;
  requeued: number;
  /** every source answered empty */
  drained: boolean;
  /** fetch order, for diagnostics and the priority test */
  order: { url: string; source: SourceName }[];
}

/** Polls the frontier until it is empty or the deadline passes. */
export async function runFetchStage(deps: StageDeps, opts: FetchRunOptions): Promise<FetchRunSummary> {
  const config = await deps.loadConfig();
  const weights = sourceWeights(config.weights);
  const exhausted = new Set<SourceName>();
  const ctx: FetchContext = {
    deps,
    config,
    robots: createRobotsCache(deps.hosts, config, deps.now),
    deadline: opts.deadline,
  };
  const summary: FetchRunSummary = { rounds: 0, fetched: 0, requeued: 0, drained: false, order: [] };
  const more = () =>
    deps.now() < opts.deadline &&
    summary.rounds < (opts.maxRounds ?? Number.POSITIVE_INFINITY) &&
    !opts.signal?.aborted;
  while (more()) {
    const source = pickSource(weights, exhausted, deps.random);
    if (!source) {
      summary.drained = true;
      break;
    }
    const messages = await deps.queues.receive<FrontierMessage>(
      deps.queueUrls.frontier[source],
      FRONTIER_QUEUE.receiveBatch,
    );
    if (messages.length === 0) {
      exhausted.add(source);
      continue;
    }
    summary.rounds++;
    const tasks = messages.flatMap((m) => (Array.isArray(m.body?.tasks) ? m.body.tasks.filter(isTask) : []));
    const results = await fetchRound(ctx, tasks);
    await flushRound(deps, results);
    await deps.queues.delete(
      deps.queueUrls.frontier[source],
      messages.map((m) => m.receiptHandle),
    );
    for (const r of results) {
      if (r.type === 'page') {
        summary.fetched++;
        bump('fetched');
        bump(`fetched:${source}`);
        summary.order.push({ url: r.page.url, source });
      } else {
        summary.requeued++;
        bump(`requeued:${r.reason}`);
      }
    }
  }
  return summary;
}

function isTask(t: unknown): t is UrlTask {
  const task = t as UrlTask;
  return typeof task?.url === 'string' && typeof task.depth === 'number' && typeof task.queue === 'string';
}

/**
 * Fetches a round's tasks concurrently. Tasks of one host share a lane: one request at a time
 * until the host's politeness delay is known (its robots.txt read by the first), then up to
 * `fetch.connectionsPerHost` when it asks for no delay; with a delay the slots space them anyway.
 */
async function fetchRound(ctx: FetchContext, tasks: UrlTask[]): Promise<TaskResult[]> {
  const lanes = new Map<string, Lane>();
  const laneOf = (host: string) => {
    let lane = lanes.get(host);
    if (!lane) {
      lane = new Lane(() => (ctx.hostDelays?.get(host) === 0 ? ctx.config.fetch.connectionsPerHost : 1));
      lanes.set(host, lane);
    }
    return lane;
  };
  return mapLimit(tasks, ctx.config.fetch.concurrency, (task) =>
    laneOf(hostOf(task.url)).run(() => fetchOne(ctx, task)),
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** Writes the round's pages as one bundle, sends one extract message, puts requeued tasks back. */
async function flushRound(deps: StageDeps, results: TaskResult[]): Promise<void> {
  const pages: FetchedPage[] = [];
  const requeue: { task: UrlTask; delaySeconds: number }[] = [];
  for (const r of results) {
    if (r.type === 'page') pages.push(r.page);
    else requeue.push(r);
  }
  if (pages.length > 0) {
    const key = `pages/${new Date(deps.now()).toISOString().slice(0, 10)}/${randomUUID()}.jsonl.gz`;
    await deps.store.putLines(key, pages);
    await deps.queues.send(deps.queueUrls.extract, [{ body: { bundle: key, count: pages.length } }]);
  }
  await sendDelayedTasks(deps, requeue);
}
