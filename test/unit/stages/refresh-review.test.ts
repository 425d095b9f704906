/**
 * What a changed refresh policy does to a line due later (refresh-review.ts judgeLine): due now,
 * due at an earlier time, or left alone. Pure: a config, a line and a clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import { createUrlDecider } from '../../../shared/crawl/rules/decide.ts';
import {
  judgeLine,
  NO_CHANGES,
  type PolicyChanges,
  refreshPolicy,
  reviewContext,
} from '../../../shared/stages/refresh-review.ts';
import type { UrlItem } from '../../../shared/types.ts';

const DAY = 86_400_000;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const base: CrawlConfigInput = { name: 'review', startUrls: ['https://example.com/'] };

function judge(
  input: Partial<CrawlConfigInput>,
  line: Partial<UrlItem>,
  now: number,
  changes: Partial<PolicyChanges> = {},
) {
  const config = parseConfig({ ...base, ...input });
  const decider = createUrlDecider(config);
  const starts = new Set(['https://example.com/']);
  const full: UrlItem = {
    url: 'https://example.com/docs/a',
    state: 'indexed',
    depth: 1,
    queue: 'index_follow',
    lastFetched: new Date(T0).toISOString(),
    nextRefreshAt: new Date(T0 + 30 * DAY).toISOString(),
    docBulk: 'docs/b1',
    ...line,
  };
  return judgeLine(full, reviewContext(config, decider, starts, now, now, { ...NO_CHANGES, ...changes }));
}

describe('a changed refresh policy (refresh-review.ts)', () => {
  it('leaves a line alone under the policy that fixed its time', () => {
    assert.equal(judge({ refresh: { maxAge: '30d' } }, {}, T0 + DAY), null);
  });

  it('makes a page due now when its interval under the lowered maxAge has ended', () => {
    assert.deepEqual(judge({ refresh: { maxAge: '2d' } }, {}, T0 + 3 * DAY), {
      due: new Date(T0 + 2 * DAY).toISOString(),
    });
  });

  it('moves a page to the earlier time when the lowered interval ends later than now', () => {
    assert.deepEqual(judge({ refresh: { maxAge: '5d' } }, {}, T0 + DAY), {
      moveTo: new Date(T0 + 5 * DAY).toISOString(),
    });
  });

  it('does not move a page by less than one refresh cycle', () => {
    // 30 days less 30 minutes: the cycle for a 29.98-day maxAge is hourly.
    const maxAge = `${30 * 24 * 60 - 30}m`;
    assert.equal(judge({ refresh: { maxAge } }, {}, T0 + DAY), null);
  });

  it('never moves a page later: a raised maxAge waits for the page to be refreshed', () => {
    assert.equal(judge({ refresh: { maxAge: '60d' } }, {}, T0 + DAY), null);
  });

  it('makes a page the scope now rejects due now, whatever its time', () => {
    const verdict = judge({ refresh: { maxAge: '30d' }, scope: { exclude: ['/docs/'] } }, {}, T0 + DAY);
    assert.deepEqual(verdict, { due: new Date(T0 + DAY).toISOString() });
  });

  it('makes an indexed page a rule now keeps out of the index due now; a page without a document waits', () => {
    const rules: CrawlConfigInput['rules'] = [
      { match: { path: '/docs/' }, actions: ['noIndex', 'follow', 'accept'] },
    ];
    const now = T0 + DAY;
    assert.deepEqual(judge({ refresh: { maxAge: '30d' }, rules }, {}, now), {
      due: new Date(now).toISOString(),
    });
    assert.equal(
      judge({ refresh: { maxAge: '30d' }, rules }, { docBulk: null, state: 'followed' }, now),
      null,
    );
  });

  it("uses a rule's refresh bounds: the line's adaptive interval is capped at the new max", () => {
    const rules: CrawlConfigInput['rules'] = [
      { match: { path: '/docs/' }, actions: ['index', 'follow', { refresh: { min: '1h', max: '3d' } }] },
    ];
    const line = { refreshInterval: 20 * DAY, nextRefreshAt: new Date(T0 + 20 * DAY).toISOString() };
    assert.deepEqual(judge({ refresh: { maxAge: '30d' }, rules }, line, T0 + DAY), {
      moveTo: new Date(T0 + 3 * DAY).toISOString(),
    });
  });

  it('leaves a line due inside the cycle window to the cycle itself', () => {
    assert.equal(
      judge({ refresh: { maxAge: '2d' } }, { nextRefreshAt: new Date(T0).toISOString() }, T0 + DAY),
      null,
    );
  });

  it('fingerprints scope and refresh times, not fetch settings', () => {
    const a = refreshPolicy(parseConfig(base));
    assert.equal(refreshPolicy(parseConfig({ ...base, fetch: { concurrency: 4 } })), a);
    assert.notEqual(refreshPolicy(parseConfig({ ...base, refresh: { maxAge: '1d' } })), a);
    assert.notEqual(refreshPolicy(parseConfig({ ...base, scope: { exclude: ['/x/'] } })), a);
  });

  describe('a URL fetched and skipped is tried again when the change may lift its reason', () => {
    const now = T0 + DAY;
    const month: Partial<CrawlConfigInput> = { refresh: { maxAge: '30d' } };
    const dueNow = { due: new Date(now).toISOString() };
    const skipped = (note: string): Partial<UrlItem> => ({ state: 'ignored', docBulk: null, note });
    const widened = { widened: 'fetch.respectRobotsTxt turned off', recorded: true };
    const redocument = { redocument: 'scope.ignoredMimeTypes changed', recorded: true };

    for (const note of [
      'robots.txt',
      'mime-type video/mp4',
      'redirect target rejected (exclude): https://example.com/x',
    ])
      it(`"${note}": due now after a widening or a document change, not after a narrowing`, () => {
        assert.deepEqual(judge(month, skipped(note), now, widened), dueNow);
        assert.deepEqual(judge(month, skipped(note), now, redocument), dueNow);
        assert.equal(judge(month, skipped(note), now), null);
      });

    it('a followed redirect, or a URL a trap cap stopped before any fetch, waits', () => {
      assert.equal(judge(month, skipped('redirected to https://example.com/b'), now, widened), null);
      assert.equal(
        judge(month, { ...skipped('trap: more than 5 query variants'), lastFetched: null }, now, widened),
        null,
      );
    });

    it('a page a noIndex rule followed only is due once the rule no longer says noIndex; a noindex page is not', () => {
      const rules: CrawlConfigInput['rules'] = [{ match: { path: '/docs/' }, actions: ['noIndex'] }];
      const ruled: Partial<UrlItem> = {
        state: 'followed',
        docBulk: null,
        index: false,
        note: 'rule: noIndex',
      };
      assert.equal(judge({ ...month, rules }, ruled, now), null);
      assert.deepEqual(judge(month, ruled, now), dueNow);
      // The config said index, the page said noindex: a narrowing change reads it again for nothing.
      const narrowed = { described: 'scope.exclude gained /x/' };
      const own = (note: string): Partial<UrlItem> => ({
        state: 'followed',
        docBulk: null,
        index: true,
        note,
      });
      assert.equal(judge(month, own('noindex (meta robots: noindex)'), now, narrowed), null);
      // One that deferred to its canonical: so it stays while the option holds; turned off, it is due.
      const copy = own('canonical is https://example.com/b (extract.honorCanonical)');
      assert.equal(judge({ ...month, extract: { honorCanonical: true } }, copy, now, narrowed), null);
      assert.deepEqual(judge(month, copy, now, narrowed), dueNow);
    });

    it('a page a noIndex rule skipped is due once the rule no longer says noIndex', () => {
      const rules: CrawlConfigInput['rules'] = [{ match: { path: '/docs/' }, actions: ['noIndex'] }];
      const line = skipped('rule: noIndex');
      assert.equal(judge({ ...month, rules }, line, now), null);
      assert.deepEqual(judge(month, line, now), dueNow);
    });

    it('a redirect chain cut at fetch.maxRedirects is due after a widening only', () => {
      const cut: Partial<UrlItem> = { state: 'error', docBulk: null, errorCode: 'too-many-redirects' };
      assert.deepEqual(
        judge(month, cut, now, { widened: 'fetch.maxRedirects raised', recorded: true }),
        dueNow,
      );
      assert.equal(judge(month, cut, now, redocument), null);
      assert.equal(judge(month, { ...cut, errorCode: 'http-404' }, now, widened), null);
    });
  });
});

describe('sitemap dates (change-hints.ts) in a review', () => {
  const config = parseConfig({ ...base, refresh: { maxAge: '30d' } });
  const decider = createUrlDecider(config);
  const line: UrlItem = {
    url: 'https://example.com/docs/a',
    state: 'indexed',
    depth: 1,
    queue: 'index_follow',
    lastFetched: new Date(T0).toISOString(),
    nextRefreshAt: new Date(T0 + 30 * DAY).toISOString(),
  };
  const hinted = (changedAt: number) =>
    new Map([[line.url, { url: line.url, changedAt: new Date(changedAt).toISOString(), sitemap: 's' }]]);
  const ctx = (hints: ReturnType<typeof hinted>, policy = false) =>
    reviewContext(config, decider, new Set(), T0 + 2 * DAY, T0 + 2 * DAY, policy ? NO_CHANGES : null, hints);

  it('makes a line fetched before the date due now, whatever the policy', () => {
    const due = { due: new Date(T0 + 2 * DAY).toISOString() };
    assert.deepEqual(judgeLine(line, ctx(hinted(T0 + DAY))), due);
    assert.deepEqual(judgeLine(line, ctx(hinted(T0 + DAY), true)), due);
  });

  it('leaves a line fetched at or after the date, and a line of another URL', () => {
    assert.equal(judgeLine(line, ctx(hinted(T0))), null);
    assert.equal(judgeLine({ ...line, url: 'https://example.com/docs/b' }, ctx(hinted(T0 + DAY))), null);
  });

  it('without a changed policy, judges nothing but the dates (a line the rules would move stays)', () => {
    const lowered = parseConfig({ ...base, refresh: { maxAge: '2d' } });
    const c = reviewContext(lowered, createUrlDecider(lowered), new Set(), T0 + 3 * DAY, T0 + 3 * DAY, null);
    assert.equal(judgeLine(line, c), null);
  });
});
