import { Duration } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Construct } from 'constructs';
import { SCHEDULES, STAGE_QUEUES } from '../../shared/topology.ts';
import { allowAuthSecrets, grantStage } from './grants.ts';
import { type CrawlResources, consumeStageQueue, scheduleStage, stageFunction } from './stage-function.ts';

/** What a crawl config sets on the fetch function (infra/app-context.ts). */
export interface FetchStageOptions {
  /** config fetch.maxInvocations; @default FUNCTIONS.fetch */
  reservedConcurrency?: number;
  /** sized from the config (shared/stages/fetch-memory.ts); @default FUNCTIONS.fetch */
  memoryMb?: number;
  /** Secrets Manager ARNs of `fetch.auth` (`{ "secretArn" }`): readable by the fetch role only */
  authSecretArns?: string[];
  /** the Secrets Manager ARN of `fetch.proxy.password`: readable by the fetch and seed roles */
  proxySecretArns?: string[];
  /** /tmp for large bodies read to files (shared/stages/fetch-memory.ts spoolDiskMb); @default 512 */
  ephemeralStorageMb?: number;
}

/** Fetch stage: polls the six frontier queues by weight (seed 001) itself, stores page bundles, feeds extract. */
export class FetchStage extends Construct {
  readonly fn: NodejsFunction;

  constructor(scope: Construct, id: string, r: CrawlResources, opts: FetchStageOptions = {}) {
    super(scope, id);
    // Fixed name: every stage (fetch included, to chain itself) invokes it by name without a token cycle.
    this.fn = stageFunction(this, 'fetch', {
      environment: r.environment,
      functionName: r.names.function('fetch'),
      reservedConcurrency: opts.reservedConcurrency,
      memoryMb: opts.memoryMb,
      ephemeralStorageMb: opts.ephemeralStorageMb,
    });
    // No event source mapping on the frontier: mappings cannot weigh queues against each other.
    grantStage(this.fn, 'fetch', r);
    // Its own wake-up calls start it when URLs it put back with a delay are due (topology.ts).
    consumeStageQueue(this.fn, r.stageQueues.wake.queue, STAGE_QUEUES.wake);
    // One statement for both: the same secret may hold the proxy's password and a site's.
    allowAuthSecrets(this.fn, [
      ...new Set([...(opts.authSecretArns ?? []), ...(opts.proxySecretArns ?? [])]),
    ]);
    // Ticks and kicks are asynchronous invocations. One older than a tick is superseded by the next
    // tick (the queues still hold the work), so it is dropped rather than retried for up to 6 h.
    this.fn.configureAsyncInvoke({
      maxEventAge: Duration.minutes(Math.max(1, SCHEDULES.fetchTick.everyMinutes)),
      retryAttempts: 0,
    });
    scheduleStage(this, 'Tick', SCHEDULES.fetchTick.everyMinutes, this.fn);
  }
}
