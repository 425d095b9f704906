import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mulberry32 } from '../../../demo/generate-site.ts';
import { parseConfig } from '../../../shared/config.ts';
import {
  adaptInterval,
  nextRefreshAt,
  pickSource,
  refreshBucket,
  refreshBuckets,
  scheduleIntervals,
  sourceWeights,
} from '../../../shared/crawl/state/scheduling.ts';
import { SOURCES, type SourceName } from '../../../shared/types.ts';

/** The demo generator's seeded PRNG (mulberry32), so proportions are reproducible. */
const seeded = mulberry32;

function draw(weights: Record<SourceName, number>, exhausted: Set<SourceName>, n: number, seed = 1) {
  const random = seeded(seed);
  const counts = Object.fromEntries(SOURCES.map((s) => [s, 0])) as Record<SourceName, number>;
  for (let i = 0; i < n; i++) {
    const s = pickSource(weights, exhausted, random);
    if (s) counts[s]++;
  }
  return counts;
}

describe('source weights (seed 001)', () => {
  it('defaults to user 10000, redir 2000, index 1000, index_follow 100, follow 10, refresh 1', () => {
    assert.deepEqual(sourceWeights(), {
      user: 10_000,
      redir: 2_000,
      index: 1_000,
      index_follow: 100,
      follow: 10,
      refresh: 1,
    });
  });
  it('takes overrides from the config and keeps the other defaults', () => {
    assert.deepEqual(sourceWeights({ follow: 500, refresh: undefined }), {
      user: 10_000,
      redir: 2_000,
      index: 1_000,
      index_follow: 100,
      follow: 500,
      refresh: 1,
    });
  });
});

describe('pickSource: weighted random choice among the sources with work', () => {
  const weights = sourceWeights();
  const total = Object.values(weights).reduce((a, b) => a + b, 0);

  it('picks each source in proportion to its weight (200k seeded draws)', () => {
    const n = 200_000;
    const counts = draw(weights, new Set(), n);
    for (const s of SOURCES) {
      const expected = (n * weights[s]) / total;
      // within 5 standard deviations of the binomial expectation
      const sd = Math.sqrt(n * (weights[s] / total) * (1 - weights[s] / total));
      assert.ok(Math.abs(counts[s] - expected) <= 5 * sd + 1, `${s}: ${counts[s]} vs ${expected.toFixed(1)}`);
    }
  });

  it('starves no source: even refresh (weight 1 of 13111) is picked', () => {
    assert.ok(draw(weights, new Set(), 200_000, 7).refresh > 0);
  });

  it('index-only (1000) against follow-only (10): about 99 picks in 100 go to index', () => {
    const exhausted = new Set<SourceName>(['user', 'redir', 'index_follow', 'refresh']);
    const counts = draw(weights, exhausted, 10_000, 3);
    assert.equal(counts.index + counts.follow, 10_000);
    assert.ok(
      counts.index / 10_000 > 0.98 && counts.index / 10_000 < 0.995,
      `index share ${counts.index / 10_000}`,
    );
  });

  it('skips exhausted sources and returns null when all are exhausted', () => {
    const exhausted = new Set<SourceName>(SOURCES.filter((s) => s !== 'refresh'));
    assert.equal(draw(weights, exhausted, 100).refresh, 100);
    assert.equal(pickSource(weights, new Set(SOURCES), Math.random), null);
  });

  it('honours configured weights: equal weights share equally', () => {
    const equal = sourceWeights({ user: 1, redir: 1, index: 1, index_follow: 1, follow: 1, refresh: 1 });
    const counts = draw(equal, new Set(), 60_000, 11);
    for (const s of SOURCES) assert.ok(Math.abs(counts[s] - 10_000) < 500, `${s}: ${counts[s]}`);
  });

  it('handles random() at its bounds', () => {
    assert.equal(
      pickSource(weights, new Set(), () => 0),
      'user',
    );
    assert.equal(
      pickSource(weights, new Set(), () => 0.999_999_999_9),
      'refresh',
    );
  });
});

describe('refresh times and their GSI buckets', () => {
  it('schedules the next refresh maxAge after the fetch', () => {
    assert.equal(
      nextRefreshAt(Date.parse('2026-01-01T10:00:00.000Z'), 48 * 3_600_000),
      '2026-01-03T10:00:00.000Z',
    );
  });
  it('keeps a refreshed URL on its grid: previous due time plus whole maxAges, at least half a maxAge ahead', () => {
    const H = 3_600_000;
    const due = Date.parse('2026-01-03T10:00:00.000Z');
    const at = (iso: string) => nextRefreshAt(Date.parse(iso), 48 * H, due);
    // Refreshed an hour late, or a redelivered copy ten minutes later: the same next due time.
    assert.equal(at('2026-01-03T11:00:00.000Z'), '2026-01-05T10:00:00.000Z');
    assert.equal(at('2026-01-03T11:10:00.000Z'), '2026-01-05T10:00:00.000Z');
    // Fetched early (a discovery cycle): still the next grid point after the previous due time.
    assert.equal(at('2026-01-02T10:00:00.000Z'), '2026-01-05T10:00:00.000Z');
    // Far behind (the crawler was stopped for days): the first grid point half a maxAge ahead.
    assert.equal(at('2026-01-08T09:00:00.000Z'), '2026-01-09T10:00:00.000Z');
    assert.equal(at('2026-01-08T11:00:00.000Z'), '2026-01-11T10:00:00.000Z');
  });
  it('buckets by UTC day', () => {
    assert.equal(refreshBucket('2026-01-03T23:59:59.999Z'), '2026-01-03');
  });
  it('lists every day bucket from a time to another, both included', () => {
    const from = Date.parse('2026-01-30T22:00:00.000Z');
    const until = Date.parse('2026-02-02T01:00:00.000Z');
    assert.deepEqual(refreshBuckets(from, until), ['2026-01-30', '2026-01-31', '2026-02-01', '2026-02-02']);
    assert.deepEqual(refreshBuckets(until, until), ['2026-02-02']);
    assert.deepEqual(refreshBuckets(until + 86_400_000, until), []);
  });
  it('makes a 90-day first look-back 91 Queries', () => {
    const now = Date.parse('2026-06-01T12:00:00.000Z');
    assert.equal(refreshBuckets(now - 90 * 86_400_000, now).length, 91);
  });
});

describe('scheduleIntervals: the EventBridge rates the local runner uses as timers', () => {
  it('discovery from refresh.discoveryInterval, refresh hourly with the default 48h maxAge', () => {
    const config = parseConfig({
      name: 't',
      startUrls: ['https://www.example.com/'],
      refresh: { discoveryInterval: '15m' },
    });
    assert.deepEqual(scheduleIntervals(config), { discoveryMs: 15 * 60_000, refreshMs: 60 * 60_000 });
  });

  it('refreshes at a quarter of the shortest interval (maxAge, adaptive.min, a rule’s min), 1 min–1 h', () => {
    const cycle = (refresh: object, rules: unknown[] = []) =>
      scheduleIntervals(parseConfig({ name: 't', startUrls: ['https://www.example.com/'], refresh, rules }))
        .refreshMs / 60_000;
    assert.equal(cycle({ maxAge: '1h' }), 15);
    assert.equal(cycle({ maxAge: '10m' }), 3, 'ceil(2.5 min)');
    assert.equal(cycle({ maxAge: '30s' }), 1, 'EventBridge rates are whole minutes');
    assert.equal(cycle({ maxAge: '30d' }), 60);
    assert.equal(cycle({ maxAge: '48h', adaptive: { min: '2h', max: '96h' } }), 30);
    const rule = { match: { path: '/live' }, actions: [{ refresh: { min: '4m', max: '1h' } }] };
    assert.equal(cycle({ maxAge: '48h' }, [rule]), 1);
  });
});

describe('adaptInterval: halves on change, doubles when unchanged, within the bounds', () => {
  const H = 3_600_000;
  const b = { minMs: 1 * H, maxMs: 24 * H };
  const cases: [number | undefined, 'changed' | 'unchanged' | 'unknown', number][] = [
    [undefined, 'unknown', 4 * H],
    [undefined, 'changed', 2 * H],
    [8 * H, 'changed', 4 * H],
    [1 * H, 'changed', 1 * H],
    [8 * H, 'unchanged', 16 * H],
    [16 * H, 'unchanged', 24 * H],
    [30 * H, 'unknown', 24 * H],
    [0, 'unknown', 4 * H],
  ];
  for (const [prev, change, want] of cases)
    it(`${prev ?? 'none'} ${change} → ${want / H}h`, () =>
      assert.equal(adaptInterval(prev, 4 * H, b, change), want));
  it('a page that changes every cycle converges to the minimum, a static one to the maximum', () => {
    let fast = 4 * H;
    let slow = 4 * H;
    for (let i = 0; i < 10; i++) {
      fast = adaptInterval(fast, 4 * H, b, 'changed');
      slow = adaptInterval(slow, 4 * H, b, 'unchanged');
    }
    assert.deepEqual([fast, slow], [b.minMs, b.maxMs]);
  });
});
