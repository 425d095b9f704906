/**
 * A fetch task's place among the invocation's requests in flight (shared/crawl/state/concurrency.ts
 * TaskPlace over a Lane): taken by the task's request, kept while its page is made, given back
 * before it waits for its host's turn again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Lane, TaskPlace } from '../../../shared/crawl/state/concurrency.ts';

const tick = () => new Promise((r) => setImmediate(r));

describe('TaskPlace', () => {
  it('holds its place after the run until released; another task waits for it meanwhile', async () => {
    const lane = new Lane(() => 1);
    const a = new TaskPlace(lane);
    const b = new TaskPlace(lane);
    assert.equal(await a.run(async () => 'a'), 'a');
    let bRan = false;
    const bDone = b.run(async () => {
      bRan = true;
    });
    await tick();
    assert.equal(bRan, false, 'the place is still a’s after its run');
    a.release();
    await bDone;
    assert.equal(bRan, true);
    b.release();
  });

  it('a second run of the same task does not wait for the place it holds', async () => {
    const lane = new Lane(() => 1);
    const a = new TaskPlace(lane);
    await a.run(async () => undefined);
    assert.equal(await a.run(async () => 'again'), 'again');
    a.release();
    // Given back: a new task gets the place.
    assert.equal(await new TaskPlace(lane).run(async () => 'next'), 'next');
  });

  it('released while still waiting for its place: the place is given back once granted', async () => {
    const lane = new Lane(() => 1);
    const holder = new TaskPlace(lane);
    await holder.run(async () => undefined);
    const waiting = new TaskPlace(lane);
    const pending = waiting.run(async () => undefined);
    waiting.release();
    holder.release();
    await pending;
    await tick();
    // Had the waiting task kept it, this would never run.
    assert.equal(await new TaskPlace(lane).run(async () => 'free'), 'free');
  });

  it('a run after release takes a place again', async () => {
    const lane = new Lane(() => 1);
    const a = new TaskPlace(lane);
    await a.run(async () => undefined);
    a.release();
    await a.run(async () => undefined);
    let otherRan = false;
    const other = new TaskPlace(lane).run(async () => {
      otherRan = true;
    });
    await tick();
    assert.equal(otherRan, false, 'the second run holds the place again');
    a.release();
    await other;
    assert.equal(otherRan, true);
  });

  it('a request whose turn has come takes the next place before the tasks that waited longer', async () => {
    const lane = new Lane(() => 1);
    const holder = new TaskPlace(lane);
    await holder.run(async () => undefined);
    const order: string[] = [];
    const places = [1, 2].map(() => new TaskPlace(lane));
    const starting = places.map((p, i) => p.run(async () => void order.push(`starting ${i + 1}`)));
    await tick();
    const due = new TaskPlace(lane);
    const dueDone = due.run(async () => void order.push('due'), true);
    await tick();
    holder.release();
    for (let i = 0; i < 5; i++) await tick();
    assert.deepEqual(order, ['due'], 'the due request went first');
    await dueDone;
    due.release();
    await starting[0];
    places[0]?.release();
    await starting[1];
    places[1]?.release();
    assert.deepEqual(order, ['due', 'starting 1', 'starting 2']);
  });
});
