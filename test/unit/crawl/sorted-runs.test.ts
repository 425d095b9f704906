import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { byCodeUnits, groupSorted, mergeSorted } from '../../../shared/crawl/state/sorted-runs.ts';
import { resolveRecords, type StateRecord } from '../../../shared/crawl/state/url-state.ts';
import type { UrlItem } from '../../../shared/types.ts';
import { collect } from '../../helpers/collect.ts';

async function* from<T>(values: T[], closed?: { n: number }): AsyncGenerator<T> {
  try {
    yield* values;
  } finally {
    if (closed) closed.n++;
  }
}

type Tagged = { k: string; src: number };
const byK = (a: Tagged, b: Tagged) => byCodeUnits(a.k, b.k);

describe('mergeSorted: sorted runs into one sorted stream', () => {
  it('merges runs of different lengths, empty ones included, into the order one sort gives', async () => {
    const runs = [['a', 'd', 'x'], [], ['b', 'c', 'y', 'z'], ['e']];
    const merged = await collect(
      mergeSorted(
        runs.map((r) => from(r)),
        byCodeUnits,
      ),
    );
    assert.deepEqual(merged, runs.flat().sort());
  });

  it('is stable: on a tie the earlier run comes first (runs cut from one stream merge back in order)', async () => {
    const runs: Tagged[][] = [
      [
        { k: 'a', src: 0 },
        { k: 'b', src: 0 },
      ],
      [
        { k: 'a', src: 1 },
        { k: 'b', src: 1 },
      ],
      [{ k: 'b', src: 2 }],
    ];
    const merged = await collect(
      mergeSorted(
        runs.map((r) => from(r)),
        byK,
      ),
    );
    assert.deepEqual(
      merged.map((t) => `${t.k}${t.src}`),
      ['a0', 'a1', 'b0', 'b1', 'b2'],
    );
  });

  it('matches a full sort on random runs', async () => {
    let seed = 42;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const all = Array.from({ length: 500 }, () => Math.floor(rand() * 100));
    const runs: number[][] = [];
    for (let i = 0; i < all.length; i += 37) runs.push(all.slice(i, i + 37).sort((a, b) => a - b));
    const merged = await collect(
      mergeSorted(
        runs.map((r) => from(r)),
        (a, b) => a - b,
      ),
    );
    assert.deepEqual(
      merged,
      [...all].sort((a, b) => a - b),
    );
  });

  it('closes every source when its reader stops early', async () => {
    const closed = { n: 0 };
    const merged = mergeSorted([from(['a', 'c'], closed), from(['b', 'd'], closed)], byCodeUnits);
    for await (const v of merged) if (v === 'b') break;
    assert.equal(closed.n, 2);
  });
});

describe('groupSorted: one group per key', () => {
  it('cuts a sorted stream where the key changes', async () => {
    const groups = await collect(groupSorted(from(['a1', 'a2', 'b1', 'c1', 'c2']), (s) => s[0] as string));
    assert.deepEqual(groups, [['a1', 'a2'], ['b1'], ['c1', 'c2']]);
    assert.deepEqual(await collect(groupSorted(from<string>([]), (s) => s)), []);
  });
});

describe('resolveRecords: a URL state from its item and all its lines', () => {
  const url = 'https://example.com/a';
  const claim: UrlItem = {
    url,
    state: 'pending',
    depth: 1,
    discoveredAt: '2026-03-10T10:00:00.000Z',
  } as UrlItem;
  const line = (fetched: string): UrlItem =>
    ({ url, state: 'indexed', depth: 1, lastFetched: fetched, at: fetched }) as UrlItem;

  it('takes the newest line whatever the order of the lines', () => {
    const [old, mid, newest] = [
      '2026-03-10T11:00:00.000Z',
      '2026-03-11T11:00:00.000Z',
      '2026-03-12T11:00:00.000Z',
    ];
    for (const order of [
      [old, mid, newest],
      [newest, old, mid],
      [mid, newest, old],
    ]) {
      const records: StateRecord[] = [...order.map((f) => ({ line: line(f) })), { item: claim }];
      assert.equal(resolveRecords(records)?.lastFetched, newest);
      assert.equal(resolveRecords(records)?.stored, 'line');
    }
  });

  it('leaves out a URL with lines but no item (forgotten), and keeps a claim with no line', () => {
    assert.equal(resolveRecords([{ line: line('2026-03-12T11:00:00.000Z') }]), undefined);
    assert.equal(resolveRecords([{ item: claim }])?.state, 'pending');
  });
});
