/**
 * The byte budget large bodies share in a fetch invocation (shared/crawl/state/concurrency.ts):
 * readers wait while it is full, the oldest holder always goes on, so two readers never wait on
 * each other's bytes, and the most held is the capacity plus one reader's whole size.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteBudget } from '../../../shared/crawl/state/concurrency.ts';

const tick = () => new Promise((r) => setImmediate(r));

describe('ByteBudget', () => {
  it('a reader waits while the budget is full and goes on when bytes are given back', async () => {
    const budget = new ByteBudget(() => 1000);
    const a = budget.share();
    const b = budget.share();
    await a.reserve(800);
    let bDone = false;
    const bWaits = b.reserve(300).then(() => {
      bDone = true;
    });
    await tick();
    assert.equal(bDone, false, '800 + 300 is past 1000: the younger reader waits');
    a.release();
    await bWaits;
    assert.equal(budget.reserved, 300);
    b.release();
    b.release();
    assert.equal(budget.reserved, 0, 'a release is given back once');
  });

  it('the oldest holder goes on past the capacity: two growing readers never wait on each other', async () => {
    const budget = new ByteBudget(() => 1000);
    const a = budget.share();
    const b = budget.share();
    await a.reserve(600);
    await b.reserve(300);
    let bDone = false;
    const bMore = b.reserve(300).then(() => {
      bDone = true;
    });
    // Without the oldest's right both would wait here for ever.
    await a.reserve(500);
    assert.equal(budget.reserved, 1400, 'capacity plus the oldest reader’s growth');
    await tick();
    assert.equal(bDone, false);
    a.release();
    await bMore;
    assert.equal(budget.reserved, 600);
    // b is now the oldest holder: it may grow past the capacity alone.
    await b.reserve(2000);
    assert.equal(budget.reserved, 2600);
    b.release();
    assert.equal(budget.reserved, 0);
  });

  it('an empty budget lets a reader in whatever it asks', async () => {
    const budget = new ByteBudget(() => 0);
    const a = budget.share();
    await a.reserve(5000);
    assert.equal(budget.reserved, 5000);
    a.release();
  });
});
