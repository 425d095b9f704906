/**
 * Creates a crawl's queues, tables and bucket from the topology, for the emulator (moto,
 * LocalStack) and for `trawl crawl` runs outside a deployed stack. Idempotent. The CDK stack
 * builds the same resources from the same topology.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import {
  DLQ_RETENTION_DAYS,
  FRONTIER,
  FRONTIER_QUEUE,
  QUEUE_MAX_MESSAGE_BYTES,
  type QueueName,
  type QueueUrls,
  type ResourceNames,
  STAGE_QUEUES,
  TABLES,
} from '../topology.ts';
import type { AwsClients } from './clients.ts';

export interface QueueSettings {
  visibilityTimeoutSeconds: number;
  maxReceiveCount: number;
}

export interface ProvisionOptions {
  /** tests shorten visibility timeouts; the default is the topology's */
  queueSettings?: (queue: QueueName) => QueueSettings;
}

export interface ProvisionedResources {
  queueUrls: QueueUrls;
  dlqUrls: QueueUrls;
  bucket: string;
  urlsTable: string;
  hostsTable: string;
}

/** The topology's settings for a queue. */
export function topologyQueueSettings(queue: QueueName): QueueSettings {
  if ('stage' in queue) return STAGE_QUEUES[queue.stage];
  return FRONTIER_QUEUE;
}

async function createQueue(clients: AwsClients, name: string, s: QueueSettings) {
  const dlq = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}-dlq`,
      Attributes: {
        MessageRetentionPeriod: String(DLQ_RETENTION_DAYS * 86_400),
        MaximumMessageSize: String(QUEUE_MAX_MESSAGE_BYTES),
        SqsManagedSseEnabled: 'true',
      },
    }),
  );
  const dlqAttrs = await clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const main = await clients.sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(s.visibilityTimeoutSeconds),
        MaximumMessageSize: String(QUEUE_MAX_MESSAGE_BYTES),
        SqsManagedSseEnabled: 'true',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqAttrs.Attributes?.QueueArn,
          maxReceiveCount: s.maxReceiveCount,
        }),
      },
    }),
  );
  return { url: main.QueueUrl as string, dlq: dlq.QueueUrl as string };
}

async function createTable(clients: AwsClients, name: string, key: string) {
  const attrs = [{ AttributeName: key, AttributeType: 'S' as const }];
  try {
    await clients.ddbRaw.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: attrs,
        KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
        SSESpecification: { Enabled: true },
      }),
    );
    await clients.ddbRaw.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      }),
    );
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  await waitActive(clients, name);
}

async function waitActive(clients: AwsClients, name: string) {
  for (let i = 0; i < 120; i++) {
    const d = await clients.ddbRaw.send(new DescribeTableCommand({ TableName: name }));
    if (d.Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function createBucket(clients: AwsClients, bucket: string) {
  try {
    await clients.s3.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

/** Creates whatever is missing and returns the addresses the stages need. */
export async function provision(
  clients: AwsClients,
  names: ResourceNames,
  opts: ProvisionOptions = {},
): Promise<ProvisionedResources> {
  const settings = opts.queueSettings ?? topologyQueueSettings;
  const queueUrls = { frontier: {} } as QueueUrls;
  const dlqUrls = { frontier: {} } as QueueUrls;
  for (const { name } of FRONTIER) {
    const q = await createQueue(clients, names.frontierQueue(name), settings({ frontier: name }));
    queueUrls.frontier[name] = q.url;
    dlqUrls.frontier[name] = q.dlq;
  }
  for (const stage of ['extract', 'index', 'wake'] as const) {
    const q = await createQueue(clients, names.stageQueue(stage), settings({ stage }));
    queueUrls[stage] = q.url;
    dlqUrls[stage] = q.dlq;
  }
  await createTable(clients, names.urlsTable, TABLES.urls.partitionKey);
  await createTable(clients, names.hostsTable, TABLES.hosts.partitionKey);
  await createBucket(clients, names.bucket);
  return {
    queueUrls,
    dlqUrls,
    bucket: names.bucket,
    urlsTable: names.urlsTable,
    hostsTable: names.hostsTable,
  };
}
