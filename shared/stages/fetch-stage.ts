/**
 * The fetch stage: weighted polling across the six frontier sources (seed 001), many
 * concurrent fetches per invocation; frontier messages are leased briefly (fetch-leases.ts) and
 * written and deleted as soon as their URLs are done (fetch-flush.ts).
 */
import type { ReceivedMessage } from '../aws/work-queues.ts';
import { ByteBudget, Lane, TaskPlace } from '../crawl/state/concurrency.ts';
import { pickSource, sourceWeights } from '../crawl/state/scheduling.ts';
import { UNSENT_ERRORS } from '../errors.ts';
import { FRONTIER_QUEUE } from '../topology.ts';
import { type FrontierMessage, SOURCES, type SourceName, type UrlTask, type WakeMessage } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { authSessionsFor, proxyFor } from './fetch-auth.ts';
import { type FetchContext, hostOf, type Requeued, type TaskResult } from './fetch-context.ts';
import { RoundFlusher, wakeLater } from './fetch-flush.ts';
import { Leases, leaseSeconds } from './fetch-leases.ts';
import { fetchMemoryMb, fetchMemoryPlan } from './fetch-memory.ts';
import { fetchOne } from './fetch-one.ts';
import { FetchPresence } from './fetch-presence.ts';
import { fetchedSinceQueued } from './fetch-redelivered.ts';
import { rescope } from './fetch-scope.ts';
import { bump } from './logger.ts';
import { HostTurns, OVERLAP_HOSTS } from './politeness/host-turns.ts';
import { createRobotsCache } from './politeness/robots-cache.ts';

export interface FetchRunOptions {
  /** epoch ms after which no new fetch starts (Lambda: remaining time minus a margin) */
  deadline: number;
  /** stop after this many receive rounds (tests, the local runner's fairness) */
  maxRounds?: number;
  /** a clean stop (Ctrl-C, SIGTERM): no new fetch starts, held messages go back at once */
  signal?: AbortSignal;
  /**
   * Poll only these sources (a wake-up call names the sources whose URLs were put back): the
   * others' new work starts fetchers of its own (the extract stage's kick, the tick), and an
   * invocation for one polite host then costs two receives instead of one per source.
   */
  sources?: SourceName[];
  /** the invocation's memory (MB); @default what the config is deployed with (fetch-memory.ts) */
  memoryMb?: number;
  /** @default RECHECK_EMPTY_MS (tests shorten it) */
  recheckEmptyMs?: number;
}

/**
 * A source found empty is polled again after this long, between rounds, while the invocation has
 * other work: a redirect target or a start URL queued meanwhile is taken by the fetcher already
 * running, not left to one that may not start (at `fetch.maxInvocations` a kick starts none; an
 * audit's fetcher held 10 redirect targets 10.4 s while it fetched 129 lighter pages). One
 * receive an empty source each time: at most 5 a source and a 2-minute invocation.
 */
export const RECHECK_EMPTY_MS = 20_000;

export interface FetchRunSummary {
  rounds: number;
  fetched: number;
  requeued: number;
  /** every source answered empty */
  drained: boolean;
  /** body bytes read (the CloudWatch metrics) */
  bytes: number;
  /** fetches that ended in an error, by seed 001's class */
  errors: { permanent: number; temporary: number };
  /** tasks sent back because their host was not due (politeness by scheduling) */
  politeness: number;
  /** tasks queued under another config that the current one rejects: recorded, not fetched */
  outOfScope: number;
  /** fetch order, for diagnostics and the priority test */
  order: { url: string; source: SourceName }[];
  /** epoch ms when the earliest URL this invocation put back with a delay is due */
  wakeAt?: number;
  /** the same of those no wake-up call was left for as they were sent: the invocation's last one */
  wakeLeft?: number;
  /** the sources of the URLs put back with a delay (named in the wake-up call) */
  wakeSources: SourceName[];
}

/** Polls the frontier until it is empty, the deadline passes or `signal` aborts. */
export async function runFetchStage(deps: StageDeps, opts: FetchRunOptions): Promise<FetchRunSummary> {
  const config = await deps.loadConfig();
  const weights = sourceWeights(config.weights);
  // The sources not polled at all (a wake-up call's), and when each other one was found empty.
  const notPolled = new Set(opts.sources?.length ? SOURCES.filter((s) => !opts.sources?.includes(s)) : []);
  const emptyAt = new Map<SourceName, number>();
  const recheckMs = opts.recheckEmptyMs ?? RECHECK_EMPTY_MS;
  const exhausted = () => {
    const now = deps.now();
    const out = new Set(notPolled);
    for (const [s, at] of emptyAt) if (now - at < recheckMs) out.add(s);
    return out;
  };
  const memory = fetchMemoryPlan(opts.memoryMb ?? fetchMemoryMb(config.fetch), config.fetch);
  const requests = new Lane(() => config.fetch.concurrency);
  // The invocation's stop: the caller's signal, or a round that failed (an AWS failure), after which
  // no task starts and every wait for a turn ends.
  const stop = new AbortController();
  if (opts.signal?.aborted) stop.abort();
  else opts.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  const turns = new HostTurns(deps, config, opts.deadline, stop.signal);
  const proxy = await proxyFor(config, deps);
  const ctx: FetchContext = {
    deps,
    config,
    // A robots.txt request takes its host's turn from the same HostTurns as the pages.
    robots: createRobotsCache(deps.hosts, config, deps.now, {
      limit: (request) => requests.run(request),
      turns,
      proxy,
    }),
    requests,
    turns,
    deadline: opts.deadline,
    signal: stop.signal,
    stop: () => stop.abort(),
    auth: await authSessionsFor(config, deps, proxy),
    proxy,
    memory,
    largeBodies: new ByteBudget(() => memory.largeBodyBudget),
    room: async () => undefined,
  };
  const summary: FetchRunSummary = {
    rounds: 0,
    fetched: 0,
    requeued: 0,
    drained: false,
    bytes: 0,
    errors: { permanent: 0, temporary: 0 },
    politeness: 0,
    outOfScope: 0,
    order: [],
    wakeSources: [],
  };
  const leases = new Leases(deps.queues, (err) => deps.log.warn('lease heartbeat failed', { err }));
  leases.start();
  // Polling every source under a politeness wait, it says it runs and which hosts it works: an
  // extract batch of those hosts' URLs leaves them to it (fetch-presence.ts).
  const polite = config.fetch.waitBetweenRequestsMs > 0;
  const presence = opts.sources?.length || !polite ? null : new FetchPresence(deps, opts.deadline);
  // Drained, it takes its presence back and looks at every source once more: a batch may have
  // left it URLs since its last receive.
  let lastLook = false;
  try {
    while (!stopped(ctx) && summary.rounds < (opts.maxRounds ?? Number.POSITIVE_INFINITY)) {
      if (!lastLook) await presence?.renew();
      const source = pickSource(weights, exhausted(), deps.random);
      if (!source && presence && !lastLook) {
        await presence.end();
        lastLook = true;
        emptyAt.clear();
        continue;
      }
      if (!source) {
        summary.drained = true;
        break;
      }
      const queueUrl = deps.queueUrls.frontier[source];
      const messages = await deps.queues.receive<FrontierMessage>(
        queueUrl,
        FRONTIER_QUEUE.receiveBatch,
        0,
        leaseSeconds(),
      );
      if (messages.length === 0) {
        emptyAt.set(source, deps.now());
        continue;
      }
      lastLook = false;
      // Woken for URLs put back: a partial batch is what there was to wake for, and what came back
      // from this round is delayed, so another receive would come back empty. New work has its own
      // starters (a kick, its own wake-up call, the tick).
      if (opts.sources?.length && messages.length < FRONTIER_QUEUE.receiveBatch)
        emptyAt.set(source, deps.now());
      else await growRound(ctx, queueUrl, messages);
      summary.rounds++;
      leases.hold(
        queueUrl,
        messages.map((m) => m.receiptHandle),
      );
      const roundHosts = new Set(messages.flatMap((m) => tasksOf(m).map((t) => hostOf(t.url))));
      await presence?.renew(roundHosts);
      const flusher = new RoundFlusher(
        deps,
        leases,
        (results) => count(summary, source, results, deps.now()),
        memory,
      );
      const aside = watchStragglers(flusher, async () => {
        // Slow requests hold the round. The other hosts' new URLs start a fetcher of their own (an
        // extract batch left them to this one), and what it put back for their turns gets
        // wake-up calls. The slow hosts' stay with it: a host that answers slowly is not given
        // a second fetcher's requests on top.
        const slow = ctx.turns.hostsLeft();
        // Only the slow hosts in the round: nothing is held up (a silent host's retries at a
        // crawl's end took 21 fetch invocations instead of 12 when it stepped aside for them).
        if ([...roundHosts].every((h) => slow.includes(h))) return false;
        flusher.wakeExcept = new Set(slow);
        await presence?.narrow(slow);
        // And a fetcher for what batches left to this one before it stepped aside.
        await deps.kickFetch();
        const at = summary.wakeLeft;
        summary.wakeLeft = undefined;
        if (at !== undefined && !(await wakeLater(deps, at, summary.wakeSources)))
          summary.wakeLeft = Math.min(at, summary.wakeLeft ?? Infinity);
        return true;
      });
      await fetchMessages(ctx, requests, queueUrl, messages, flusher)
        .catch(async (err) => {
          // The writes already under way finish before the invocation fails: none runs behind it.
          await flusher.settle();
          throw err;
        })
        .finally(() => aside.stop());
      await flusher.flush();
    }
    // Instead of waiting, leave a wake-up call for when the earliest URL put back is due (also when
    // out of time: the fetcher chained next does not know what this one put back).
    if (summary.wakeLeft !== undefined) await wakeLater(deps, summary.wakeLeft, summary.wakeSources);
  } finally {
    await presence?.end();
    await leases.stop();
    // Anything still held (an AWS failure mid-round): visible again now, not after a lease.
    await leases.giveBack().catch((err) => deps.log.warn('giving leases back failed', { err }));
  }
  return summary;
}

/**
 * A round none of whose tasks has ended for this long is held by slow requests (a page that takes
 * 20 s, a host that never answers until fetch.timeoutMs): the fetcher steps aside for the rest of
 * it. Until 2026-11-29 three healthy hosts waited 40 s, their links unread, for a fourth's start
 * page that hung (helper-44's audit): an extract batch left their new URLs to this fetcher (its
 * presence), and the tasks it put back for their turns waited for its next round.
 */
export const STRAGGLE_MS = 3_000;

/**
 * Calls `stepAside` while the round has had no task end for STRAGGLE_MS, until it says it stepped
 * aside (true); `stop` ends the watch.
 */
function watchStragglers(
  flusher: RoundFlusher,
  stepAside: () => Promise<boolean>,
): { stop: () => Promise<void> } {
  let stepped: Promise<void> | null = null;
  let done = false;
  const timer = setInterval(() => {
    if (done || stepped || Date.now() - flusher.lastActivity < STRAGGLE_MS) return;
    stepped = stepAside()
      .then((acted) => {
        if (acted) {
          done = true;
          clearInterval(timer);
        }
      })
      .catch(() => {})
      .finally(() => {
        stepped = null;
      });
  }, STRAGGLE_MS / 3).unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await stepped;
    },
  };
}

/** The most frontier messages one round holds (50 tasks each). */
const ROUND_MESSAGES = 100;
/**
 * Hosts a round gathers per place in fetch.concurrency: a polite host has a request in flight a
 * fraction of its delay (200 ms of 1.2 s with a 1 s wait), so a place serves several hosts.
 */
const ROUND_HOSTS_PER_REQUEST = 4;

/**
 * Receives more for a round that spans several hosts, while each receive brings hosts the round
 * does not have yet: polite hosts are each due once per delay, so a round of ten messages (a few
 * hosts each) would be fetched at those hosts' pace while the queue holds others that are due now.
 * Hosts enough to keep `fetch.concurrency` requests in flight at one per delay are enough; a
 * round of one host's URLs stays one receive (its waits are not shared: they go back to the queue).
 */
async function growRound(
  ctx: FetchContext,
  queueUrl: string,
  messages: ReceivedMessage<FrontierMessage>[],
): Promise<void> {
  const hosts = new Set<string>();
  const add = (batch: ReceivedMessage<FrontierMessage>[]) => {
    for (const m of batch) for (const t of tasksOf(m)) hosts.add(hostOf(t.url));
  };
  add(messages);
  let last = messages.length;
  const wanted = ctx.config.fetch.concurrency * ROUND_HOSTS_PER_REQUEST;
  while (
    last === FRONTIER_QUEUE.receiveBatch &&
    messages.length < ROUND_MESSAGES &&
    hosts.size >= OVERLAP_HOSTS &&
    hosts.size < wanted &&
    !stopped(ctx)
  ) {
    const more = await ctx.deps.queues.receive<FrontierMessage>(
      queueUrl,
      FRONTIER_QUEUE.receiveBatch,
      0,
      leaseSeconds(),
    );
    const before = hosts.size;
    add(more);
    messages.push(...more);
    last = hosts.size > before ? more.length : 0;
  }
}

function stopped(ctx: FetchContext): boolean {
  return ctx.deps.now() >= ctx.deadline || ctx.signal?.aborted === true;
}

function count(summary: FetchRunSummary, source: SourceName, results: TaskResult[], now: number): void {
  for (const r of results) {
    if (r.type === 'page') {
      // Out of scope under the changed config: no request was made (fetch-scope.ts).
      if (r.page.outOfScope !== undefined) {
        summary.outOfScope++;
        bump('skipped:out-of-scope');
        continue;
      }
      summary.order.push({ url: r.page.url, source });
      // What robots.txt stopped (disallowed, or unavailable) was decided without a request: "fetched"
      // counted it, so a crawl's figures exceeded the site's own log (29 fetched for 25 requests).
      if (r.page.skipped === 'robots.txt' || r.page.error?.code === 'robots-unavailable') continue;
      // Nor was a request sent to an address the guard refused (private, loopback, link-local) or
      // to a host held for its silence: an error of its URL, not a fetch ("1 fetched" for a crawl
      // that sent nothing).
      if (r.page.error && UNSENT_ERRORS.has(r.page.error.code)) {
        summary.errors[r.page.error.kind]++;
        continue;
      }
      summary.fetched++;
      // base64 in the bundle: 3 bytes per 4 characters.
      summary.bytes += r.page.bodyBytes ?? Math.floor((r.page.body.length * 3) / 4);
      if (r.page.error) summary.errors[r.page.error.kind]++;
      bump('fetched');
      bump(`fetched:${source}`);
    } else {
      summary.requeued++;
      if (r.reason === 'politeness') summary.politeness++;
      bump(`requeued:${r.reason}`);
      if (r.delaySeconds > 0) {
        const due = r.dueAt ?? now + r.delaySeconds * 1000;
        summary.wakeAt = Math.min(summary.wakeAt ?? Infinity, due);
        // One woken as it was sent (fetch-flush.ts) needs no wake-up call at the end.
        if (r.woken) continue;
        summary.wakeLeft = Math.min(summary.wakeLeft ?? Infinity, due);
        if (!summary.wakeSources.includes(source)) summary.wakeSources.push(source);
      }
    }
  }
}

/** Fetches a round's tasks; each message is handed to the flusher as soon as its last task is done. */
async function fetchMessages(
  ctx: FetchContext,
  requests: Lane,
  queueUrl: string,
  messages: ReceivedMessage<FrontierMessage>[],
  flusher: RoundFlusher,
): Promise<void> {
  // A message received before may have had its pages written already (a crash before its delete):
  // its URLs fetched and recorded since it was queued are done; the others' tasks say so, and the
  // index stage checks their URLs' states instead of trusting the task.
  const received = messages.map((message) => ({
    message,
    tasks: tasksOf(message),
  }));
  const fetchedBefore = await fetchedSinceQueued(ctx.deps, ctx.config, received);
  if (fetchedBefore.size > 0) bump('skipped:fetched-since-queued', fetchedBefore.size);
  // Tasks queued under another config are decided again first: the rejected ones send nothing.
  const rescoped = await rescope(
    ctx,
    received.map(({ message, tasks }) =>
      message.receiveCount > 1
        ? tasks.filter((t) => !fetchedBefore.has(t.url)).map((t) => ({ ...t, redelivered: true }))
        : tasks,
    ),
  );
  // One URL in two messages of a round is fetched once, the other copy done with it: a start URL
  // the seed queued again at each resumed run, while its first task waited out the host's
  // Retry-After, reached the host 4 times in 11 ms when the hold ended (helper-53).
  const inRound = new Set<string>();
  const doubled = rescoped.map(() => 0);
  const perMessage = rescoped.map((r, i) =>
    r.fetch.filter((t) => {
      if (inRound.has(t.url)) {
        doubled[i] = (doubled[i] ?? 0) + 1;
        return false;
      }
      inRound.add(t.url);
      return true;
    }),
  );
  const copies = doubled.reduce((a, b) => a + b, 0);
  if (copies > 0) bump('skipped:fetched-in-round', copies);
  const requeued: Requeued[][] = messages.map(() => []);
  // A task fetched before counts as done: a redelivered message whose tasks were all fetched
  // before its first invocation died looked untouched (no page, nothing put back) and went back to
  // its queue as it was, at every receive, until its dead-letter queue took it (a kill -9 and an
  // immediate resume ended with "dead-lettered this run: 1").
  const pages = rescoped.map(
    (r, i) =>
      r.out.length +
      (doubled[i] ?? 0) +
      (received[i]?.tasks.filter((t) => fetchedBefore.has(t.url)).length ?? 0),
  );
  for (const r of rescoped) for (const page of r.out) flusher.page(page);
  const left = perMessage.map((t) => t.length);
  const done = (i: number) =>
    flusher.complete({
      queueUrl,
      receiptHandle: messages[i]?.receiptHandle ?? '',
      requeued: requeued[i] ?? [],
      pages: pages[i] ?? 0,
    });
  for (const [i, n] of left.entries()) if (n === 0) done(i);
  const entries = interleaveByHost(perMessage.flatMap((tasks, msg) => tasks.map((task) => ({ task, msg }))));
  ctx.room = () => flusher.room();
  await fetchRound(ctx, requests, entries, (entry, result) => {
    // A page is written as soon as a flush is due, whichever message it came from; the message
    // itself is deleted once all its tasks are done (and, the flushes being in order, written).
    if (result.type === 'page') {
      flusher.page(result);
      pages[entry.msg] = (pages[entry.msg] ?? 0) + 1;
    } else if (result.reason === 'deadline') requeued[entry.msg]?.push(result);
    else {
      // Back as the next flush goes (its message is then done with it), due from now.
      flusher.requeue({ ...result, dueAt: ctx.deps.now() + result.delaySeconds * 1000 });
      pages[entry.msg] = (pages[entry.msg] ?? 0) + 1;
    }
    left[entry.msg] = (left[entry.msg] ?? 1) - 1;
    if (left[entry.msg] === 0) done(entry.msg);
  });
}

/**
 * Orders tasks so that each host's first task comes before any host's second: a message is 50 URLs
 * of one source, often one host, and workers queued on one host's lane would leave the others idle.
 */
function interleaveByHost<T extends { task: UrlTask }>(entries: T[]): T[] {
  const seen = new Map<string, number>();
  const ranked = entries.map((e, i) => {
    const host = hostOf(e.task.url);
    const rank = seen.get(host) ?? 0;
    seen.set(host, rank + 1);
    return { e, rank, i };
  });
  ranked.sort((a, b) => a.rank - b.rank || a.i - b.i);
  return ranked.map((r) => r.e);
}

/** A frontier message's well-formed tasks (a hand-sent or older message may hold anything). */
function tasksOf(m: ReceivedMessage<FrontierMessage>): UrlTask[] {
  return Array.isArray(m.body?.tasks) ? m.body.tasks.filter(isTask) : [];
}

function isTask(t: unknown): t is UrlTask {
  const task = t as UrlTask;
  return typeof task?.url === 'string' && typeof task.depth === 'number' && typeof task.queue === 'string';
}

/**
 * Fetches a round's tasks concurrently. Tasks of one host share a lane: one request at a time
 * until the host's politeness delay is known (its robots.txt read by the first), then up to
 * `fetch.connectionsPerHost` when it asks for no delay; with a delay the slots space them anyway.
 * Each task gets its own place in `requests` (the invocation's fetch.concurrency) as its `ctx.requests`.
 * A task that fails (an AWS failure: fetchOne does not throw for a site) stops the invocation: no
 * task starts after it, the waits for turns end, and the round rejects with that failure once the
 * requests under way are done. Rejecting at once would leave them running behind the invocation
 * (a Lambda sandbox resumes them, frozen, in a later one; the local runner runs them past its end).
 */
async function fetchRound<T extends { task: UrlTask }>(
  ctx: FetchContext,
  requests: Lane,
  entries: T[],
  onResult: (entry: T, result: TaskResult) => void,
): Promise<void> {
  const lanes = new Map<string, Lane>();
  const laneOf = (host: string) => {
    let lane = lanes.get(host);
    if (!lane) {
      lane = new Lane(() => ctx.turns.connectionsFor(host));
      lanes.set(host, lane);
    }
    return lane;
  };
  // Hosts with tasks left in the round: while several are, a host's turn may be waited for (fetch-one.ts).
  const left = new Map<string, number>();
  for (const e of entries) left.set(hostOf(e.task.url), (left.get(hostOf(e.task.url)) ?? 0) + 1);
  ctx.turns.activeHosts = () => left.size;
  ctx.turns.tasksLeft = (host) => left.get(host) ?? 0;
  ctx.turns.hostsLeft = () => [...left.keys()];
  try {
    // Every task of the round waits in its host's lane (and for its host's turn) at once; only the
    // requests themselves take one of the fetch.concurrency places (ctx.requests, fetch-one.ts),
    // where they also wait for room to hold their pages.
    let failure: { error: unknown } | undefined;
    await Promise.all(
      entries.map(async (entry) => {
        const host = hostOf(entry.task.url);
        const place = new TaskPlace(requests);
        try {
          const result = await laneOf(host)
            .run(() => fetchOne({ ...ctx, requests: place }, entry.task))
            .finally(() => place.release());
          const n = (left.get(host) ?? 1) - 1;
          if (n > 0) left.set(host, n);
          else left.delete(host);
          onResult(entry, result);
        } catch (error) {
          if (failure) return;
          failure = { error };
          ctx.stop();
        }
      }),
    );
    if (failure) throw failure.error;
  } finally {
    ctx.turns.activeHosts = () => 0;
    ctx.turns.tasksLeft = () => 0;
    ctx.turns.hostsLeft = () => [];
    // Slots booked ahead and not used go back, so other workers need not wait for their end.
    await ctx.turns
      .settle()
      .catch((err) =>
        ctx.deps.log.warn('slots booked ahead not given back; they end by themselves', { err }),
      );
  }
}

/**
 * The sources a fetch invocation polls: those named by the wake-up calls that started it, or all
 * (a tick, a kick, a wake-up call from before sources were named, anything unreadable).
 */
export function sourcesToPoll(event: unknown): SourceName[] | undefined {
  const records = (event as { Records?: { body?: unknown }[] } | null)?.Records;
  if (!Array.isArray(records) || records.length === 0) return undefined;
  const named = new Set<SourceName>();
  for (const r of records) {
    let body: Partial<WakeMessage> | null = null;
    try {
      body = typeof r.body === 'string' ? JSON.parse(r.body) : null;
    } catch {
      return undefined;
    }
    const sources = body?.sources;
    if (!Array.isArray(sources) || sources.length === 0) return undefined;
    for (const s of sources) if ((SOURCES as readonly string[]).includes(s)) named.add(s as SourceName);
  }
  return named.size > 0 ? [...named] : undefined;
}
