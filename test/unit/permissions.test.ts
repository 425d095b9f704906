import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  EVENT_SOURCE_ACTIONS,
  iamActionOf,
  STAGE_ACCESS,
  type Target,
} from '../../shared/aws/permissions.ts';

const SERVICE_OF_TARGET: Record<string, string> = {
  table: 'dynamodb',
  queues: 'sqs',
  queue: 'sqs',
  objects: 's3',
  list: 's3',
  function: 'lambda',
  bus: 'events',
};

describe('permissions declaration', () => {
  it('maps each SDK operation to the IAM action that authorizes it', () => {
    const cases: [string, string, string][] = [
      ['SQS', 'SendMessageBatch', 'sqs:SendMessage'],
      ['SQS', 'DeleteMessageBatch', 'sqs:DeleteMessage'],
      ['SQS', 'ChangeMessageVisibilityBatch', 'sqs:ChangeMessageVisibility'],
      ['SQS', 'ReceiveMessage', 'sqs:ReceiveMessage'],
      ['DynamoDB', 'BatchWriteItem', 'dynamodb:BatchWriteItem'],
      ['S3', 'ListObjectsV2', 's3:ListBucket'],
      ['S3', 'HeadObject', 's3:GetObject'],
      ['Lambda', 'Invoke', 'lambda:InvokeFunction'],
      ['EventBridge', 'PutEvents', 'events:PutEvents'],
    ];
    for (const [service, op, action] of cases)
      assert.equal(iamActionOf(service, op), action, `${service}.${op}`);
    assert.throws(() => iamActionOf('Kinesis', 'PutRecord'), /no IAM service prefix known for Kinesis/);
  });

  it("declares exact actions of each target's own service, no wildcard, no duplicate", () => {
    for (const [stage, access] of Object.entries(STAGE_ACCESS)) {
      for (const [target, actions] of Object.entries(access) as [Target, string[]][]) {
        const service = SERVICE_OF_TARGET[target.split(':')[0] as string];
        assert.ok(service, `${stage}: unknown target ${target}`);
        assert.equal(new Set(actions).size, actions.length, `${stage} ${target}: duplicate action`);
        for (const a of actions)
          assert.match(a, new RegExp(`^${service}:[A-Z][A-Za-z]+$`), `${stage} ${target}`);
      }
    }
    for (const a of EVENT_SOURCE_ACTIONS) assert.match(a, /^sqs:[A-Z][A-Za-z]+$/);
  });

  it('gives fetch only reads of the URL table (a redelivered message), and extract only the trap counters and reads on the hosts table (issue 16)', () => {
    // fetch-redelivered.ts reads the items of a message's URLs when it is delivered again; fetch
    // never writes a URL's state.
    assert.deepEqual(STAGE_ACCESS.fetch['table:urls'], ['dynamodb:BatchGetItem']);
    // scope.traps counts links per host and pattern: one UpdateItem (ADD), never a whole item; it
    // reads the forget epoch and a fetcher's presence (GetItem).
    assert.deepEqual(STAGE_ACCESS.extract['table:hosts'], ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
  });

  it('lets every stage add its usage record to the hosts table (issue 18: one UpdateItem per invocation)', () => {
    for (const [stage, access] of Object.entries(STAGE_ACCESS)) {
      assert.ok(access['table:hosts']?.includes('dynamodb:UpdateItem'), stage);
    }
  });
});
