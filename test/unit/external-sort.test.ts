import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { externalSort } from '../../cli/external-sort.ts';
import { collect } from '../helpers/collect.ts';

// Its own parent folder: other tests and crawls on the machine sort under os.tmpdir() too.
const parent = mkdtempSync(join(tmpdir(), 'trawl-sort-test-'));
const sortDirs = () => new Set(readdirSync(parent));

async function* values(n: number): AsyncGenerator<{ k: number; i: number }> {
  // Keys repeat (k), so stability is visible through i.
  for (let i = 0; i < n; i++) yield { k: (i * 7_919) % 97, i };
}
const byK = (a: { k: number }, b: { k: number }) => a.k - b.k;

describe('externalSort: sorted runs on disk, merged', () => {
  after(() => rmSync(parent, { recursive: true, force: true }));
  it('gives what a stable in-memory sort gives, through many runs and a fan-in merge, and removes its files', async () => {
    const before = sortDirs();
    const expected = (await collect(values(3_000))).sort(byK);
    // ~40 bytes a value: about 130 runs of 25 values, folded 8 at a time.
    const sorted = await collect(
      externalSort(values(3_000), byK, { runBytes: 1_000, fanIn: 8, dir: parent }),
    );
    assert.deepEqual(sorted, expected);
    assert.deepEqual(sortDirs(), before);
  });

  it('needs no file when everything fits one run', async () => {
    const before = sortDirs();
    const gen = externalSort(values(100), byK, { dir: parent });
    const first = await gen.next();
    assert.equal(first.value?.k, 0);
    assert.deepEqual(sortDirs(), before);
    await gen.return(undefined);
  });

  it('removes its files when the reader stops early', async () => {
    const before = sortDirs();
    const gen = externalSort(values(2_000), byK, { runBytes: 2_000, dir: parent });
    await gen.next();
    assert.equal(sortDirs().size, before.size + 1);
    await gen.return(undefined);
    assert.deepEqual(sortDirs(), before);
  });
});
