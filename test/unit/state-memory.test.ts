/**
 * The CLI's state reader in bounded memory (issue 18): 80,000 synthetic URLs (items and lines:
 * ~36 MB of JSON; holding the 80,000 resolved states alone takes ~34 MB of heap) go through the
 * on-disk sort with 1 MB runs. The live heap, sampled after a full GC every 10,000 records read
 * and states resolved, grew 7.5–10 MB for 40,000 and 10.9–11.5 MB for 80,000 here: the run buffer,
 * the runs' read-ahead (at most 64 runs are merged at once) and the code. A memory ceiling, not a
 * time one; bench/state-memory.ts prints the figures for a million. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { eachState } from '../../cli/session.ts';
import type { UrlItem } from '../../shared/types.ts';
import { syntheticCrawl } from '../helpers/synthetic-crawl.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const live = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

/** Live heap growth over `base`, sampled every 10,000 records read and states resolved. */
async function peakGrowth(n: number, dir: string, check: (s: UrlItem) => void): Promise<number> {
  const opts = { runBytes: 1024 * 1024, dir };
  // A first pass: modules, code and the collator are loaded before the baseline is taken.
  for await (const _ of eachState(syntheticCrawl(5_000), opts));
  const base = live();
  let [peak, seen] = [0, 0];
  const sample = () => {
    if (++seen % 10_000 === 0) peak = Math.max(peak, live() - base);
  };
  for await (const s of eachState(syntheticCrawl(n, sample), opts)) {
    check(s);
    sample();
  }
  return peak;
}

describe('eachState over 80,000 URLs', () => {
  it('resolves every URL, in URL order, with a live heap growth under 20 MB (holding them would take ~34 MB)', async () => {
    const n = 80_000;
    const dir = mkdtempSync(join(tmpdir(), 'trawl-mem-test-'));
    let [count, errors, done, prev] = [0, 0, 0, ''];
    try {
      const peak = await peakGrowth(n, dir, (s) => {
        assert.ok(s.url > prev, 'one state per URL, in URL order');
        prev = s.url;
        count++;
        if (s.state === 'error') errors++;
        if (s.state === 'indexed' && s.lastFetched === '2026-11-02T12:00:00.000Z') done++;
      });
      assert.equal(count, n);
      assert.equal(errors, n / 20);
      assert.equal(done, n - n / 20, 'the newest of two lines wins');
      console.log(`live heap grew ${(peak / 1048576).toFixed(1)} MB`);
      assert.ok(peak < 20 * 1024 * 1024, `live heap grew ${(peak / 1048576).toFixed(1)} MB`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
