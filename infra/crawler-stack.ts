import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { configFormat } from '../shared/config.ts';
import { CONFIG_KEY } from '../shared/layout.ts';
import {
  FRONTIER,
  FRONTIER_QUEUE,
  type ResourceNames,
  resourceNames,
  SCHEDULES,
  STAGE_QUEUES,
  type StageName,
  type StageQueueName,
} from '../shared/topology.ts';
import type { SourceName } from '../shared/types.ts';
import { ExtractStage } from './constructs/extract.ts';
import { FetchStage } from './constructs/fetch.ts';
import { functionArnFromName } from './constructs/grants.ts';
import { IndexStage } from './constructs/index.ts';
import { CrawlObservability } from './constructs/observability.ts';
import { RefreshStage } from './constructs/refresh.ts';
import { SearchIndex, type SearchTarget } from './constructs/search.ts';
import { SeedStage } from './constructs/seed.ts';
import type { CrawlResources } from './constructs/stage-function.ts';
import { CrawlStorage } from './constructs/storage.ts';
import type { TableCapacity } from './constructs/table-capacity.ts';
import { WorkQueue } from './constructs/work-queue.ts';

/** The S3 key the functions read the crawl config from. */

export interface CrawlerStackProps extends StackProps {
  /** names every resource (`resourceNames(crawlName)`) */
  crawlName: string;
  /** discovery schedule; @default SCHEDULES.discovery.everyMinutes */
  discoveryIntervalMinutes?: number;
  /** refresh-cycle schedule (`refreshCycleMs` of the config); @default SCHEDULES.refresh.everyMinutes */
  refreshIntervalMinutes?: number;
  /** the fetch function's reserved concurrency (config fetch.maxInvocations); @default FUNCTIONS.fetch */
  fetchReservedConcurrency?: number;
  /** the fetch function's memory (MB), sized from the config's fetch section; @default FUNCTIONS.fetch */
  fetchMemoryMb?: number;
  /** the fetch function's /tmp (MB) for large bodies, from the config's fetch section; @default 512 */
  fetchEphemeralMb?: number;
  /** Secrets Manager ARNs of `fetch.auth` (`{ "secretArn" }`): readable by the fetch role only */
  authSecretArns?: string[];
  /**
   * The Secrets Manager ARN of `fetch.proxy.password`: readable by the roles whose requests go
   * through the proxy only, fetch and seed (the start sites' robots.txt)
   */
  proxySecretArns?: string[];
  /** DynamoDB capacity of both tables; @default on-demand */
  dynamoCapacity?: TableCapacity;
  /** index.sink "opensearch": the engine the index function feeds (infra/constructs/search.ts) */
  search?: SearchTarget;
}

/** One crawl on AWS: frontier and stage queues, URL and host tables, the bucket, five stage functions. */
export class CrawlerStack extends Stack {
  readonly storage: CrawlStorage;
  readonly frontier: Record<SourceName, WorkQueue>;
  readonly stageQueues: Record<StageQueueName, WorkQueue>;
  readonly functions: Record<StageName, NodejsFunction>;
  readonly observability: CrawlObservability;

  constructor(scope: Construct, id: string, props: CrawlerStackProps) {
    super(scope, id, props);
    const names = resourceNames(props.crawlName);
    const storage = new CrawlStorage(this, 'Storage', props.dynamoCapacity);
    const frontier = frontierQueues(this, names);
    const stageQueues = {
      extract: stageQueue(this, names, 'extract'),
      index: stageQueue(this, names, 'index'),
      wake: stageQueue(this, names, 'wake'),
    };
    this.storage = storage;
    this.frontier = frontier;
    this.stageQueues = stageQueues;
    const fetchName = names.function('fetch');
    // `frontier` nests the six sources: the frontier source `index` and the index stage queue share a name.
    const queueUrls = this.toJsonString({
      frontier: Object.fromEntries(FRONTIER.map((s) => [s.name, frontier[s.name].queue.queueUrl])),
      extract: stageQueues.extract.queue.queueUrl,
      index: stageQueues.index.queue.queueUrl,
      wake: stageQueues.wake.queue.queueUrl,
    });
    const resources: CrawlResources = {
      names,
      storage,
      frontier: FRONTIER.map((s) => frontier[s.name].queue),
      stageQueues,
      fetchFunctionArn: functionArnFromName(this, fetchName),
      environment: {
        TRAWL_CRAWL: props.crawlName,
        TRAWL_BUCKET: storage.bucket.bucketName,
        TRAWL_URLS_TABLE: storage.urls.tableName,
        TRAWL_HOSTS_TABLE: storage.hosts.tableName,
        TRAWL_QUEUES: queueUrls,
        TRAWL_FETCH_FUNCTION: fetchName,
        TRAWL_CONFIG_KEY: CONFIG_KEY,
        TRAWL_CONFIG_FORMAT: configFormat(),
      },
    };
    const stages = {
      seed: new SeedStage(this, 'Seed', {
        resources,
        discoveryIntervalMinutes: props.discoveryIntervalMinutes ?? SCHEDULES.discovery.everyMinutes,
        proxySecretArns: props.proxySecretArns,
      }),
      fetch: new FetchStage(this, 'Fetch', resources, {
        reservedConcurrency: props.fetchReservedConcurrency,
        memoryMb: props.fetchMemoryMb,
        ephemeralStorageMb: props.fetchEphemeralMb,
        authSecretArns: props.authSecretArns,
        proxySecretArns: props.proxySecretArns,
      }),
      extract: new ExtractStage(this, 'Extract', resources),
      index: new IndexStage(this, 'Index', resources),
      refresh: new RefreshStage(
        this,
        'Refresh',
        resources,
        props.refreshIntervalMinutes ?? SCHEDULES.refresh.everyMinutes,
      ),
    };
    this.functions = {
      seed: stages.seed.fn,
      fetch: stages.fetch.fn,
      extract: stages.extract.fn,
      index: stages.index.fn,
      refresh: stages.refresh.fn,
    };
    if (props.search) {
      const search = new SearchIndex(
        this,
        'Search',
        props.crawlName,
        props.search,
        stages.index.fn.role as IRole,
      );
      stages.index.fn.addEnvironment('TRAWL_SEARCH_ENDPOINT', search.endpoint);
      new CfnOutput(this, 'SearchEndpoint', { value: search.endpoint });
    }
    this.observability = new CrawlObservability(this, 'Observability', {
      crawlName: props.crawlName,
      functions: this.functions,
      frontier: Object.fromEntries(FRONTIER.map((s) => [s.name, frontier[s.name].queue])),
      // Prefixed: the frontier source `index` and the index stage queue share a name.
      deadLetterQueues: {
        ...Object.fromEntries(FRONTIER.map((s) => [`frontier-${s.name}`, frontier[s.name].dlq])),
        'stage-extract': stageQueues.extract.dlq,
        'stage-index': stageQueues.index.dlq,
      },
    });
    new CfnOutput(this, 'DashboardName', { value: this.observability.dashboard.dashboardName });
    new CfnOutput(this, 'BucketName', { value: storage.bucket.bucketName });
    new CfnOutput(this, 'UrlsTableName', { value: storage.urls.tableName });
    new CfnOutput(this, 'HostsTableName', { value: storage.hosts.tableName });
    new CfnOutput(this, 'QueueUrls', { value: queueUrls });
    // Where a message that failed every time ends (trawl status counts them).
    new CfnOutput(this, 'DeadLetterQueueUrls', {
      value: this.toJsonString({
        frontier: Object.fromEntries(FRONTIER.map((s) => [s.name, frontier[s.name].dlq.queueUrl])),
        extract: stageQueues.extract.dlq.queueUrl,
        index: stageQueues.index.dlq.queueUrl,
        wake: stageQueues.wake.dlq.queueUrl,
      }),
    });
    new CfnOutput(this, 'FunctionNames', {
      value: this.toJsonString(
        Object.fromEntries(Object.entries(this.functions).map(([k, f]) => [k, f.functionName])),
      ),
    });
  }
}

function frontierQueues(scope: Construct, names: ResourceNames): Record<SourceName, WorkQueue> {
  const entries = FRONTIER.map((s) => {
    const queueName = names.frontierQueue(s.name);
    const queue = new WorkQueue(scope, `Frontier-${s.name}`, {
      queueName,
      dlqName: names.dlq(queueName),
      // Polled by fetch itself: a message stays invisible ≥ 6 × the fetch timeout.
      visibilityTimeoutSeconds: FRONTIER_QUEUE.visibilityTimeoutSeconds,
      maxReceiveCount: FRONTIER_QUEUE.maxReceiveCount,
      retentionSeconds: FRONTIER_QUEUE.retentionSeconds,
    });
    return [s.name, queue] as const;
  });
  return Object.fromEntries(entries) as Record<SourceName, WorkQueue>;
}

function stageQueue(scope: Construct, names: ResourceNames, stage: StageQueueName): WorkQueue {
  const queueName = names.stageQueue(stage);
  const spec = STAGE_QUEUES[stage];
  return new WorkQueue(scope, `StageQueue-${stage}`, {
    queueName,
    dlqName: names.dlq(queueName),
    visibilityTimeoutSeconds: spec.visibilityTimeoutSeconds,
    maxReceiveCount: spec.maxReceiveCount,
    retentionSeconds: spec.retentionSeconds,
  });
}
