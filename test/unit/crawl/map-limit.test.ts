/** mapLimit: bounded concurrency, input order, and no work left running behind a failure. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mapLimit } from '../../../shared/crawl/state/concurrency.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('mapLimit', () => {
  it('keeps at most `limit` in flight and the results in input order', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapLimit([30, 10, 20, 5, 15, 1], 3, async (ms, i) => {
      most = Math.max(most, ++inFlight);
      await tick(ms);
      inFlight--;
      return i * 2;
    });
    assert.deepEqual(out, [0, 2, 4, 6, 8, 10]);
    assert.equal(most, 3);
  });

  it('after a failure starts nothing more and settles only once the items under way have', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const items = Array.from({ length: 100 }, (_, i) => i);
    await assert.rejects(
      mapLimit(items, 4, async (i) => {
        started.push(i);
        if (i === 5) {
          await tick(1);
          throw new Error('item 5 failed');
        }
        await tick(20);
        finished.push(i);
      }),
      /item 5 failed/,
    );
    // What was under way when item 5 failed has finished by the time the call rejects...
    assert.deepEqual(
      finished.sort((a, b) => a - b),
      started.filter((i) => i !== 5).sort((a, b) => a - b),
    );
    // ...and nothing ran behind it: no item started after the failure.
    const count = started.length;
    await tick(100);
    assert.equal(started.length, count);
    assert.ok(count < 10, `${count} items started of 100`);
  });
});
