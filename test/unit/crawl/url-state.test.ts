import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isNewerLine,
  isTableKept,
  keepLaterStamps,
  keepsInTable,
  orphanReason,
  reachedAt,
  resolveState,
} from '../../../shared/crawl/state/url-state.ts';
import type { PageOutcome, UrlItem, UrlTask } from '../../../shared/types.ts';

const URL_A = 'https://www.example.com/a';
const claim: UrlItem = {
  url: URL_A,
  state: 'pending',
  depth: 2,
  queue: 'index_follow',
  claimedBy: 'pages/2026-03-10/b.jsonl.gz',
  discoveredAt: '2026-03-10T10:00:00.000Z',
  source: 'docs',
};
const line = (over: Partial<UrlItem> = {}): UrlItem => ({
  url: URL_A,
  state: 'indexed',
  depth: 2,
  queue: 'index_follow',
  lastFetched: '2026-03-10T10:05:00.000Z',
  docBulk: 'docs/bulks/2026-03-10/x.jsonl.gz',
  docLine: 4,
  hash: 'sha256:aa',
  nextRefreshAt: '2026-03-12T10:05:00.000Z',
  stored: 'line',
  at: '2026-03-10T10:05:01.000Z',
  ...over,
});

describe('where a URL state is kept (url-state.ts)', () => {
  it('a claim is not a table state; an item the index stage wrote is', () => {
    assert.equal(isTableKept(claim), false);
    assert.equal(isTableKept({ ...claim, stored: 'table', lastFetched: '2026-03-10T10:05:00.000Z' }), true);
    // Items written before `stored` existed carry their fetch time: they are table states.
    assert.equal(isTableKept({ ...claim, lastFetched: '2026-03-10T10:05:00.000Z' }), true);
  });

  const task = (over: Partial<UrlTask> = {}): UrlTask => ({
    url: URL_A,
    depth: 2,
    queue: 'index_follow',
    index: true,
    follow: true,
    priority: 0,
    ...over,
  });
  const outcome = (over: Partial<PageOutcome> = {}): PageOutcome => ({
    url: URL_A,
    task: task(),
    state: 'indexed',
    httpStatus: 200,
    fetchedAt: '2026-03-10T10:05:00.000Z',
    ...over,
  });
  const cases: [string, PageOutcome, UrlItem | undefined, boolean][] = [
    ['a page indexed the first time', outcome(), undefined, false],
    ['a page followed, not indexed', outcome({ state: 'followed' }), undefined, false],
    ['a refreshed page kept in a line', outcome(), line(), false],
    ['an error (clear-errors and retries find it by key)', outcome({ state: 'error' }), undefined, true],
    ['a start URL (the seed stage re-reads it)', outcome({ task: task({ depth: 0 }) }), undefined, true],
    ['a sitemap', outcome({ task: task({ kind: 'sitemap' }) }), undefined, true],
    ['a compound element', outcome({ element: true }), undefined, true],
    ['a URL kept in the table before', outcome(), { ...line(), stored: 'table' }, true],
  ];
  for (const [name, o, prev, expected] of cases) {
    it(`${name}: ${expected ? 'table' : 'line'}`, () => {
      assert.equal(keepsInTable(o, prev), expected);
    });
  }
});

describe('ordering state lines', () => {
  it('the later fetch wins, then the later write, then the later refresh time', () => {
    assert.equal(isNewerLine(line(), undefined), true);
    assert.equal(isNewerLine(line({ lastFetched: '2026-03-11T00:00:00.000Z' }), line()), true);
    assert.equal(isNewerLine(line(), line({ lastFetched: '2026-03-11T00:00:00.000Z' })), false);
    assert.equal(isNewerLine(line({ at: '2026-03-10T11:00:00.000Z' }), line()), true);
    assert.equal(isNewerLine(line(), line()), false);
    assert.equal(
      isNewerLine(line({ at: undefined, nextRefreshAt: 'b' }), line({ at: undefined, nextRefreshAt: 'a' })),
      true,
    );
  });
});

describe('resolving a URL state from its item and its newest line', () => {
  it('no item: forgotten, whatever lines remain', () => {
    assert.equal(resolveState(undefined, line()), undefined);
  });
  it('a claim with a line fetched after it: the line, over the claim, without the claimer', () => {
    const s = resolveState(claim, line());
    assert.equal(s?.state, 'indexed');
    assert.equal(s?.stored, 'line');
    assert.equal(s?.docLine, 4);
    assert.equal(s?.source, 'docs');
    assert.equal(s?.discoveredAt, claim.discoveredAt);
    assert.equal(s?.claimedBy, undefined);
  });
  it('a claim newer than the line (forgotten, then found again): still pending', () => {
    const s = resolveState({ ...claim, discoveredAt: '2026-03-11T00:00:00.000Z' }, line());
    assert.equal(s?.state, 'pending');
  });
  it('a claim without a line: pending', () => {
    assert.equal(resolveState(claim, undefined)?.state, 'pending');
  });
  it('a table item wins over any line', () => {
    const item: UrlItem = {
      ...claim,
      state: 'error',
      lastFetched: '2026-03-10T09:00:00.000Z',
      stored: 'table',
    };
    const s = resolveState(item, line({ lastFetched: '2026-03-10T12:00:00.000Z' }));
    assert.equal(s?.state, 'error');
    assert.equal(s?.stored, 'table');
  });
});

describe('orphans: reachedAt and orphanReason', () => {
  const item = (over: Partial<UrlItem>): UrlItem => ({
    url: 'https://a.test/p',
    state: 'indexed',
    depth: 1,
    queue: 'index_follow',
    discoveredAt: '2026-01-01T00:00:00.000Z',
    ...over,
  });
  const BEFORE = '2026-01-10T00:00:00.000Z';
  it('the later of the stamp and the claim', () => {
    assert.equal(reachedAt(item({})), '2026-01-01T00:00:00.000Z');
    assert.equal(reachedAt(item({ reachedAt: '2026-01-05T00:00:00.000Z' })), '2026-01-05T00:00:00.000Z');
    // A URL forgotten and claimed again: the new claim counts.
    assert.equal(reachedAt(item({ reachedAt: '2025-12-01T00:00:00.000Z' })), '2026-01-01T00:00:00.000Z');
    assert.equal(reachedAt(item({ discoveredAt: undefined })), undefined);
  });
  it('an orphan only when reached before the limit, never a seeded URL, never with orphans off', () => {
    assert.match(
      orphanReason(item({}), false, BEFORE) ?? '',
      /^orphan: not linked or listed since 2026-01-01/,
    );
    assert.equal(orphanReason(item({ reachedAt: '2026-01-11T00:00:00.000Z' }), false, BEFORE), null);
    assert.equal(orphanReason(item({}), true, BEFORE), null);
    assert.equal(orphanReason(item({}), false, null), null);
    assert.equal(orphanReason(item({ discoveredAt: undefined }), false, BEFORE), null);
  });
});

describe('orphans: link stamps never move back (keepLaterStamps)', () => {
  const T1 = '2026-01-01T00:00:00.000Z';
  const T2 = '2026-01-05T00:00:00.000Z';
  const state: UrlItem = { url: 'https://a.test/p', state: 'indexed', depth: 1, queue: 'index_follow' };
  it("keeps the later of each stamp, the item's own when the table has none or an older one", () => {
    // A refresh task's state (read at the cycle's start) written after a link stamped the item.
    assert.deepEqual(
      keepLaterStamps({ ...state, reachedAt: T1, linksReadAt: T2 }, { ...state, reachedAt: T2 }),
      {
        ...state,
        reachedAt: T2,
        linksReadAt: T2,
      },
    );
    assert.deepEqual(keepLaterStamps({ ...state }, { ...state, reachedAt: T1, linksReadAt: T1 }), {
      ...state,
      reachedAt: T1,
      linksReadAt: T1,
    });
    const own = { ...state, reachedAt: T2 };
    assert.equal(keepLaterStamps(own, { ...state, reachedAt: T1 }), own, 'nothing later: the same object');
    assert.equal(keepLaterStamps(own, undefined), own);
    assert.deepEqual(keepLaterStamps(state, state), state, 'no stamp on either: none added');
  });
  it("resolveState: a state line's stale copy of the stamp does not hide the claim's newer one", () => {
    const item: UrlItem = { ...state, state: 'pending', discoveredAt: T1, reachedAt: T2 };
    const line: UrlItem = { ...state, lastFetched: T1, reachedAt: T1 };
    assert.equal(resolveState(item, line)?.reachedAt, T2);
    assert.equal(resolveState({ ...item, reachedAt: undefined }, line)?.reachedAt, T1);
  });
});
