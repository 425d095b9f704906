/**
 * AWS SDK clients for every part of Trawl. The standard SDK chain decides where AWS is:
 * `AWS_ENDPOINT_URL` points all of them at an emulator (moto, LocalStack), unset means AWS.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { countingMiddleware } from './request-counter.ts';

export interface AwsClients {
  sqs: SQSClient;
  ddb: DynamoDBDocumentClient;
  ddbRaw: DynamoDBClient;
  s3: S3Client;
  lambda: LambdaClient;
  events: EventBridgeClient;
}

/** Creates the clients; against an emulator S3 needs path-style addressing (docs/design-facts.md). */
export function createAwsClients(
  opts: { endpoint?: string; region?: string; count?: boolean } = {},
): AwsClients {
  const endpoint = opts.endpoint ?? process.env.AWS_ENDPOINT_URL;
  const region = opts.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const common = { region, ...(endpoint ? { endpoint } : {}), maxAttempts: 5 };
  const sqs = new SQSClient(common);
  const ddbRaw = new DynamoDBClient(common);
  const ddb = DynamoDBDocumentClient.from(ddbRaw, { marshallOptions: { removeUndefinedValues: true } });
  const s3 = new S3Client({ ...common, forcePathStyle: Boolean(endpoint) });
  const lambda = new LambdaClient(common);
  const events = new EventBridgeClient(common);
  // Monitoring (the local runner's queue depth polls) is not part of what a crawl costs.
  if (opts.count !== false) {
    sqs.middlewareStack.use(countingMiddleware('SQS'));
    ddbRaw.middlewareStack.use(countingMiddleware('DynamoDB'));
    s3.middlewareStack.use(countingMiddleware('S3'));
    lambda.middlewareStack.use(countingMiddleware('Lambda'));
    events.middlewareStack.use(countingMiddleware('EventBridge'));
  }
  return { sqs, ddb, ddbRaw, s3, lambda, events };
}
