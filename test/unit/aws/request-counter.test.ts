/** DynamoDB capacity estimated from each request (priced by `trawl report` for local runs). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dynamoUnits } from '../../../shared/aws/request-counter.ts';

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
