/**
 * Least-privilege grants with exact action lists, built from the per-stage declaration in
 * shared/aws/permissions.ts. CDK's grantRead/grantReadWrite emit wildcard actions
 * (`s3:GetObject*`, `dynamodb:BatchGet*`); these helpers never do, and refuse to.
 */
import { Arn, ArnFormat, type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import {
  EVENT_SOURCE_ACTIONS,
  EVENT_SOURCES,
  STAGE_ACCESS,
  type Target,
} from '../../shared/aws/permissions.ts';
import type { StageName } from '../../shared/topology.ts';
import type { CrawlResources } from './stage-function.ts';

/** Adds one statement to the grantee's role; throws on a wildcard action. */
export function allow(grantee: iam.IGrantable, actions: readonly string[], resources: string[]): void {
  const wild = actions.find((a) => a.includes('*'));
  if (wild) throw new Error(`wildcard IAM action ${wild}: list the exact actions`);
  grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...actions], resources }));
}

/** The ARNs a declared target stands for in this stack. */
function arnsOf(target: Target, r: CrawlResources, stack: Stack): string[] {
  const { urls, hosts, bucket } = r.storage;
  if (target === 'table:urls') return [urls.tableArn];
  if (target === 'table:hosts') return [hosts.tableArn];
  if (target === 'queues:frontier') return r.frontier.map((q) => q.queueArn);
  if (target === 'queue:extract') return [r.stageQueues.extract.queue.queueArn];
  if (target === 'queue:index') return [r.stageQueues.index.queue.queueArn];
  if (target === 'queue:wake') return [r.stageQueues.wake.queue.queueArn];
  if (target === 'function:fetch') return [r.fetchFunctionArn];
  if (target === 'bus:default') {
    return [stack.formatArn({ service: 'events', resource: 'event-bus', resourceName: 'default' })];
  }
  if (target.startsWith('objects:')) return [bucket.arnForObjects(`${target.slice('objects:'.length)}*`)];
  throw new Error(`no ARN for ${target}`);
}

/**
 * The stage's role gets exactly what shared/aws/permissions.ts declares for it (the list the IAM
 * test checks the code's requests against), and the event source polling its stage queue.
 */
export function grantStage(fn: lambda.IFunction, stage: StageName, r: CrawlResources): void {
  const stack = Stack.of(fn);
  for (const [target, actions] of Object.entries(STAGE_ACCESS[stage]) as [Target, string[]][]) {
    if (target.startsWith('list:')) allowListPrefix(fn, r.storage.bucket, target.slice('list:'.length));
    else allow(fn, actions, arnsOf(target, r, stack));
    if (target.startsWith('objects:')) acknowledgeKeyWildcard(fn, r.storage.bucket, target.slice(8));
  }
  const source = EVENT_SOURCES[stage];
  if (source) allow(fn, EVENT_SOURCE_ACTIONS, arnsOf(source, r, stack));
}

/**
 * cdk-nag's AwsSolutions-IAM5 flags any `*` in a resource. Here it only stands for the object
 * keys under one prefix of the crawl's own bucket (page bundles, document bulks, manifests: keys
 * made of dates and UUIDs, unknown when the stack is built); the actions stay exact.
 */
function acknowledgeKeyWildcard(fn: lambda.IFunction, bucket: s3.IBucket, prefix: string): void {
  const stack = Stack.of(bucket);
  const bucketId = stack.getLogicalId(bucket.node.defaultChild as CfnElement);
  if (!fn.role) throw new Error('a stage function has its own role');
  Validations.of(fn.role).acknowledge({
    id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}*]`,
    reason: `exact actions on the keys under ${prefix} of the crawl's own bucket; the keys are generated at run time`,
  });
}

/** s3:ListBucket on the bucket, limited to keys under one prefix (the s3:prefix condition). */
function allowListPrefix(grantee: iam.IGrantable, bucket: s3.IBucket, prefix: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [`${prefix}*`] } },
    }),
  );
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
 * fetch role only, and `fetch.proxy`'s password, for the fetch and seed roles (their requests go
 * through the proxy); nothing when the config names none. A partial ARN (no random suffix) gets
 * `-??????`, as IAM documents; one that looks complete (`…-AbC123`) is granted as is and with
 * `-??????` too, since a secret's own name may end so (`db-secret`, `crawler-passwd`: taken for a
 * suffix, the grant never matched, helper-51). Either way no other secret is named.
 */
export function allowAuthSecrets(grantee: iam.IGrantable, arns: string[]): void {
  if (arns.length === 0) return;
  const resources = arns.flatMap((a) => (/-[A-Za-z0-9]{6}$/.test(a) ? [a, `${a}-??????`] : [`${a}-??????`]));
  allow(grantee, ['secretsmanager:GetSecretValue'], resources);
}
