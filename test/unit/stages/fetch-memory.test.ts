/**
 * The fetch function's memory plan (shared/stages/fetch-memory.ts): what an invocation holds follows
 * its memory, the memory a config is deployed with is the smallest its worst case fits in, and the
 * default config's is the topology's. The measurement behind the constants is bench/fetch-memory.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import {
  BODY_COPIES,
  fetchMemoryMb,
  fetchMemoryPlan,
  HOLD_COPIES,
  RUNTIME_MB,
  SPOOL_BYTES,
  spoolDiskMb,
} from '../../../shared/stages/fetch-memory.ts';
import { FUNCTIONS } from '../../../shared/topology.ts';

const MB = 1024 * 1024;
const fetchOf = (fetch: Record<string, unknown> = {}) =>
  parseConfig({ name: 'mem', startUrls: ['https://x.test/'], fetch }).fetch;

/**
 * The RSS the plan's worst case comes to: the runtime, the large-body budget full beside its oldest
 * body at the spool size (past it, bodies are files), every other body at the threshold, the hold full.
 */
function worstCaseMb(memoryMb: number, fetch: { concurrency: number; maxBytes: number }): number {
  const p = fetchMemoryPlan(memoryMb, fetch);
  const bytes =
    (p.largeBodyBudget + p.spoolBytes) * BODY_COPIES +
    fetch.concurrency * p.largeBodyBytes * BODY_COPIES +
    p.holdBytes * HOLD_COPIES;
  return RUNTIME_MB + bytes / MB;
}

describe('fetch memory plan', () => {
  it('the default config is deployed with the topology’s fetch memory', () => {
    assert.equal(fetchMemoryMb(fetchOf()), FUNCTIONS.fetch.memoryMb);
  });

  it('picks the smallest size whose worst case fits, and the worst case stays inside the memory', () => {
    for (const fetch of [
      fetchOf(),
      fetchOf({ maxBytes: 1024 * 1024 }),
      fetchOf({ maxBytes: 50 * MB, concurrency: 64 }),
      fetchOf({ concurrency: 256 }),
    ]) {
      const mb = fetchMemoryMb(fetch);
      assert.ok(fetchMemoryPlan(mb, fetch).fits, `${mb} MB fits`);
      assert.ok(worstCaseMb(mb, fetch) <= mb, `worst case ${worstCaseMb(mb, fetch).toFixed(0)} of ${mb} MB`);
      assert.ok(!fetchMemoryPlan(mb - 32, fetch).fits, `${mb - 32} MB does not fit`);
    }
  });

  it('large pages take disk, not memory; more requests take memory; fetch.memoryMb is taken as given when it fits', () => {
    // Past SPOOL_BYTES a body is a file: fetch.maxBytes sizes /tmp, not the memory.
    assert.equal(fetchMemoryMb(fetchOf({ maxBytes: 50 * MB })), fetchMemoryMb(fetchOf()));
    assert.equal(fetchMemoryPlan(192, fetchOf({ maxBytes: 50 * MB })).spoolBytes, SPOOL_BYTES);
    assert.equal(spoolDiskMb(fetchOf()), 200);
    assert.equal(spoolDiskMb(fetchOf({ maxBytes: 50 * MB, concurrency: 64 })), 4000);
    assert.ok(fetchMemoryMb(fetchOf({ concurrency: 256 })) > fetchMemoryMb(fetchOf()));
    assert.equal(fetchMemoryMb(fetchOf({ memoryMb: 1024 })), 1024);
    assert.throws(() => fetchOf({ memoryMb: 64 }), /memoryMb/);
    // Set too small for the config's own worst case: a clear error at parse time, not an OOM later.
    assert.throws(
      () => fetchOf({ memoryMb: 128 }),
      /fetch\.memoryMb: 128 MB does not hold the bodies of fetch\.concurrency \(16\) requests.*at least 139 MB \(null sizes it: 160 MB\)/,
    );
    // The least it names is the least it takes (it said 160 and took 140).
    assert.throws(() => fetchOf({ memoryMb: 138 }), /at least 139 MB/);
    assert.equal(fetchMemoryMb(fetchOf({ memoryMb: 139 })), 139);
    assert.equal(fetchMemoryMb(fetchOf({ memoryMb: 192, maxBytes: 256 * 1024 })), 192);
  });

  it('more memory never holds less: large-body budget, flush and hold grow with it, up to their caps', () => {
    const fetch = fetchOf();
    let last = fetchMemoryPlan(192, fetch);
    for (const mb of [256, 384, 512, 1024, 3008]) {
      const p = fetchMemoryPlan(mb, fetch);
      assert.ok(p.largeBodyBudget >= last.largeBodyBudget && p.holdBytes >= last.holdBytes, `${mb} MB`);
      assert.ok(p.flushBytes <= p.holdBytes && p.largeBodyBytes <= MB);
      last = p;
    }
    assert.equal(last.largeBodyBudget, fetch.concurrency * SPOOL_BYTES);
    assert.equal(last.holdBytes, 32 * MB);
  });
});
