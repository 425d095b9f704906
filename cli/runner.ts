/**
 * The local runner: Lambda's event sources emulated in-process. It invokes the real handlers
 * with SQS- and EventBridge-shaped events, using the batch sizes, batching windows and
 * concurrency of the topology; honours ReportBatchItemFailures (only successful records are
 * deleted; failed ones come back when their lease ends and go to the DLQ after
 * maxReceiveCount, as SQS does it) and runs until the frontier drains.
 *
 * Leases: a stage batch is received with a short lease (LEASE_SECONDS) that a heartbeat extends
 * while its handler runs, so a batch held by a killed process comes back within ~30 s instead of
 * the queue's 6 × timeout; `stop()` gives back every held batch at once (visibility 0).
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { AwsClients } from '../shared/aws/clients.ts';
import { asNewInvocation } from '../shared/aws/request-counter.ts';
import { createWorkQueues, type ReceivedMessage, type WorkQueues } from '../shared/aws/work-queues.ts';
import type { ScheduleIntervals } from '../shared/crawl/state/scheduling.ts';
import { takeLocalKicks } from '../shared/stages/deps.ts';
import { heartbeatMs, leaseSeconds } from '../shared/stages/fetch-leases.ts';
import {
  FRONTIER_QUEUE,
  FUNCTIONS,
  type QueueUrls,
  SCHEDULES,
  STAGE_QUEUES,
  type StageName,
  type StageQueueName,
} from '../shared/topology.ts';
import { SOURCES } from '../shared/types.ts';

// biome-ignore lint/suspicious/noExplicitAny: handlers differ in event and result types
export type AnyHandler = (event: any, context: Context) => Promise<any>;

export interface InvocationStats {
  invocations: number;
  totalMs: number;
  /** the memory the stage runs with (a Lambda-like context says it; pricing bills it) */
  memoryMb: number;
  maxMs: number;
  failedRecords: number;
}

export interface QueueDepths {
  [queue: string]: { visible: number; inFlight: number; delayed: number };
}

export interface RunnerOptions {
  handlers: Record<StageName, AnyHandler>;
  queueUrls: QueueUrls;
  /** an SQS client that is not counted (event-source polling is counted through its own client) */
  monitor: AwsClients;
  /** the client whose SQS calls are the event source mappings' (billed on AWS too) */
  pollers: AwsClients;
  /** concurrent fetch invocations (the topology's reserved concurrency by default) */
  fetchConcurrency?: number;
  /** called about every 500 ms with the queue depths */
  onTick?: (depths: QueueDepths, stats: Record<StageName, InvocationStats>) => void;
  /** give up after this long (the runner never hangs) */
  timeoutMs?: number;
  /** the stack's EventBridge rules as timers while draining (see `scheduleIntervals`); off when absent */
  schedules?: ScheduleIntervals;
  /** memory per stage where the config sizes it (fetch: fetch-memory.ts); @default FUNCTIONS */
  memoryMb?: Partial<Record<StageName, number>>;
}

export { type ScheduleIntervals, scheduleIntervals } from '../shared/crawl/state/scheduling.ts';

const region = process.env.AWS_REGION ?? 'us-east-1';

/** A stage batch's lease (what a killed process makes the next run wait at most), the fetch stage's. */
export { heartbeatMs, LEASE_SECONDS, leaseSeconds } from '../shared/stages/fetch-leases.ts';

/** The local context also carries the runner's stop signal (`trawlStop`), which a stage may honour. */
export type LocalContext = Context & { trawlStop?: AbortSignal };

/** A Lambda-like context with the stage's timeout. */
export function lambdaContext(
  stage: StageName,
  stop?: AbortSignal,
  memoryMb = FUNCTIONS[stage].memoryMb,
): LocalContext {
  const deadline = Date.now() + FUNCTIONS[stage].timeoutSeconds * 1000;
  return {
    trawlStop: stop,
    callbackWaitsForEmptyEventLoop: false,
    functionName: `trawl-local-${stage}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:trawl-local-${stage}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/trawl-local-${stage}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** An EventBridge scheduled event, as a schedule rule delivers it. */
export function scheduledEvent(detailType = 'Scheduled Event', detail: Record<string, unknown> = {}) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': detailType,
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString(),
    region,
    resources: [],
    detail,
  };
}

export function sqsEvent(queueUrl: string, messages: ReceivedMessage<unknown>[]): SQSEvent {
  const arn = `arn:aws:sqs:${region}:000000000000:${queueUrl.split('/').pop()}`;
  return {
    Records: messages.map((m) => ({
      messageId: m.id,
      receiptHandle: m.receiptHandle,
      body: JSON.stringify(m.body),
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(Date.now()),
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: arn,
      awsRegion: region,
    })),
  };
}

/** Depth keys: the source names for the frontier, `stage:extract` and `stage:index` for the stages. */
function flatQueues(urls: QueueUrls): [string, string][] {
  return [
    ...SOURCES.map((s) => [s, urls.frontier[s]] as [string, string]),
    ['stage:extract', urls.extract],
    ['stage:index', urls.index],
    ...(urls.wake ? [['stage:wake', urls.wake] as [string, string]] : []),
  ];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the pipeline until every queue is empty and nothing is in flight. */
export class LocalRunner {
  readonly stats: Record<StageName, InvocationStats>;
  private readonly pollQueues: WorkQueues;
  private readonly monitorQueues: WorkQueues;
  private running = 0;
  private fetchRunning = 0;
  /** how many depth readings `drain` has taken: pollers wait for a fresh one after an empty receive */
  private depthReads = 0;
  private stopped = false;
  private latest: QueueDepths = {};
  private stopTimers: (() => void) | null = null;
  /** raised by `stop()`: no new work is taken, held leases are given back */
  private readonly halt = new AbortController();
  /**
   * A handler that failed on the config (a secret that no longer resolves, a stored config of
   * another schema that does not validate): every invocation would fail the same way, and the
   * drain would go on invoking for ever. The run stops with it (the command exits 2).
   */
  configFailure: Error | null = null;
  /** leases held by the event-source pollers: queue URL → receipt handles */
  private readonly held = new Map<string, Set<string>>();
  /** Scheduled invocations the timers started, per stage. */
  readonly fired: Record<'seed' | 'refresh', number> = { seed: 0, refresh: 0 };

  constructor(private readonly opts: RunnerOptions) {
    this.pollQueues = createWorkQueues({ client: opts.pollers.sqs });
    this.monitorQueues = createWorkQueues({ client: opts.monitor.sqs });
    const empty = (stage: StageName) => ({
      invocations: 0,
      totalMs: 0,
      memoryMb: opts.memoryMb?.[stage] ?? FUNCTIONS[stage].memoryMb,
      maxMs: 0,
      failedRecords: 0,
    });
    this.stats = {
      seed: empty('seed'),
      fetch: empty('fetch'),
      extract: empty('extract'),
      index: empty('index'),
      refresh: empty('refresh'),
    };
  }

  /** Invokes a handler as Lambda would, recording its duration. */
  async invoke(stage: StageName, event: unknown): Promise<unknown> {
    const started = performance.now();
    this.running++;
    // Counted here (synchronously), whoever starts it: the runner's kicks or the wake-up mapping.
    if (stage === 'fetch') this.fetchRunning++;
    try {
      const context = lambdaContext(stage, this.halt.signal, this.stats[stage].memoryMb);
      return await asNewInvocation(() => this.opts.handlers[stage](event, context));
    } finally {
      this.running--;
      if (stage === 'fetch') this.fetchRunning--;
      const ms = performance.now() - started;
      const s = this.stats[stage];
      s.invocations++;
      s.totalMs += ms;
      s.maxMs = Math.max(s.maxMs, ms);
    }
  }

  /** Polls and invokes until drained (or `until()` says stop); resolves with the final depths. */
  async drain(until?: () => boolean): Promise<QueueDepths> {
    this.stopped = false;
    const ownTimers = this.startSchedules();
    // Stages that produce work kick a fetcher, as on AWS (deps.kickFetch: an async invoke there).
    const giveBackKicks = takeLocalKicks(() => this.kick());
    const deadline = Date.now() + (this.opts.timeoutMs ?? 60 * 60_000);
    const stageQueues = (['extract', 'index', 'wake'] as const).filter((q) => this.opts.queueUrls[q]);
    const loops = stageQueues.flatMap((q) =>
      Array.from({ length: STAGE_QUEUES[q].maxConcurrency }, (_, i) => this.esmLoop(q, i)),
    );
    let depths: QueueDepths = {};
    let quietTicks = 0;
    try {
      while (Date.now() < deadline && !until?.() && !this.halted) {
        depths = await this.queueDepths();
        this.latest = depths;
        this.depthReads++;
        this.opts.onTick?.(depths, this.stats);
        this.tick(depths);
        const busy = pending(depths) || this.running > 0;
        // Two quiet looks in a row: SQS counters are approximate, a single zero can be a race.
        quietTicks = busy ? 0 : quietTicks + 1;
        if (quietTicks >= 2) break;
        await sleep(busy ? 200 : 50);
      }
    } finally {
      giveBackKicks();
      if (ownTimers) this.stopSchedules();
      this.stopped = true;
      await Promise.all(loops);
      while (this.running > 0) await sleep(20);
    }
    return depths;
  }

  /** True once `stop()` was called. */
  get halted(): boolean {
    return this.halt.signal.aborted;
  }

  /**
   * Ctrl-C: take no more work, tell running stages to stop (the signal in their context), and
   * give back every batch the pollers hold (visibility 0) so the next run takes it at once.
   */
  async stop(): Promise<void> {
    this.halt.abort();
    this.stopped = true;
    this.stopSchedules();
    await this.giveBack();
  }

  /** Gives back every held lease (visibility 0). */
  async giveBack(): Promise<void> {
    const all = [...this.held].map(([url, handles]) => {
      const entries = [...handles].map((receiptHandle) => ({ receiptHandle, seconds: 0 }));
      handles.clear();
      return this.pollQueues.changeVisibility(url, entries).catch(() => undefined);
    });
    await Promise.all(all);
  }

  /**
   * Drains again and again with the schedule timers on, until `until()` says stop: a crawl kept
   * fresh as the deployed stack keeps it (discovery cycles, refresh cycles). Needs `schedules`.
   */
  async watch(until: () => boolean): Promise<void> {
    if (!this.opts.schedules) throw new Error('watch needs the schedules option');
    const ownTimers = this.startSchedules();
    try {
      while (!until() && !this.halted) {
        await this.drain(until);
        if (!until()) await sleep(200);
      }
    } finally {
      if (ownTimers) this.stopSchedules();
      while (this.running > 0) await sleep(20);
    }
  }

  /** Starts the timers when `schedules` is set and they are not running; true when this call started them. */
  private startSchedules(): boolean {
    const s = this.opts.schedules;
    if (!s || this.stopTimers) return false;
    const timers = [this.timer('seed', s.discoveryMs), this.timer('refresh', s.refreshMs)];
    this.stopTimers = () => {
      for (const t of timers) clearInterval(t);
    };
    return true;
  }

  /** One schedule rule: EventBridge would start overlapping invocations; one at a time is clearer locally. */
  private timer(stage: 'seed' | 'refresh', ms: number): NodeJS.Timeout {
    let busy = false;
    const fire = () => {
      if (busy) return;
      busy = true;
      this.fired[stage]++;
      this.invoke(stage, scheduledEvent(SCHEDULES[stage === 'seed' ? 'discovery' : 'refresh'].detailType))
        .catch((err) => process.stderr.write(`scheduled ${stage} failed: ${(err as Error).message}\n`))
        .finally(() => (busy = false));
    };
    return setInterval(fire, ms).unref();
  }

  private stopSchedules(): void {
    this.stopTimers?.();
    this.stopTimers = null;
  }

  private get maxFetch(): number {
    return this.opts.fetchConcurrency ?? FUNCTIONS.fetch.reservedConcurrency ?? 1;
  }

  /** A kick (an async invoke on AWS): one more fetcher, unless the reserved concurrency is in use. */
  private kick(): void {
    if (!this.stopped && !this.halted && this.fetchRunning < this.maxFetch) this.startFetch();
  }

  /**
   * The stack's one-minute tick, compressed: frontier work that is visible while no fetcher runs
   * and no wake-up call is waiting to start one (a lease that ran out after a crash, a kick
   * dropped at the concurrency limit, work sent from outside) gets fetchers now, as many as there
   * are receive batches. Otherwise fetchers start only as on AWS: kicks and wake-up calls, so the
   * bench's request counts are the stack's (a fetcher started here polls every source).
   */
  private tick(depths: QueueDepths): void {
    if (this.fetchRunning > 0 || (depths['stage:wake']?.visible ?? 0) > 0) return;
    const frontierVisible = SOURCES.reduce((n, s) => n + (depths[s]?.visible ?? 0), 0);
    const wanted = Math.min(this.maxFetch, Math.ceil(frontierVisible / FRONTIER_QUEUE.receiveBatch));
    while (this.fetchRunning < wanted) this.startFetch();
  }

  private startFetch(): void {
    this.invoke('fetch', scheduledEvent('Fetch Kick')).catch((err) => {
      process.stderr.write(`fetch invocation failed: ${(err as Error).message}\n`);
      this.failedOnConfig(err);
    });
  }

  /** Stops the run when a handler failed on the config (see `configFailure`). */
  private failedOnConfig(err: unknown): void {
    if ((err as Error)?.name !== 'ConfigError' || this.configFailure) return;
    this.configFailure = err as Error;
    void this.stop();
  }

  /** No handler running and nothing waiting, delayed or in flight in any queue (as `drain` ends). */
  async quiet(): Promise<boolean> {
    return this.running === 0 && !pending(await this.queueDepths());
  }

  /** Every queue's depth (an uncounted client). */
  async queueDepths(): Promise<QueueDepths> {
    const entries = await Promise.all(
      flatQueues(this.opts.queueUrls).map(
        async ([q, url]) => [q, await this.monitorQueues.depth(url)] as const,
      ),
    );
    return Object.fromEntries(entries);
  }

  /**
   * One poller of an event source mapping (batch size and window from the topology). Poller i takes
   * work only past i full batches of backlog, as Lambda scales its pollers up; after a full batch it
   * receives again at once instead of waiting for the next depth reading.
   */
  private async esmLoop(queue: StageQueueName, index = 0): Promise<void> {
    const spec = STAGE_QUEUES[queue];
    const url = this.opts.queueUrls[queue];
    let full = false;
    while (!this.stopped && !this.halted) {
      // Lambda's pollers long-poll for free-ish; here we look at the (uncounted) depth first so the
      // crawl's request counts hold only receives that return work.
      if (!full && (this.latest[`stage:${queue}`]?.visible ?? 0) <= index * spec.batchSize) {
        await sleep(30);
        continue;
      }
      try {
        full = await this.pollOnce(queue, url);
      } catch (err) {
        // A failed receive or delete (throttling, a network error) must not end the poller: what it
        // did not delete comes back when its lease ends and is done again (handlers are idempotent).
        process.stderr.write(`${queue} poller: ${(err as Error).message}\n`);
        full = false;
        await sleep(50);
      }
    }
  }

  /** One receive, invoke and delete of the event source mapping; true when the batch was full. */
  private async pollOnce(queue: StageQueueName, url: string): Promise<boolean> {
    const spec = STAGE_QUEUES[queue];
    const batch = await this.collectBatch(queue, url, spec.batchSize, spec.maxBatchingWindowSeconds * 1000);
    if (batch.length === 0) {
      // The depth reading that sent this poller was stale (another took the work): wait for a
      // fresh one rather than receive again, so idle receives are not counted as the crawl's.
      const seen = this.depthReads;
      while (this.depthReads === seen && !this.stopped && !this.halted) await sleep(30);
      return false;
    }
    const failed = await this.runLeased(queue, url, batch);
    this.stats[spec.consumer].failedRecords += failed.size;
    const done = batch.filter((m) => !failed.has(m.id)).map((m) => m.receiptHandle);
    // Finished after stop() gave it back: still deleted, so the next run does not do it again.
    if (done.length) await this.pollQueues.delete(url, done);
    return batch.length >= spec.batchSize;
  }

  /** Invokes the consumer on a batch while a heartbeat keeps its lease; resolves with the failed ids. */
  private async runLeased(
    queue: StageQueueName,
    url: string,
    batch: ReceivedMessage<unknown>[],
  ): Promise<Set<string>> {
    const handles = this.held.get(url) ?? new Set<string>();
    this.held.set(url, handles);
    for (const m of batch) handles.add(m.receiptHandle);
    const beat = setInterval(() => {
      const entries = batch
        .filter((m) => handles.has(m.receiptHandle))
        .map((m) => ({ receiptHandle: m.receiptHandle, seconds: leaseSeconds() }));
      // A missed beat is not fatal: the lease has two more beats' worth of time left.
      if (entries.length) this.pollQueues.changeVisibility(url, entries).catch(() => undefined);
    }, heartbeatMs());
    try {
      const res = (await this.invoke(STAGE_QUEUES[queue].consumer, sqsEvent(url, batch))) as
        | SQSBatchResponse
        | undefined;
      return new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      // A thrown handler fails the whole batch, as on Lambda.
      process.stderr.write(`${queue} invocation failed: ${(err as Error).message}\n`);
      this.failedOnConfig(err);
      return new Set(batch.map((m) => m.id));
    } finally {
      clearInterval(beat);
      for (const m of batch) handles.delete(m.receiptHandle);
    }
  }

  private async collectBatch(
    queue: StageQueueName,
    url: string,
    size: number,
    windowMs: number,
  ): Promise<ReceivedMessage<unknown>[]> {
    const batch = await this.pollQueues.receive<unknown>(url, size, 0, leaseSeconds());
    if (batch.length === 0) return batch;
    // The batching window: Lambda invokes when the batch is full or the window ends. Here it also
    // ends when nothing upstream can add to the batch any more (a crawl's tail), so a local crawl
    // does not finish a window late; while pages are still being fetched it holds as on AWS.
    // Receives only when a depth reading shows messages, as the first receive (Lambda's pollers'
    // long polls return when messages arrive; counted receives are those that return work).
    // A reading taken before the last receive still counts what that receive took: wait for a newer one.
    const until = Date.now() + windowMs;
    const open = () =>
      batch.length < size && Date.now() < until && !this.stopped && !this.upstreamIdle(queue);
    let seen = this.depthReads;
    while (open()) {
      if (this.depthReads === seen || (this.latest[`stage:${queue}`]?.visible ?? 0) === 0) {
        await sleep(30);
        continue;
      }
      seen = this.depthReads;
      batch.push(...(await this.pollQueues.receive<unknown>(url, size - batch.length, 0, leaseSeconds())));
    }
    return batch;
  }

  /** No fetcher running and nothing in the frontier (nor, for index, in extract): no more work can come. */
  private upstreamIdle(queue: StageQueueName): boolean {
    if (queue === 'wake' || this.fetchRunning > 0) return queue === 'wake';
    const keys: string[] = [...SOURCES, ...(queue === 'index' ? ['stage:extract'] : [])];
    return keys.every((k) => {
      const d = this.latest[k];
      return d !== undefined && d.visible + d.inFlight + d.delayed === 0;
    });
  }
}

/** Whether any queue holds a message, visible, delayed or in flight. */
function pending(depths: QueueDepths): boolean {
  return Object.values(depths).some((d) => d.visible + d.inFlight + d.delayed > 0);
}
