/**
 * Least-privilege grants with exact action lists. CDK's grantRead/grantReadWrite emit wildcard
 * actions (`s3:GetObject*`, `dynamodb:BatchGet*`); these helpers never do, and refuse to.
 */
import { Arn, ArnFormat, type Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';

// The batch APIs are authorized by the single-message actions (SendMessageBatch by
// sqs:SendMessage, DeleteMessageBatch by sqs:DeleteMessage, ChangeMessageVisibilityBatch by
// sqs:ChangeMessageVisibility), so no extra actions are listed for them.
export type SqsAction =
  | 'SendMessage'
  | 'ReceiveMessage'
  | 'DeleteMessage'
  | 'ChangeMessageVisibility'
  | 'GetQueueAttributes';
export type DynamoAction =
  | 'GetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchGetItem'
  | 'BatchWriteItem'
  | 'Query';
export type S3Action = 'GetObject' | 'PutObject';

/** Adds one statement to the grantee's role; throws on a wildcard action. */
export function allow(grantee: iam.IGrantable, actions: string[], resources: string[]): void {
  const wild = actions.find((a) => a.includes('*'));
  if (wild) throw new Error(`wildcard IAM action ${wild}: list the exact actions`);
  grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources }));
}

/** Exact SQS actions on the given queues. */
export function allowQueues(grantee: iam.IGrantable, queues: sqs.IQueue[], actions: SqsAction[]): void {
  allow(
    grantee,
    actions.map((a) => `sqs:${a}`),
    queues.map((q) => q.queueArn),
  );
}

/** Exact DynamoDB actions on a table (or, with `indexName`, on one of its indexes only). */
export function allowTable(
  grantee: iam.IGrantable,
  table: dynamodb.ITable,
  actions: DynamoAction[],
  indexName?: string,
): void {
  const arn = indexName ? `${table.tableArn}/index/${indexName}` : table.tableArn;
  allow(
    grantee,
    actions.map((a) => `dynamodb:${a}`),
    [arn],
  );
}

/** Exact S3 object actions under the given key prefixes (e.g. `pages/`). */
export function allowObjects(
  grantee: iam.IGrantable,
  bucket: s3.IBucket,
  prefixes: string[],
  actions: S3Action[],
): void {
  allow(
    grantee,
    actions.map((a) => `s3:${a}`),
    prefixes.map((p) => bucket.arnForObjects(`${p}*`)),
  );
}

/** s3:ListBucket on the bucket, limited to keys under one prefix (the s3:prefix condition). */
export function allowListPrefix(grantee: iam.IGrantable, bucket: s3.IBucket, prefix: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [`${prefix}*`] } },
    }),
  );
}

/** lambda:InvokeFunction on one function ARN. */
export function allowInvoke(grantee: iam.IGrantable, functionArn: string): void {
  allow(grantee, ['lambda:InvokeFunction'], [functionArn]);
}

/** events:PutEvents on the account's default event bus. */
export function allowPutEventsDefaultBus(grantee: iam.IGrantable, stack: Stack): void {
  const bus = stack.formatArn({
    service: 'events',
    resource: 'event-bus',
    resourceName: 'default',
  });
  allow(grantee, ['events:PutEvents'], [bus]);
}

/** The ARN of a function in this stack's account and region, from its fixed name (no token cycle). */
export function functionArnFromName(stack: Stack, functionName: string): string {
  return Arn.format(
    {
      service: 'lambda',
      resource: 'function',
      resourceName: functionName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    },
    stack,
  );
}

/**
 * secretsmanager:GetSecretValue on exactly the secrets `fetch.auth` names (`{ "secretArn" }`), for the
 * fetch role only; nothing when the config names none. A secret given with its full ARN (suffix
 * included) is granted as is; a partial ARN (no random suffix) gets `-??????`, as IAM documents.
 */
export function allowAuthSecrets(grantee: iam.IGrantable, arns: string[]): void {
  if (arns.length === 0) return;
  const resources = arns.map((a) => (/-[A-Za-z0-9]{6}$/.test(a) ? a : `${a}-??????`));
  allow(grantee, ['secretsmanager:GetSecretValue'], resources);
}
