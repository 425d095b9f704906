/** The report's aggregates: counts, bounded examples and histograms, freshness against maxAge. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderReportHtml } from '../../../cli/report-html.ts';
import { emptyCounts } from '../../../shared/aws/request-counter.ts';
import { ReportAggregate, skipReason } from '../../../shared/report/report-model.ts';
import { buildRunRecord } from '../../../shared/report/run-record.ts';
import { BoundedCounter, TimeHistogram } from '../../../shared/report/time-histogram.ts';
import type { UrlItem } from '../../../shared/types.ts';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const HOUR = 3_600_000;
const ago = (h: number) => new Date(NOW - h * HOUR).toISOString();
const item = (url: string, extra: Partial<UrlItem> = {}): UrlItem => ({
  url,
  state: 'indexed',
  depth: 1,
  queue: 'index_follow',
  httpStatus: 200,
  lastFetched: ago(1),
  docBulk: 'docs/bulks/a.jsonl.gz',
  docLine: 0,
  ...extra,
});
const aggregate = () => new ReportAggregate({ crawl: 'c', where: 'here', nowMs: NOW, maxAgeMs: 48 * HOUR });

describe('report aggregates', () => {
  it('counts states, HTTP statuses, documents by depth and queue, errors by host with examples', () => {
    const agg = aggregate();
    agg.addState(item('http://a.test/', { depth: 0, queue: 'user' }));
    agg.addState(item('http://a.test/x'));
    agg.addState(item('http://a.test/f', { state: 'followed', docBulk: null, docLine: null }));
    for (let i = 0; i < 5; i++) {
      agg.addState(
        item(`http://b.test/${i}`, {
          state: 'error',
          errorKind: i < 4 ? 'permanent' : 'temporary',
          errorCode: 'http-404',
          httpStatus: 404,
          docBulk: null,
        }),
      );
    }
    agg.addState(
      item('http://a.test/v.mp4', { state: 'ignored', note: 'mime-type video/mp4', docBulk: null }),
    );
    const d = agg.finish();
    assert.deepEqual(d.totals, { urls: 9, documents: 2, errors: 5, upserts: 0, deletes: 0 });
    assert.deepEqual(d.states, {
      indexed: 2,
      followed: 1,
      'error/permanent': 4,
      'error/temporary': 1,
      ignored: 1,
    });
    assert.deepEqual(d.httpStatus, { '200': 4, '404': 5 });
    assert.deepEqual(d.docsByDepth, { '0': 1, '1': 1 });
    assert.deepEqual(d.docsByQueue, { user: 1, index_follow: 1 });
    assert.deepEqual(
      d.errorsByHost.map((h) => [h.host, h.permanent, h.temporary, h.examples.length]),
      [['b.test', 4, 1, 3]],
    );
    assert.deepEqual(d.skipped, [['mime-type video/mp4', 1]]);
  });

  it('lists the 25 hosts with the most errors and says of how many', () => {
    const agg = aggregate();
    for (let h = 0; h < 30; h++)
      for (let i = 0; i <= h; i++)
        agg.addState(
          item(`http://h${h}.test/${i}`, { state: 'error', errorKind: 'permanent', docBulk: null }),
        );
    const d = agg.finish();
    assert.equal(d.errorsByHost.length, 25);
    assert.equal(d.errorsByHost[0]?.host, 'h29.test');
    assert.equal(d.errorHosts, 30);
    assert.match(renderReportHtml(d), /<caption[^>]*>the 25 hosts with the most errors, of 30<\/caption>/);
    const few = aggregate();
    few.addState(item('http://a.test/x', { state: 'error', errorKind: 'permanent', docBulk: null }));
    assert.doesNotMatch(renderReportHtml(few.finish()), /<caption/);
  });

  it('puts document ages in classes of refresh.maxAge, overdue past it', () => {
    const agg = aggregate();
    for (const h of [1, 11, 13, 30, 47, 49, 100])
      agg.addState(item(`http://a.test/${h}`, { lastFetched: ago(h) }));
    const d = agg.finish();
    assert.deepEqual(
      d.freshness.buckets.map((b) => b.count),
      [2, 1, 1, 1, 2],
    );
    assert.equal(d.freshness.overdue, 2);
    assert.equal(d.freshness.maxAgeHours, 48);
  });

  it("measures a document's age against its own refresh time: an adaptive 30-day page is not overdue at 3 days", () => {
    const agg = aggregate();
    const at = (h: number) => new Date(NOW + h * HOUR).toISOString();
    // fetched 72 h ago, next refresh in 27 days (a 30-day adaptive interval): 10 % of it
    agg.addState(item('http://a.test/slow', { lastFetched: ago(72), nextRefreshAt: at(27 * 24) }));
    // fetched 3 h ago with a 4-hour interval: 75 %
    agg.addState(item('http://a.test/fast', { lastFetched: ago(3), nextRefreshAt: at(1) }));
    // its refresh time passed an hour ago
    agg.addState(item('http://a.test/late', { lastFetched: ago(5), nextRefreshAt: ago(1) }));
    const d = agg.finish();
    assert.deepEqual(
      d.freshness.buckets.map((b) => b.count),
      [1, 0, 0, 1, 1],
    );
  });

  it('counts the change feed over time and deletions by reason without the URL-specific detail', () => {
    const agg = aggregate();
    agg.addChange({ type: 'upsert', url: 'u1', at: '2026-11-23T10:00:10Z' });
    agg.addChange({ type: 'upsert', url: 'u2', at: '2026-11-23T10:00:50Z' });
    agg.addChange({
      type: 'delete',
      url: 'u3',
      at: '2026-11-23T10:03:00Z',
      reason: 'permanent-error: http-404 (HTTP 404)',
    });
    const d = agg.finish();
    assert.equal(d.totals.upserts, 2);
    assert.equal(d.totals.deletes, 1);
    assert.deepEqual(d.changes.deletesByReason, [['permanent-error: http-404', 1]]);
    assert.deepEqual(
      d.changes.buckets.map((b) => [b.t, b.values]),
      [
        ['2026-11-23T10:00:00.000Z', [2, 0]],
        ['2026-11-23T10:03:00.000Z', [0, 1]],
      ],
    );
  });

  it('prices each run per million pages and counts its rejected links as skip reasons', () => {
    const counts = {
      ...emptyCounts(),
      calls: { 'S3.PutObject': 10, 'SQS.SendMessageBatch': 5 },
      sqsBilledRequests: 5,
    };
    const run = buildRunRecord({
      kind: 'crawl',
      crawl: 'c',
      startedMs: NOW - 10_000,
      finishedMs: NOW,
      stats: { fetched: 100, 'rejected:ignored-extension': 7 },
      counts,
      stages: { fetch: { invocations: 2, totalMs: 4000 } },
    });
    const agg = aggregate();
    agg.addRun(run);
    const [r] = agg.finish().runs;
    assert.equal(r?.pagesPerSecond, 10);
    assert.equal(r?.awsRequests, 15);
    // S3: 10 PUTs × $0.005/1000 for 100 pages → $0.50 per million; SQS 5 × $0.40/M → $0.02.
    assert.equal(r?.costByService?.s3?.toFixed(4), '0.5000');
    assert.equal(r?.costByService?.sqs?.toFixed(4), '0.0200');
    assert.ok((r?.costPerMillion ?? 0) > 0.52);
    assert.deepEqual(agg.finish().skipped, [['link rejected: ignored-extension', 7]]);
    assert.equal(r?.interrupted, false);
  });

  it('counts each URL once among the skip reasons: limits and soft 404s apart, followed-only pages and duplicates in', () => {
    const agg = aggregate();
    const trap = 'trap: query-variants (scope.traps.maxQueryVariantsPerPath 1)';
    const canonical = 'canonical is http://x.test/a (extract.honorCanonical): that URL is indexed instead';
    const states: [string, Partial<UrlItem>][] = [
      ['/q?1', { state: 'ignored', note: trap }],
      ['/q?2', { state: 'ignored', note: trap }],
      ['/away', { state: 'ignored', note: 'redirect target rejected (offsite): http://other.test/' }],
      ['/gone', { state: 'ignored', note: 'out-of-scope: excluded' }],
      ['/n1', { state: 'followed', note: 'noindex (meta robots)' }],
      ['/n2', { state: 'followed', note: 'noindex (meta robots); title cut at limits.titleChars (1000)' }],
      ['/n3', { state: 'followed', note: 'noindex (X-Robots-Tag)' }],
      ['/c', { state: 'followed', note: canonical }],
      ['/sitemap.xml', { state: 'followed', note: 'urlset: 3 URLs', kind: 'sitemap' }],
      [
        '/d1',
        { state: 'duplicate', note: 'same content as http://x.test/a', duplicateOf: 'http://x.test/a' },
      ],
      [
        '/d2',
        { state: 'duplicate', note: 'same content as http://x.test/a', duplicateOf: 'http://x.test/a' },
      ],
      ['/big', { note: 'read to fetch.maxBytes (10485760): cut' }],
      ['/soft', { state: 'error', errorKind: 'permanent', errorCode: 'soft-404' }],
    ];
    for (const [path, extra] of states)
      agg.addState(item(`http://x.test${path}`, { docBulk: undefined, ...extra }));
    // 3 query-variant stops, 2 of them rows above; 5 offsite rejections, 1 of them the redirect's
    // target above; the out-of-scope page is its own row; the cut page and the soft 404 are no links.
    const stats = {
      fetched: 10,
      'rejected:limit-fetch-max-bytes': 1,
      'rejected:soft-404': 1,
      'rejected:query-variants': 3,
      'unrecorded:query-variants': 1,
      'rejected:offsite': 5,
      'recorded:offsite': 1,
      'rejected:excluded': 1,
      'recorded:excluded': 1,
    };
    const run = {
      kind: 'crawl' as const,
      crawl: 'c',
      startedMs: NOW - 10_000,
      finishedMs: NOW,
      counts: emptyCounts(),
    };
    agg.addRun(buildRunRecord({ ...run, stats, stages: {} }));
    const d = agg.finish();
    assert.deepEqual(d.skipped, [
      ['link rejected: offsite', 4],
      ['trap: query-variants', 3],
      ['duplicate: same content as another URL', 2],
      ['followed, not indexed: noindex (meta robots)', 2],
      ['followed, not indexed: canonical is … (extract.honorCanonical): that URL is indexed instead', 1],
      ['followed, not indexed: noindex (X-Robots-Tag)', 1],
      ['out-of-scope: excluded', 1],
      ['redirect target rejected (offsite): …', 1],
    ]);
    assert.deepEqual(d.limits, [['limit-fetch-max-bytes', 1]]);
    assert.match(renderReportHtml(d), /data-k="limits-limit-fetch-max-bytes">1</);
  });

  it("a deployed stack's hour has no outcome counts: null (n/a), not 0", () => {
    const agg = aggregate();
    const hour = buildRunRecord({
      kind: 'crawl',
      crawl: 'c',
      startedMs: NOW - 3_600_000,
      finishedMs: NOW,
      stats: {},
      counts: emptyCounts(),
      stages: {},
    });
    agg.addRun({ ...hour, kind: 'deployed', pages: 193 });
    const [r] = agg.finish().runs;
    assert.deepEqual([r?.errors, r?.upserted, r?.deleted], [null, null, null]);
  });

  it('marks an interrupted run; counts as fetched only URLs a request was sent for', () => {
    const agg = aggregate();
    agg.addRun(
      buildRunRecord({
        kind: 'refresh',
        crawl: 'c',
        startedMs: NOW - 10_000,
        finishedMs: NOW,
        stats: {
          fetched: 18,
          'error:permanent': 2,
          'error:temporary': 1,
          'documents:upserted': 5,
          'documents:deleted': 2,
        },
        counts: emptyCounts(),
        stages: {},
        interrupted: true,
      }),
    );
    agg.addState(item('http://a.test/'));
    // robots.txt and the address guard decided these without a request: their lastFetched is that time.
    agg.addState(item('http://a.test/private', { state: 'ignored', note: 'robots.txt', docBulk: undefined }));
    agg.addState(
      item('http://b.test/', {
        state: 'error',
        errorKind: 'temporary',
        errorCode: 'robots-unavailable',
        docBulk: undefined,
      }),
    );
    agg.addState(
      item('http://10.0.0.1/', {
        state: 'error',
        errorKind: 'permanent',
        errorCode: 'private-address',
        docBulk: undefined,
      }),
    );
    const d = agg.finish();
    assert.equal(d.runs[0]?.interrupted, true);
    assert.deepEqual([d.runs[0]?.errors, d.runs[0]?.upserted, d.runs[0]?.deleted], [3, 5, 2]);
    assert.equal(
      d.fetches.buckets.reduce((n, b) => n + (b.values[0] ?? 0), 0),
      1,
      'one page fetched, not four',
    );
  });

  it('stays bounded: a time histogram coarsens, a counter folds the tail into (other)', () => {
    const h = new TimeHistogram(1, 10);
    for (let i = 0; i < 1000; i++) h.add(new Date(NOW + i * 60_000).toISOString(), 0);
    const buckets = h.toArray();
    assert.ok(buckets.length <= 10, `${buckets.length} buckets`);
    assert.equal(
      buckets.reduce((n, b) => n + (b.values[0] ?? 0), 0),
      1000,
    );
    assert.equal(h.add('not a time', 0), false);
    const c = new BoundedCounter(3);
    for (const k of ['a', 'b', 'c', 'd', 'e', 'a']) c.add(k);
    assert.deepEqual(c.top(), [
      ['(other)', 2],
      ['a', 2],
      ['b', 1],
      ['c', 1],
    ]);
    // A table of the first rows says how many reasons it left out, and how many URLs they hold.
    const reasons = new BoundedCounter();
    for (const [k, n] of [
      ['x', 5],
      ['robots.txt: Disallow: /a', 1],
      ['robots.txt: Disallow: /b', 1],
      ['y', 3],
    ] as const)
      reasons.add(k, n);
    assert.deepEqual(reasons.topAndRest(3), [
      ['x', 5],
      ['y', 3],
      ['(2 more)', 2],
    ]);
    assert.deepEqual(reasons.topAndRest(4), reasons.top());
  });

  it('names skip reasons without URLs', () => {
    assert.equal(skipReason('redirect to http://x.test/a not followed'), 'redirect to … not followed');
    assert.equal(skipReason(null), '(no reason recorded)');
  });
});
