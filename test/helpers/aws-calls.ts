/**
 * Records, per stage, every AWS request the real handlers send (the counting middleware of
 * shared/aws/clients.ts, attributed by handler-kit's `inStage`), rendered as the `action resource`
 * lines `grantsOf` (infra-template.ts) renders a synthesized role's statements as.
 */

import { iamActionOf } from '../../shared/aws/permissions.ts';
import type { ProvisionedResources } from '../../shared/aws/provision.ts';
import { type AwsCall, watchAwsCalls } from '../../shared/aws/request-counter.ts';
import { FRONTIER, type ResourceNames, type StageName } from '../../shared/topology.ts';

export interface CallRecorder {
  /** stage → `action resource` lines, e.g. `dynamodb:PutItem urls`, `s3:PutObject bucket/pages/*` */
  byStage: Map<StageName, Set<string>>;
  stop(): void;
}

function tableOf(call: AwsCall): string | undefined {
  const input = call.input as { TableName?: string; RequestItems?: Record<string, unknown> };
  return input.TableName ?? Object.keys(input.RequestItems ?? {})[0];
}

/** The resource a request acts on, in the labels of `stackLabels` (infra-template.ts). */
function resourceOf(call: AwsCall, r: ProvisionedResources, names: ResourceNames): string {
  const input = call.input as Record<string, string | undefined>;
  if (call.service === 'DynamoDB') {
    const table = tableOf(call);
    return table === r.urlsTable ? 'urls' : table === r.hostsTable ? 'hosts' : `table ${table}`;
  }
  if (call.service === 'SQS') {
    const source = FRONTIER.find((s) => r.queueUrls.frontier[s.name] === input.QueueUrl);
    if (source) return `frontier:${source.name}`;
    if (input.QueueUrl === r.queueUrls.extract) return 'stage:extract';
    if (input.QueueUrl === r.queueUrls.index) return 'stage:index';
    if (input.QueueUrl === r.queueUrls.wake) return 'stage:wake';
    return `queue ${input.QueueUrl}`;
  }
  if (call.service === 'S3') {
    if (input.Bucket !== r.bucket) return `bucket ${input.Bucket}`;
    // Grants are per prefix, and a listing is granted on the bucket under an s3:prefix condition.
    if (input.Key === undefined) return 'bucket';
    return `bucket/${input.Key.split('/')[0]}/*`;
  }
  if (call.service === 'Lambda') return `lambda:function:${input.FunctionName}`;
  if (call.service === 'EventBridge') {
    const entries = (call.input as { Entries?: { EventBusName?: string }[] }).Entries ?? [];
    const buses = new Set(entries.map((e) => e.EventBusName ?? 'default'));
    return [...buses].map((b) => `events:event-bus/${b}`).join(',');
  }
  return `${call.service} ${names.stack}`;
}

/** Starts recording; `stop()` ends it. */
export function recordStageCalls(resources: ProvisionedResources, names: ResourceNames): CallRecorder {
  const recorder: CallRecorder = { byStage: new Map(), stop: () => {} };
  recorder.stop = watchAwsCalls((call) => {
    // The local runner's own requests (its event-source pollers, monitoring) belong to no stage.
    if (!call.stage) return;
    const stage = call.stage as StageName;
    const line = `${iamActionOf(call.service, call.operation)} ${resourceOf(call, resources, names)}`;
    if (!recorder.byStage.has(stage)) recorder.byStage.set(stage, new Set());
    recorder.byStage.get(stage)?.add(line);
  });
  return recorder;
}
