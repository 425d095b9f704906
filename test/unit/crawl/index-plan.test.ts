import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig, type Rule } from '../../../shared/config.ts';
import {
  newestPerUrl,
  type PlanContext,
  planContext,
  planOutcome,
} from '../../../shared/crawl/state/index-plan.ts';
import type { CrawlDocument, PageOutcome, UrlItem, UrlTask } from '../../../shared/types.ts';

const URL_A = 'https://www.example.com/a';
const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const FETCHED = '2026-03-10T11:59:00.000Z';
const MAX_AGE = 48 * 3_600_000;
const DOC_FIELDS = ['docBulk', 'docLine', 'hash', 'indexedAt'];

function task(over: Partial<UrlTask> = {}): UrlTask {
  return { url: URL_A, depth: 1, queue: 'index_follow', index: true, follow: true, priority: 0, ...over };
}
function doc(hash: string): CrawlDocument {
  return {
    url: URL_A,
    title: 'A',
    content: 'a',
    contentType: 'text/html',
    mimeType: 'text/html',
    charset: 'utf-8',
    lastModified: null,
    size: 1,
    hash,
    depth: 1,
    source: null,
    meta: {},
    indexedAt: FETCHED,
  };
}
function outcome(over: Partial<PageOutcome> = {}): PageOutcome {
  return {
    url: URL_A,
    task: task(),
    state: 'indexed',
    httpStatus: 200,
    fetchedAt: FETCHED,
    doc: doc('h1'),
    ...over,
  };
}
const indexedItem: UrlItem = {
  url: URL_A,
  state: 'indexed',
  depth: 1,
  queue: 'index_follow',
  hash: 'h1',
  docBulk: 'docs/bulks/x.jsonl.gz',
  docLine: 3,
  indexedAt: '2026-03-07T00:00:00.000Z',
  etag: '"v1"',
  lastModified: 'Sat, 07 Mar 2026 00:00:00 GMT',
};
function ctx(
  existing: UrlItem[] = [],
  refresh: CrawlConfigInput['refresh'] = {},
  rules: Rule[] = [],
): PlanContext {
  const config = parseConfig({ name: 't', startUrls: ['https://www.example.com/'], refresh, rules });
  return { ...planContext(config, new Map(existing.map((i) => [i.url, i])), NOW), maxAgeMs: MAX_AGE };
}
const refreshTask = task({ queue: 'refresh', conditional: { etag: '"v1"' } });
const http404 = { kind: 'permanent' as const, code: 'http-404', message: 'Not Found' };
const http503 = { kind: 'temporary' as const, code: 'http-503', message: 'Service Unavailable' };

describe('planOutcome: states, documents and deletions (seeds 001, 002, 003, 004)', () => {
  it('a new page: document written, state indexed, next refresh maxAge after the fetch', () => {
    const p = planOutcome(outcome(), ctx());
    assert.equal(p.writeDoc, true);
    assert.equal(p.stat, 'indexed');
    assert.equal(p.set.state, 'indexed');
    assert.equal(p.set.hash, 'h1');
    assert.equal(p.set.nextRefreshAt, '2026-03-12T11:59:00.000Z');
    assert.equal('refreshBucket' in p.set, false, 'no index key: the schedule goes to the S3 manifest');
    assert.equal(p.forget, false);
    assert.equal(p.deleteReason, undefined);
  });

  it('same hash as the stored document: nothing written (seed 003 delta check)', () => {
    const p = planOutcome(outcome({ task: refreshTask }), ctx([indexedItem]));
    assert.equal(p.writeDoc, false);
    assert.equal(p.stat, 'unchanged');
    assert.equal(p.set.queue, 'index_follow', "a refresh keeps the URL's own source");
  });

  it('changed hash: re-indexed', () => {
    const p = planOutcome(outcome({ task: refreshTask, doc: doc('h2') }), ctx([indexedItem]));
    assert.equal(p.writeDoc, true);
    assert.equal(p.stat, 'reindexed');
    assert.equal(p.set.hash, 'h2');
  });

  it('304 Not Modified: the document stays, the validators are kept (seed 004)', () => {
    const p = planOutcome(
      outcome({ task: refreshTask, notModified: true, doc: undefined, httpStatus: 304 }),
      ctx([indexedItem]),
    );
    assert.equal(p.writeDoc, false);
    assert.equal(p.stat, 'not-modified');
    assert.equal(p.set.state, 'indexed');
    assert.equal(p.set.etag, '"v1"');
    assert.equal(p.set.lastModified, indexedItem.lastModified);
    assert.ok(!p.remove.some((f) => DOC_FIELDS.includes(f)));
    assert.equal(p.set.nextRefreshAt, '2026-03-12T11:59:00.000Z');
  });

  it('304 to an archive: it stays an archive (its note), so its elements are kept and later retired with it', () => {
    const archive = {
      ...indexedItem,
      state: 'followed' as const,
      docBulk: null,
      docLine: null,
      note: 'archive with 2 element(s)',
    };
    const p = planOutcome(
      outcome({ task: refreshTask, notModified: true, doc: undefined, httpStatus: 304 }),
      ctx([archive]),
    );
    assert.equal(p.set.state, 'followed');
    assert.equal(p.set.note, 'archive with 2 element(s)');
  });

  it("304 after a temporary error: indexed again, without the error's note", () => {
    const failed = {
      ...indexedItem,
      state: 'error' as const,
      errorKind: 'temporary' as const,
      errorCode: 'http-503',
      note: 'HTTP 503 Service Unavailable',
    };
    const p = planOutcome(
      outcome({ task: refreshTask, notModified: true, doc: undefined, httpStatus: 304 }),
      ctx([failed]),
    );
    assert.equal(p.set.state, 'indexed');
    assert.equal(p.set.note, null);
  });

  it('a refresh fetched twice (its first run killed after writing) stays on the grid of the due time it carried', () => {
    // The second fetch found the state already moved a maxAge on, and put the URL a whole maxAge
    // further: two maxAges after its last refresh.
    const due = '2026-03-10T11:00:00.000Z';
    const advanced = {
      ...indexedItem,
      nextRefreshAt: '2026-03-12T11:00:00.000Z',
      lastFetched: '2026-03-10T11:00:30.000Z',
    };
    const again = task({ queue: 'refresh', prev: { ...indexedItem, nextRefreshAt: due } });
    const p = planOutcome(
      outcome({ task: again, notModified: true, doc: undefined, httpStatus: 304 }),
      ctx([advanced]),
    );
    assert.equal(p.set.nextRefreshAt, '2026-03-12T11:00:00.000Z');
  });

  it('refresh + permanent error (a 502): document deleted at once, the error remembered and tried again after maxAge (seed 001)', () => {
    // Forgotten at once, a page behind one 502 of a load balancer never came back while the page
    // linking to it answered 304.
    const http502 = { kind: 'permanent' as const, code: 'http-502', message: 'HTTP 502' };
    const p = planOutcome(
      outcome({ task: refreshTask, state: 'error', error: http502, httpStatus: 502, doc: undefined }),
      ctx([indexedItem]),
    );
    assert.equal(p.forget, false);
    assert.equal(p.writeDoc, false);
    assert.equal(p.deleteReason, 'permanent-error: http-502 (HTTP 502)');
    assert.ok(
      DOC_FIELDS.every((f) => p.remove.includes(f)),
      'the document goes',
    );
    assert.deepEqual([p.set.state, p.set.errorKind, p.set.errorCode], ['error', 'permanent', 'http-502']);
    assert.equal(p.set.nextRefreshAt, new Date(NOW + MAX_AGE).toISOString());
  });

  it('refresh + permanent error again on a URL in error: forgotten (seed 001); a start URL never is', () => {
    const inError: UrlItem = {
      ...indexedItem,
      state: 'error',
      errorKind: 'permanent',
      docBulk: null,
      docLine: null,
    };
    const again = planOutcome(
      outcome({ task: refreshTask, state: 'error', error: http404, httpStatus: 404, doc: undefined }),
      ctx([inError]),
    );
    assert.equal(again.forget, true);
    const start: UrlItem = { ...inError, depth: 0, queue: 'user' };
    const kept = planOutcome(
      outcome({
        task: { ...refreshTask, depth: 0 },
        state: 'error',
        error: http404,
        httpStatus: 404,
        doc: undefined,
      }),
      ctx([start]),
    );
    assert.equal(kept.forget, false);
    assert.deepEqual([kept.set.state, kept.set.errorCode], ['error', 'http-404']);
  });

  it('refresh + a temporary error: the document stays, the error is remembered, tried again in an hour', () => {
    // One refresh's failures (its quick retries took seconds) used to delete the document: a site
    // down for 15 s during a cycle lost its whole index.
    const p = planOutcome(
      outcome({
        task: { ...refreshTask, attempt: 3 },
        state: 'error',
        error: http503,
        httpStatus: 503,
        doc: undefined,
      }),
      ctx([indexedItem]),
    );
    assert.equal(p.forget, false);
    assert.equal(p.deleteReason, undefined);
    assert.ok(!p.remove.some((f) => DOC_FIELDS.includes(f)), 'document kept');
    assert.equal(p.set.state, 'error');
    assert.equal(p.set.errorKind, 'temporary');
    assert.equal(p.set.temporaryErrors, 1);
    assert.equal(p.set.etag, '"v1"', 'the next try is conditional still');
    assert.equal(p.set.nextRefreshAt, new Date(NOW + 3_600_000).toISOString());
  });

  it('temporary errors in a row back off (1 h, 2 h, 4 h), then past the limit: deleted and forgotten (seed 001)', () => {
    const failing = (temporaryErrors: number) =>
      planOutcome(
        outcome({ task: refreshTask, state: 'error', error: http503, httpStatus: 503, doc: undefined }),
        ctx([{ ...indexedItem, state: 'error', errorKind: 'temporary', temporaryErrors }]),
      );
    assert.equal(failing(1).set.nextRefreshAt, new Date(NOW + 2 * 3_600_000).toISOString());
    assert.equal(failing(2).set.nextRefreshAt, new Date(NOW + 4 * 3_600_000).toISOString());
    assert.equal(failing(2).forget, false);
    const p = failing(3);
    assert.equal(p.forget, true);
    assert.equal(p.deleteReason, 'temporary-errors: http-503 (HTTP 503)');
  });

  it('past maxTemporaryErrors but failing for less than maxAge: kept, tried again; past maxAge too: deleted', () => {
    // On the count alone a night's outage (1 h, 2 h, 4 h: 7 hours) deleted every document of a site.
    const failing = (temporaryErrors: number, sinceHours: number) =>
      planOutcome(
        outcome({ task: refreshTask, state: 'error', error: http503, httpStatus: 503, doc: undefined }),
        ctx([
          {
            ...indexedItem,
            state: 'error',
            errorKind: 'temporary',
            temporaryErrors,
            failingSince: new Date(NOW - sinceHours * 3_600_000).toISOString(),
          },
        ]),
      );
    const night = failing(3, 7);
    assert.equal(night.forget, false);
    assert.equal(night.deleteReason, undefined);
    assert.equal(night.set.temporaryErrors, 4);
    assert.equal(
      night.set.failingSince,
      new Date(NOW - 7 * 3_600_000).toISOString(),
      'the first failure kept',
    );
    const longer = failing(3, MAX_AGE / 3_600_000);
    assert.equal(longer.forget, true);
    assert.equal(longer.deleteReason, 'temporary-errors: http-503 (HTTP 503)');
    // The first failure in a row starts the clock; a success clears it.
    const first = planOutcome(
      outcome({ task: refreshTask, state: 'error', error: http503, httpStatus: 503, doc: undefined }),
      ctx([indexedItem]),
    );
    assert.equal(first.set.failingSince, first.outcome.fetchedAt);
    const ok = planOutcome(
      outcome({ task: refreshTask }),
      ctx([{ ...indexedItem, failingSince: first.outcome.fetchedAt }]),
    );
    assert.equal(ok.set.failingSince, null);
  });

  it('refresh + error on a URL without a document: forgotten, no deletion order', () => {
    const errored: UrlItem = {
      url: URL_A,
      state: 'error',
      depth: 1,
      queue: 'index_follow',
      errorKind: 'permanent',
    };
    const p = planOutcome(
      outcome({ task: refreshTask, state: 'error', error: http404, httpStatus: 404, doc: undefined }),
      ctx([errored]),
    );
    assert.equal(p.forget, true);
    assert.equal(p.deleteReason, undefined);
  });

  it('first fetch, permanent error: error state remembered, tried again after maxAge (seed 002)', () => {
    const p = planOutcome(
      outcome({ state: 'error', error: http404, httpStatus: 404, doc: undefined }),
      ctx(),
    );
    assert.equal(p.forget, false);
    assert.equal(p.set.state, 'error');
    assert.equal(p.set.errorKind, 'permanent');
    assert.equal(p.set.errorCode, 'http-404');
    assert.equal(p.set.httpStatus, 404);
    assert.equal(p.set.temporaryErrors, 0);
    assert.equal(p.set.nextRefreshAt, new Date(NOW + MAX_AGE).toISOString());
  });

  it('first fetch, temporary errors: counted, tried again in an hour', () => {
    const p = planOutcome(
      outcome({
        task: task({ attempt: 2 }),
        state: 'error',
        error: http503,
        httpStatus: 503,
        doc: undefined,
      }),
      ctx(),
    );
    assert.equal(p.set.state, 'error');
    assert.equal(p.set.errorKind, 'temporary');
    assert.equal(p.set.temporaryErrors, 1, 'one failed fetch, whatever its quick retries');
    assert.equal(p.set.nextRefreshAt, new Date(NOW + 3_600_000).toISOString());
  });

  it('a permanent error on an indexed URL outside refresh: deletion order at once, error state kept', () => {
    const p = planOutcome(
      outcome({
        task: task({ queue: 'user' }),
        state: 'error',
        error: http404,
        httpStatus: 404,
        doc: undefined,
      }),
      ctx([indexedItem]),
    );
    assert.equal(p.forget, false);
    assert.equal(p.set.state, 'error');
    assert.deepEqual(p.remove.filter((f) => DOC_FIELDS.includes(f)).sort(), [...DOC_FIELDS].sort());
    assert.equal(p.deleteReason, 'permanent-error: http-404 (HTTP 404)');
  });

  it('an indexed page now noindex: document removed with the reason, state followed', () => {
    const p = planOutcome(
      outcome({ task: refreshTask, state: 'followed', note: 'noindex (meta)', doc: undefined }),
      ctx([indexedItem]),
    );
    assert.equal(p.set.state, 'followed');
    assert.deepEqual(p.remove.filter((f) => DOC_FIELDS.includes(f)).sort(), [...DOC_FIELDS].sort());
    assert.equal(p.deleteReason, 'followed: noindex (meta)');
  });

  it("an indexed page now out of scope: document removed with the refresh cycle's reason, state ignored", () => {
    const p = planOutcome(
      outcome({ task: refreshTask, state: 'ignored', note: 'out-of-scope: excluded', doc: undefined }),
      ctx([indexedItem]),
    );
    assert.equal(p.set.state, 'ignored');
    assert.deepEqual(p.remove.filter((f) => DOC_FIELDS.includes(f)).sort(), [...DOC_FIELDS].sort());
    assert.equal(p.deleteReason, 'out-of-scope: excluded');
  });

  it('every plan releases the claim', () => {
    assert.ok(planOutcome(outcome(), ctx()).remove.includes('claimedBy'));
  });
});

describe('planOutcome: adaptive refresh (issue 17)', () => {
  const H = 3_600_000;
  const adaptive = { maxAge: '48h', adaptive: { min: '6h', max: '192h' } };
  const DUE = '2026-03-10T11:00:00.000Z';
  const refreshed = (over: Partial<UrlItem> = {}): UrlItem => ({
    ...indexedItem,
    lastFetched: '2026-03-08T11:00:00.000Z',
    nextRefreshAt: DUE,
    ...over,
  });
  const next = (p: ReturnType<typeof planOutcome>) => Date.parse(p.set.nextRefreshAt ?? '') - Date.parse(DUE);

  it('off by default: every page is due maxAge later, no interval recorded', () => {
    const p = planOutcome(outcome({ task: refreshTask, doc: doc('h2') }), ctx([refreshed()]));
    assert.equal(next(p), 48 * H);
    assert.equal(p.set.refreshInterval, undefined);
  });

  it('a changed page halves its interval, an unchanged (same hash or 304) one doubles it', () => {
    const changed = planOutcome(outcome({ task: refreshTask, doc: doc('h2') }), ctx([refreshed()], adaptive));
    assert.equal(changed.set.refreshInterval, 24 * H);
    assert.equal(next(changed), 24 * H);
    const same = planOutcome(outcome({ task: refreshTask, doc: doc('h1') }), ctx([refreshed()], adaptive));
    assert.equal(same.set.refreshInterval, 96 * H);
    const notModified = planOutcome(
      outcome({ task: refreshTask, notModified: true, doc: undefined }),
      ctx([refreshed({ refreshInterval: 12 * H })], adaptive),
    );
    assert.equal(notModified.set.refreshInterval, 24 * H);
    assert.equal(next(notModified), 24 * H);
  });

  it('stays within the bounds, and a rule sets its own', () => {
    const low = planOutcome(
      outcome({ task: refreshTask, doc: doc('h2') }),
      ctx([refreshed({ refreshInterval: 6 * H })], adaptive),
    );
    assert.equal(low.set.refreshInterval, 6 * H);
    const high = planOutcome(
      outcome({ task: refreshTask, doc: doc('h1') }),
      ctx([refreshed({ refreshInterval: 192 * H })], adaptive),
    );
    assert.equal(high.set.refreshInterval, 192 * H);
    const rule: Rule = { match: { path: '/a' }, actions: [{ refresh: { min: '1h', max: '2h' } }] };
    const ruled = planOutcome(outcome({ task: refreshTask, doc: doc('h1') }), ctx([refreshed()], {}, [rule]));
    assert.equal(ruled.set.refreshInterval, 2 * H);
  });

  it('a first fetch starts at maxAge within the bounds', () => {
    const p = planOutcome(outcome(), ctx([], { maxAge: '48h', adaptive: { min: '1h', max: '24h' } }));
    assert.equal(p.set.refreshInterval, 24 * H);
    assert.equal(Date.parse(p.set.nextRefreshAt ?? '') - Date.parse(FETCHED), 24 * H);
  });
});

describe('planOutcome: linksReadAt (orphans)', () => {
  it('a whole fetch of a followed page records when its links were read; a 304 keeps the old time', () => {
    assert.equal(planOutcome(outcome(), ctx()).set.linksReadAt, FETCHED);
    const p304 = planOutcome(outcome({ notModified: true, doc: undefined }), ctx([indexedItem]));
    assert.equal(p304.set.linksReadAt, undefined);
    const noFollow = planOutcome(outcome({ task: task({ follow: false }) }), ctx());
    assert.equal(noFollow.set.linksReadAt, undefined);
  });
});

describe('newestPerUrl', () => {
  it('keeps the newest fetch of each URL, the first of equal copies, and the order', () => {
    const b = 'https://www.example.com/b';
    const old = outcome({ fetchedAt: '2026-03-10T11:00:00.000Z' });
    const copy = outcome();
    const other = outcome({ url: b });
    const newest = outcome({ fetchedAt: '2026-03-10T11:59:30.000Z' });
    const kept = newestPerUrl([old, other, copy, outcome(), newest, outcome()]);
    assert.deepEqual(kept, [other, newest]);
    assert.equal(kept[1], newest);
    assert.deepEqual(newestPerUrl([copy, outcome()]), [copy]);
    assert.equal(newestPerUrl([copy, outcome()])[0], copy);
  });
});
