import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyCounts } from '../../../shared/aws/request-counter.ts';
import { priceRunRecord } from '../../../shared/report/run-record.ts';
import {
  ACTIVE_MINUTES,
  activeMinutes,
  MAPPING_DELETE,
  MAPPING_RECEIVE,
  recentUsageHours,
  usageCounters,
  usageKey,
  usageRunRecord,
} from '../../../shared/report/usage-record.ts';
import { FUNCTIONS } from '../../../shared/topology.ts';

describe('usage records: one invocation’s counters, an hour’s item as a priced run', () => {
  const counts = {
    ...emptyCounts(),
    calls: { 'S3.PutObject': 2, 'SQS.SendMessageBatch': 1, 'DynamoDB.UpdateItem': 3 },
    sqsBilledRequests: 1,
    dynamoWriteUnits: 3,
    dynamoReadUnits: 0.5,
  };

  it('adds the record’s own write, and the mapping’s receive and delete for an SQS event', () => {
    const c = usageCounters({
      stage: 'index',
      counts,
      ms: 120,
      memoryMb: 256,
      pages: 0,
      sqsEventBytes: 70_000,
    });
    assert.equal(c['call.DynamoDB.UpdateItem'], 4);
    assert.equal(c.ddbW, 4);
    assert.equal(c['inv.index'], 1);
    assert.equal(c['ms.index'], 120);
    assert.equal(c[`call.${MAPPING_RECEIVE}`], 1);
    assert.equal(c[`call.${MAPPING_DELETE}`], 1);
    // 70 KB received is two billed requests, the delete one more.
    assert.equal(c.sqsBilled, 1 + 2 + 1);
    const direct = usageCounters({
      stage: 'fetch',
      counts,
      ms: 5,
      memoryMb: 256,
      pages: 3,
      sqsEventBytes: null,
    });
    assert.equal(direct[`call.${MAPPING_RECEIVE}`], undefined);
    assert.equal(direct.sqsBilled, 1);
  });

  it('turns an hour’s summed counters into a run record priced like a local run', () => {
    // fetch deployed at 1,024 MB (fetch.memoryMb), index at its 256 MB.
    const a = usageCounters({
      stage: 'fetch',
      counts,
      ms: 2_000,
      memoryMb: 1024,
      pages: 10,
      sqsEventBytes: null,
    });
    const b = usageCounters({ stage: 'index', counts, ms: 500, memoryMb: 256, pages: 0, sqsEventBytes: 100 });
    const item: Record<string, number> = { ...a };
    for (const [k, n] of Object.entries(b)) item[k] = (item[k] ?? 0) + n;
    const r = usageRunRecord('demo', '2026-11-23T16', item);
    assert.equal(r.kind, 'deployed');
    assert.equal(r.startedAt, '2026-11-23T16:00:00.000Z');
    assert.equal(r.pages, 10);
    assert.deepEqual(r.stages.fetch, { invocations: 1, totalMs: 2_000, awsWaitMs: 0, memoryMb: 1024 });
    assert.deepEqual(r.stages.index, { invocations: 1, totalMs: 500, awsWaitMs: 0, memoryMb: 256 });
    assert.equal(r.counts.calls['S3.PutObject'], 4);
    const cost = priceRunRecord(r);
    // fetch 1 GB × 2 s + index 0.25 GB × 0.5 s = 2.125 GB-s: the memory each ran with.
    assert.ok(Math.abs(cost.lambdaGbSeconds - 2.125) < 1e-12);
    assert.equal(cost.s3Puts, 4);
  });

  it('prices an hour recorded before memory was (no MB-ms) at the topology’s memory', () => {
    const item = { pages: 1, 'inv.fetch': 1, 'ms.fetch': 2_000 };
    const r = usageRunRecord('demo', '2026-11-23T16', item);
    assert.equal(r.stages.fetch.memoryMb, undefined);
    const gbs = (FUNCTIONS.fetch.memoryMb * 2) / 1024;
    assert.ok(Math.abs(priceRunRecord(r).lambdaGbSeconds - gbs) < 1e-12);
  });

  it('an hour counts the minutes its handlers ran in: the union of each invocation’s minutes', () => {
    const at = (hms: string) => Date.parse(`2026-11-23T${hms}.000Z`);
    assert.deepEqual(activeMinutes(at('16:05:10'), at('16:05:50')), [5]);
    assert.deepEqual(activeMinutes(at('16:05:50'), at('16:08:01')), [5, 6, 7, 8]);
    // An invocation that began in the hour before counts from this hour's first minute.
    assert.deepEqual(activeMinutes(at('15:58:00'), at('16:01:30')), [0, 1]);
    const item = { pages: 600, 'inv.fetch': 3, 'ms.fetch': 90_000, [ACTIVE_MINUTES]: 10 };
    assert.equal(usageRunRecord('demo', '2026-11-23T16', item).seconds, 600);
    // An item from before the minutes were recorded counts the whole hour.
    assert.equal(usageRunRecord('demo', '2026-11-23T16', { pages: 600 }).seconds, 3600);
  });

  it('names the hours of the last days, newest first', () => {
    const hours = recentUsageHours('2026-11-23T16:59:00.000Z', 2);
    assert.equal(hours.length, 48);
    assert.equal(hours[0], '2026-11-23T16');
    assert.equal(hours[47], '2026-11-21T17');
    assert.equal(usageKey(hours[0] as string), 'usage#2026-11-23T16');
  });
});
