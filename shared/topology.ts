/**
 * The one description of Trawl's topology. The CDK stack (infra/) and the local runner
 * (cli/runner) both read it, so queue names, batch sizes, visibility timeouts, redrive
 * and schedules cannot drift between AWS and the emulator.
 */
import type { SourceName } from './types.ts';

export type StageName = 'seed' | 'fetch' | 'extract' | 'index' | 'refresh';
/** The queues an event source mapping consumes: extract and index, and fetch's wake-up calls. */
export type StageQueueName = 'extract' | 'index' | 'wake';
/** A queue a crawl has: one of the six frontier sources, or a stage queue. */
export type QueueName = { frontier: SourceName } | { stage: StageQueueName };

/** Queue URLs as the stages get them (env TRAWL_QUEUES): the frontier sources apart from the stage
 * queues, since `index` names both a source (seed 001) and the indexing stage. */
export interface QueueUrls {
  frontier: Record<SourceName, string>;
  extract: string;
  index: string;
  /** fetch's wake-up calls (absent in a stack deployed before they existed) */
  wake: string;
}

/** The work queues (or their DLQs) by name — `frontier/<source>`, `extract`, `index` — the wake queue left out. */
export function namedQueues(urls: QueueUrls): [string, string][] {
  const frontier = Object.entries(urls.frontier ?? {}).map(
    ([k, v]) => [`frontier/${k}`, v] as [string, string],
  );
  return [...frontier, ['extract', urls.extract], ['index', urls.index]].filter(([, v]) => Boolean(v)) as [
    string,
    string,
  ][];
}

export interface FunctionSpec {
  /** Lambda timeout; the queues a function consumes have visibility ≥ 6× this (AWS guidance). */
  timeoutSeconds: number;
  memoryMb: number;
  /** caps parallel invocations (politeness and cost); undefined = account limit; fetch: the config's fetch.maxInvocations */
  reservedConcurrency?: number;
}

export interface StageQueueSpec {
  consumer: StageName;
  /** Lambda event source mapping batch size */
  batchSize: number;
  maxBatchingWindowSeconds: number;
  visibilityTimeoutSeconds: number;
  /** redrive to the DLQ after this many receives */
  maxReceiveCount: number;
  /** how long SQS keeps a message (see QUEUE_RETENTION) */
  retentionSeconds: number;
  /** batches processed at once (the event source mapping's maximum concurrency; AWS minimum 2) */
  maxConcurrency: number;
}

export interface FrontierSourceSpec {
  name: SourceName;
  /** seed 001 default weight */
  weight: number;
}

export interface ScheduleSpec {
  target: StageName;
  /** EventBridge rate in minutes; `discovery` takes the config's refresh.discoveryInterval when given */
  everyMinutes: number;
  /** the `detail-type` the handler sees */
  detailType: string;
}

export const FUNCTIONS: Record<StageName, FunctionSpec> = {
  // Memory is also CPU on Lambda; these are sized from `npm run bench` (extract ≈ 1.4 ms CPU a page).
  seed: { timeoutSeconds: 60, memoryMb: 256 },
  // One fetch invocation polls the frontier and fetches many URLs concurrently: network wait is
  // billed per GB-s, so concurrency inside the invocation, not more invocations, is what is cheap.
  // Memory: what the default config needs (shared/stages/fetch-memory.ts; a deploy sizes it from
  // the config's fetch section), measured on the bundle by bench/fetch-memory.ts.
  fetch: { timeoutSeconds: 120, memoryMb: 160, reservedConcurrency: 4 },
  extract: { timeoutSeconds: 60, memoryMb: 512 },
  index: { timeoutSeconds: 60, memoryMb: 256 },
  refresh: { timeoutSeconds: 300, memoryMb: 256 },
};

/** Seed 001: user 10000, redir 2000, index 1000, index_follow 100, follow 10, refresh 1. */
export const FRONTIER: FrontierSourceSpec[] = [
  { name: 'user', weight: 10_000 },
  { name: 'redir', weight: 2_000 },
  { name: 'index', weight: 1_000 },
  { name: 'index_follow', weight: 100 },
  { name: 'follow', weight: 10 },
  { name: 'refresh', weight: 1 },
];

export const DLQ_RETENTION_DAYS = 14;
/**
 * The largest message a queue takes, set on every queue and DLQ: SQS allows 1 MiB since 2025 but a
 * queue's MaximumMessageSize may still default to 256 KiB, and inline page messages (fetch-flush.ts)
 * and redriven ones can be larger than that.
 */
export const QUEUE_MAX_MESSAGE_BYTES = 1024 * 1024;
const DAY_SECONDS = 86_400;

/**
 * Message retention sized to the work instead of SQS's default 4 days. A stage message (a page
 * bundle or outcomes pointer) is consumed within seconds and dead-lettered within 5 receives ×
 * its visibility (30 min): a day covers a consumer broken for hours. A frontier task waits until
 * weighted polling reaches its source (the low weights wait behind the high ones for as long as
 * the crawl has higher work) and nothing re-sends it once claimed: a week. Both leave the DLQ,
 * whose 14 days count from the message's first enqueue (SQS), at least a week to keep a dead one.
 * The emulator's queues (provision.ts) keep the default: a local crawl lasts minutes, and
 * changing a queue's attributes on CreateQueue fails for a crawl created before.
 */
export const QUEUE_RETENTION = {
  frontierSeconds: 7 * DAY_SECONDS,
  stageSeconds: 1 * DAY_SECONDS,
  /** what the DLQ keeps a dead message at least, after the longest retention above */
  dlqKeepsAtLeastSeconds: 7 * DAY_SECONDS,
};

/** Frontier queues are polled by the fetch function itself (weighted), not by an event source mapping. */
export const FRONTIER_QUEUE = {
  visibilityTimeoutSeconds: 6 * FUNCTIONS.fetch.timeoutSeconds,
  maxReceiveCount: 5,
  retentionSeconds: QUEUE_RETENTION.frontierSeconds,
  /** messages carry bulks of URL tasks (SMILA linksPerBulk); one SQS request moves many URLs */
  tasksPerMessage: 50,
  /** ReceiveMessage maximum (AWS limit) */
  receiveBatch: 10,
};

export const STAGE_QUEUES: Record<StageQueueName, StageQueueSpec> = {
  extract: {
    consumer: 'extract',
    batchSize: 10,
    // A fast crawl fills batches at once (a message carries up to a whole fetch round); a polite
    // one sends a few pages a pass, and the window gathers passes into one document bulk, manifest
    // and change-feed object instead of three S3 PUTs a pass. Documents are at most this late.
    maxBatchingWindowSeconds: 10,
    visibilityTimeoutSeconds: 6 * FUNCTIONS.extract.timeoutSeconds,
    maxReceiveCount: 5,
    retentionSeconds: QUEUE_RETENTION.stageSeconds,
    maxConcurrency: 4,
  },
  index: {
    consumer: 'index',
    batchSize: 10,
    // No waiting: each index message already carries up to 100 outcomes (S3 PUTs stay ≈ 0.02 a page)
    // and a window would hold back the last documents of a crawl. Measured with 30 s: a polite
    // host's S3 fell $2.88 → $2.31 per million pages (a manifest and a change-feed object per 30 s
    // instead of per extract batch), but a fast crawl's index work moved to its end (the sink's
    // cost in pages/s 18–24 % instead of ±8 %) and documents came up to 30 s later on AWS.
    maxBatchingWindowSeconds: 0,
    visibilityTimeoutSeconds: 6 * FUNCTIONS.index.timeoutSeconds,
    maxReceiveCount: 5,
    retentionSeconds: QUEUE_RETENTION.stageSeconds,
    maxConcurrency: 4,
  },
  // Politeness by scheduling: a fetcher that put a host's URLs back with a delay and found nothing
  // else to do ends, leaving one message delayed until the earliest of them is due; its arrival
  // starts a fetcher (AWS has no delayed invoke; without it the work would wait for the 1-minute
  // tick). The messages carry no work: losing one costs a tick's wait, never a page.
  wake: {
    consumer: 'fetch',
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    visibilityTimeoutSeconds: 6 * FUNCTIONS.fetch.timeoutSeconds,
    maxReceiveCount: 2,
    maxConcurrency: 2,
    retentionSeconds: QUEUE_RETENTION.stageSeconds,
  },
};

export const SCHEDULES: Record<'fetchTick' | 'discovery' | 'refresh', ScheduleSpec> = {
  // Keeps the frontier moving on AWS even when no stage kicked the fetcher.
  fetchTick: { target: 'fetch', everyMinutes: 1, detailType: 'Scheduled Event' },
  discovery: { target: 'seed', everyMinutes: 60, detailType: 'Scheduled Event' },
  refresh: { target: 'refresh', everyMinutes: 60, detailType: 'Scheduled Event' },
};

/** Resource names for a crawl. Bucket names must be globally unique on AWS, so the stack adds its account. */
export function resourceNames(crawl: string) {
  const p = `trawl-${crawl}`;
  return {
    stack: `Trawl-${crawl}`,
    frontierQueue: (s: SourceName) => `${p}-frontier-${s.replace('_', '-')}`,
    stageQueue: (s: StageQueueName) => `${p}-${s}`,
    dlq: (queue: string) => `${queue}-dlq`,
    urlsTable: `${p}-urls`,
    hostsTable: `${p}-hosts`,
    bucket: `${p}-store`,
    function: (s: StageName) => `${p}-${s}`,
  };
}
export type ResourceNames = ReturnType<typeof resourceNames>;

/**
 * DynamoDB key schemas: the URL table keyed by URL, the hosts table by host. No secondary index:
 * the refresh schedule lives in S3 manifests (shared/aws/refresh-manifest.ts), which saves the
 * index write unit every fetched page would cost.
 */
export const TABLES = {
  urls: {
    partitionKey: 'url',
  },
  hosts: { partitionKey: 'host' },
};
