/** DynamoDB capacity estimated from each request (priced by `trawl report` for local runs). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  asNewInvocation,
  countedInto,
  countingMiddleware,
  dynamoUnits,
  emptyCounts,
  inStage,
  watchAwsCalls,
} from '../../../shared/aws/request-counter.ts';

describe('dynamoUnits', () => {
  const cases: [string, string, Record<string, unknown>, [number, number]][] = [
    ['a put is one write unit', 'PutItem', { Item: {} }, [1, 0]],
    ['a conditional update still costs its write', 'UpdateItem', { ConditionExpression: 'x' }, [1, 0]],
    ['an eventually consistent get is half a read unit', 'GetItem', {}, [0, 0.5]],
    ['a consistent get is one', 'GetItem', { ConsistentRead: true }, [0, 1]],
    [
      'a batch write costs one unit per item, across tables',
      'BatchWriteItem',
      { RequestItems: { urls: [{}, {}, {}], hosts: [{}] } },
      [4, 0],
    ],
    [
      'a batch get costs half a unit per key',
      'BatchGetItem',
      { RequestItems: { urls: { Keys: [{}, {}, {}] } } },
      [0, 1.5],
    ],
    ['other calls cost nothing here', 'DescribeTable', {}, [0, 0]],
  ];
  for (const [name, op, input, expected] of cases) {
    it(name, () => assert.deepEqual(dynamoUnits(op, input), expected));
  }
});

describe('asNewInvocation', () => {
  // A real client whose requests fail at once (nothing listens on port 1): the count is taken
  // when a request is built, before it is sent.
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:1',
    forcePathStyle: true,
    maxAttempts: 1,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  client.middlewareStack.use(countingMiddleware('S3'));
  const put = () => client.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'x' })).catch(() => null);

  it("a handler started inside another invocation's work counts nothing into the caller's count", async () => {
    const caller = emptyCounts();
    const stages: (string | undefined)[] = [];
    const stop = watchAwsCalls((c) => stages.push(c.stage));
    try {
      await inStage('extract', () =>
        countedInto(caller, async () => {
          await put(); // the caller's own request
          await asNewInvocation(put); // a kicked invocation's request outside its own count
        }),
      );
    } finally {
      stop();
    }
    assert.deepEqual(caller.calls, { 'S3.PutObject': 1 });
    assert.deepEqual(stages, ['extract', undefined], 'nor is it attributed to the caller stage');
  });

  it('without it the caller counts the request too (what the local runner did before)', async () => {
    const caller = emptyCounts();
    await countedInto(caller, async () => {
      await put();
      await put();
    });
    assert.deepEqual(caller.calls, { 'S3.PutObject': 2 });
  });
});
