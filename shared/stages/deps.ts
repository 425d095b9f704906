/**
 * What every stage needs, built once per Lambda container from its environment (the CDK
 * stack sets it; the local runner sets the same variables before invoking the handlers).
 */

import type { Logger } from '@aws-lambda-powertools/logger';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { type AwsClients, createAwsClients } from '../aws/clients.ts';
import { createHostTable, type HostTable } from '../aws/host-table.ts';
import { createPageStore, type PageStore } from '../aws/page-store.ts';
import { createUrlTable, type UrlTable } from '../aws/url-table.ts';
import { createWorkQueues, type WorkQueues } from '../aws/work-queues.ts';
import type { CrawlConfig } from '../config.ts';
import { CrawlError } from '../errors.ts';
import { CONFIG_KEY } from '../layout.ts';
import { readStoredConfig } from '../stored-config.ts';
import type { QueueUrls } from '../topology.ts';
import { logger, stageLogger } from './logger.ts';

export interface StageDeps {
  crawl: string;
  clients: AwsClients;
  queues: WorkQueues;
  queueUrls: QueueUrls;
  urls: UrlTable;
  hosts: HostTable;
  store: PageStore;
  /** the crawl config, read again when the copy held is older than `maxAgeMs` (@default CONFIG_TTL_MS) */
  loadConfig(opts?: { maxAgeMs?: number }): Promise<CrawlConfig>;
  now(): number;
  random(): number;
  kickFetch(): Promise<void>;
  log: Logger;
}

/** The config object is re-read at most this often per container. */
const CONFIG_TTL_MS = 30_000;

function required(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new CrawlError(`environment variable ${name} is not set`);
  return v;
}

/** Builds the dependencies from environment variables (TRAWL_*; AWS_ENDPOINT_URL for emulators). */
export function depsFromEnv(env: NodeJS.ProcessEnv = process.env): StageDeps {
  const clients = createAwsClients();
  const bucket = required(env, 'TRAWL_BUCKET');
  const store = createPageStore({ client: clients.s3, bucket });
  const configKey = env.TRAWL_CONFIG_KEY ?? CONFIG_KEY;
  // `trawl refresh --now` shifts the clock of every stage by a fixed offset.
  const offset = Number(env.TRAWL_CLOCK_OFFSET_MS ?? 0);
  let cached: { config: CrawlConfig; at: number } | null = null;
  const fetchFunction = env.TRAWL_FETCH_FUNCTION;
  return {
    crawl: required(env, 'TRAWL_CRAWL'),
    clients,
    queues: createWorkQueues({ client: clients.sqs }),
    queueUrls: JSON.parse(required(env, 'TRAWL_QUEUES')) as QueueUrls,
    urls: createUrlTable({ client: clients.ddb, tableName: required(env, 'TRAWL_URLS_TABLE') }),
    hosts: createHostTable({ client: clients.ddb, tableName: required(env, 'TRAWL_HOSTS_TABLE') }),
    store,
    async loadConfig({ maxAgeMs = CONFIG_TTL_MS } = {}) {
      if (cached && Date.now() - cached.at < maxAgeMs) return cached.config;
      const raw = await store.getJson<unknown>(configKey);
      if (!raw) throw new CrawlError(`no crawl config at s3://${bucket}/${configKey}`);
      const config = await readStoredConfig(raw, env.TRAWL_CONFIG_FORMAT, `s3://${bucket}/${configKey}`);
      cached = { config, at: Date.now() };
      return cached.config;
    },
    now: () => Date.now() + offset,
    random: Math.random,
    async kickFetch() {
      // On AWS a stage that produced work starts a fetcher at once (async invoke) instead of
      // waiting for the one-minute tick; locally the runner that runs the stages takes the kick.
      if (!fetchFunction) {
        localKick?.();
        return;
      }
      await clients.lambda.send(new InvokeCommand({ FunctionName: fetchFunction, InvocationType: 'Event' }));
    },
    log: logger,
  };
}

/** Where a kick goes without a fetch function to invoke: the local runner that is draining, if any. */
let localKick: (() => void) | null = null;

/** The local runner takes kicks while it drains (`null` gives them back to the previous taker). */
export function takeLocalKicks(kick: (() => void) | null): () => void {
  const previous = localKick;
  localKick = kick;
  return () => {
    localKick = previous;
  };
}

// One set per stage name: on Lambda each function has its own containers, and the local runner,
// which runs every stage in one process, must not let one stage's caches serve another.
const shared = new Map<string, StageDeps>();
/** One set of deps per container (clients and caches are reused across invocations). */
export function containerDeps(stage = 'any'): StageDeps {
  let deps = shared.get(stage);
  if (!deps) {
    deps = { ...depsFromEnv(), log: stageLogger(stage) };
    shared.set(stage, deps);
  }
  return deps;
}
/** Drops the container deps (the local runner does this when it points at new resources). */
export function resetContainerDeps(): void {
  shared.clear();
}
