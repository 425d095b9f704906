/**
 * What each stage's code may ask of AWS: the one declaration the CDK stack builds every role
 * from (infra/constructs/grants.ts), and that test/integration/least-privilege.test.ts checks
 * against the requests the real handlers send during a crawl and a refresh on the emulator —
 * both ways: no request outside its stage's grants, no grant no request needs.
 */

import type { BucketPrefix } from '../layout.ts';
import type { StageName } from '../topology.ts';

export { type BucketPrefix, PREFIXES } from '../layout.ts';

/**
 * What a grant applies to: a table, a group of queues, objects under a bucket prefix, the
 * bucket's listing under a prefix, the fetch function (invoked by name) or the default bus.
 */
export type Target =
  | 'table:urls'
  | 'table:hosts'
  | 'queues:frontier'
  | 'queue:extract'
  | 'queue:index'
  | 'queue:wake'
  | `objects:${BucketPrefix}`
  | `list:${BucketPrefix}`
  | 'function:fetch'
  | 'bus:default';

/** A stage's grants: exact IAM actions (never a wildcard) per target. */
export type StageAccess = Partial<Record<Target, readonly string[]>>;

const CONFIG: StageAccess = { 'objects:config/': ['s3:GetObject'] };

/** Every request a stage sends, as IAM actions per target; nothing else is granted. */
export const STAGE_ACCESS: Record<StageName, StageAccess> = {
  seed: {
    ...CONFIG,
    'queues:frontier': ['sqs:SendMessage'],
    // Reads the start URLs' and sitemaps' items, then claims the new ones (conditional put).
    'table:urls': ['dynamodb:BatchGetItem', 'dynamodb:PutItem'],
    // robots.txt (cache read and write, the host's politeness slot), the schedule-run time, the
    // refresh policy (read each cycle, written once: refresh-review.ts) and, in every stage, the
    // usage record: one UpdateItem per invocation (shared/stages/usage.ts).
    'table:hosts': ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    'function:fetch': ['lambda:InvokeFunction'],
  },
  fetch: {
    ...CONFIG,
    // Weighted polling, leases (visibility changes), deletes, and not-due hosts requeued with a delay.
    'queues:frontier': [
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:SendMessage',
    ],
    'queue:extract': ['sqs:SendMessage'],
    // A wake-up call for URLs put back with a delay (its own event source: EVENT_SOURCES).
    'queue:wake': ['sqs:SendMessage'],
    // robots.txt cache and politeness slots.
    'table:hosts': ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    // A frontier message delivered again (its fetcher died): the URLs fetched since it was queued
    // are skipped, read from their items and the state lines written since (fetch-redelivered.ts).
    // Without these grants such a message failed every fetcher that took it, into the DLQ.
    'table:urls': ['dynamodb:BatchGetItem'],
    'objects:refresh/': ['s3:GetObject'],
    'list:refresh/': ['s3:ListBucket'],
    'objects:pages/': ['s3:PutObject'],
    // Chains itself when its time runs out with work left.
    'function:fetch': ['lambda:InvokeFunction'],
  },
  extract: {
    ...CONFIG,
    'queues:frontier': ['sqs:SendMessage'],
    'queue:index': ['sqs:SendMessage'],
    // The records a batch past its deadline did not start go back as new messages.
    'queue:extract': ['sqs:SendMessage'],
    // Read-before-write claims: BatchGetItem, then a conditional PutItem per new URL; with
    // refresh.orphanGrace, a known URL's link stamp (reachedAt: one UpdateItem per quarter grace).
    'table:urls': ['dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    // scope.traps: one atomic ADD per counter (URLs per host, query variants per path) per batch;
    // the usage record. Reads: the forget epoch, once a batch (forget-epoch.ts), and a running
    // fetcher's presence under a politeness wait (fetch-presence.ts; refused until 2026-11-29, so
    // a deployed extract function logged a warning and started a fetcher every batch).
    'table:hosts': ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    'objects:pages/': ['s3:GetObject'],
    // Document bulks and spilled outcomes (docs/spill/).
    'objects:docs/': ['s3:PutObject'],
    // Known pages a sitemap lists as changed, for the refresh cycle (change-hints.ts).
    'objects:hints/': ['s3:PutObject'],
    'function:fetch': ['lambda:InvokeFunction'],
  },
  index: {
    ...CONFIG,
    // Whole items only: a conditional PutItem each (it keeps a later link stamp, url-table.ts
    // putStates), BatchWriteItem deletes; BatchGetItem reads compound elements' states.
    'table:urls': ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem', 'dynamodb:PutItem'],
    // index.foldDuplicates: the content digest → keeping URL entries (read, conditional put); the
    // usage record (ADD to the hour's item, shared/stages/usage.ts).
    'table:hosts': ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    // A duplicate that takes a document over, or the page that lost it, is fetched again.
    'queues:frontier': ['sqs:SendMessage'],
    // docs/: spilled outcomes are read (the extract stage writes documents); changes/: only appended.
    'objects:docs/': ['s3:GetObject'],
    'objects:changes/': ['s3:PutObject'],
    // State lines are appended; an outcome that may be a copy (redelivered, or a duplicate's
    // takeover) is checked against the lines written since its fetch (index-stage.ts copyLines).
    'objects:refresh/': ['s3:GetObject', 's3:PutObject'],
    'list:refresh/': ['s3:ListBucket'],
    // The element URLs each archive gave when last read (compound-elements.ts).
    'objects:compound/': ['s3:GetObject', 's3:PutObject'],
    'bus:default': ['events:PutEvents'],
  },
  refresh: {
    ...CONFIG,
    // Due items; forget the out-of-scope; drop the document fields of a now-noIndex table item;
    // move a table-kept URL's refresh time forward after a config change (refresh-review.ts);
    // claim the start URLs a changed config adds.
    'table:urls': ['dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
    'objects:refresh/': ['s3:GetObject', 's3:PutObject'],
    'list:refresh/': ['s3:ListBucket'],
    // The pages sitemaps list as changed since their last read (change-hints.ts).
    'objects:hints/': ['s3:GetObject'],
    'list:hints/': ['s3:ListBucket'],
    // A gone archive's elements go with it (compound-elements.ts).
    'objects:compound/': ['s3:GetObject', 's3:PutObject'],
    // The refresh cursor and the schedule-run time are key/value items of the hosts table; the usage
    // record; the duplicate registry entry a forgotten URL leaves (duplicates.ts).
    'table:hosts': ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    'queues:frontier': ['sqs:SendMessage'],
    'objects:changes/': ['s3:PutObject'],
    'bus:default': ['events:PutEvents'],
    'function:fetch': ['lambda:InvokeFunction'],
  },
};

/**
 * The stage queue Lambda's event source mapping polls for a stage, with the function's role: the
 * actions AWS documents for it (Lambda developer guide, "Execution role permissions" for SQS).
 */
export const EVENT_SOURCES: Partial<Record<StageName, 'queue:extract' | 'queue:index' | 'queue:wake'>> = {
  fetch: 'queue:wake',
  extract: 'queue:extract',
  index: 'queue:index',
};
export const EVENT_SOURCE_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

const SERVICE_PREFIX: Record<string, string> = {
  SQS: 'sqs',
  DynamoDB: 'dynamodb',
  S3: 's3',
  Lambda: 'lambda',
  EventBridge: 'events',
};
// Operations authorized by an action of another name (the batch APIs by their single-item action).
const ACTION_OF: Record<string, string> = {
  'sqs:SendMessageBatch': 'sqs:SendMessage',
  'sqs:DeleteMessageBatch': 'sqs:DeleteMessage',
  'sqs:ChangeMessageVisibilityBatch': 'sqs:ChangeMessageVisibility',
  's3:ListObjectsV2': 's3:ListBucket',
  's3:HeadObject': 's3:GetObject',
  'lambda:Invoke': 'lambda:InvokeFunction',
};

/** The IAM action that authorizes an SDK operation (`SQS`, `SendMessageBatch` → `sqs:SendMessage`). */
export function iamActionOf(service: string, operation: string): string {
  const prefix = SERVICE_PREFIX[service];
  if (!prefix) throw new Error(`no IAM service prefix known for ${service}`);
  const action = `${prefix}:${operation}`;
  return ACTION_OF[action] ?? action;
}
