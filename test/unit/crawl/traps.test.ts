/** scope.traps, pure: repeating segments, path depth, cap admission, the soft-404 fingerprint. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import {
  admitByCaps,
  admitSitemaps,
  capKeys,
  givenBack,
  hasRepeatingSegments,
  pathTrap,
  sitemapCapKey,
  soft404Fingerprint,
} from '../../../shared/crawl/url/traps.ts';
import type { UrlTask } from '../../../shared/types.ts';

const traps = (t: Record<string, unknown> = {}) =>
  parseConfig({ name: 't', startUrls: ['http://x.test/'], scope: { traps: t } }).scope.traps;

/** A new link's task, as the extract stage passes it to the caps. */
const task = (url: string): UrlTask => ({
  url,
  depth: 1,
  queue: 'index_follow',
  index: true,
  follow: true,
  priority: 0,
});

describe('crawler traps', () => {
  const repeats: [string, number, boolean][] = [
    ['/a/b/a/b/a/b/', 2, true],
    ['/a/b/a/b/', 2, false],
    ['/a/a/a', 2, true],
    ['/a/a', 2, false],
    ['/x/a/b/c/a/b/c/a/b/c/y', 2, true],
    ['/2026/11/23/2026/11/24', 2, false],
    ['/a/b/a/b/a/b/', 3, false],
    ['/docs/api/v1/api/v1/', 2, false],
    ['/', 2, false],
  ];
  for (const [path, max, expected] of repeats)
    it(`${path} with maxSegmentRepeats ${max}: ${expected ? 'trap' : 'fine'}`, () =>
      assert.equal(hasRepeatingSegments(path, max), expected));

  it('path depth before repeats; null lifts the depth limit', () => {
    assert.equal(pathTrap('/1/2/3/4/5', traps({ maxPathDepth: 4 })), 'path-too-deep');
    assert.equal(pathTrap('/1/2/3/4/5', traps({ maxPathDepth: null })), null);
    assert.equal(pathTrap(`/${'x/'.repeat(5000)}`, traps({ maxPathDepth: null })), 'repeating-segments');
  });

  it('admits new URLs up to each cap, counting what earlier batches added', () => {
    const t = traps({ maxUrlsPerHost: 3, maxQueryVariantsPerPath: 2 });
    const urls = [
      'http://x.test/c?m=1',
      'http://x.test/c?m=2',
      'http://x.test/c?m=3',
      'http://x.test/a',
      'http://x.test/b',
    ];
    assert.deepEqual(
      capKeys(urls[0]!, t).map((k) => k.reason),
      ['host-cap', 'query-variants'],
    );
    const r = admitByCaps(urls.map(task), new Map([['cap#host#x.test', 1]]), t);
    const q = admitByCaps(urls.slice(0, 3).map(task), new Map(), t);
    assert.deepEqual(
      q.stopped.map((s) => s.reason),
      ['query-variants'],
    );
    assert.deepEqual(
      r.admitted.map((a) => a.url),
      ['http://x.test/c?m=1', 'http://x.test/c?m=2'],
    );
    assert.deepEqual(
      r.stopped.map((s) => [s.task.url, s.reason]),
      [
        ['http://x.test/c?m=3', 'host-cap'], // both caps reached: the first named
        ['http://x.test/a', 'host-cap'],
        ['http://x.test/b', 'host-cap'],
      ],
    );
  });

  it("a URL its path's variants stopped takes no place of its host's, in the batch and after it", () => {
    const t = traps({ maxUrlsPerHost: 4, maxQueryVariantsPerPath: 2 });
    const urls = ['/cal?d=1', '/cal?d=2', '/cal?d=3', '/cal?d=4', '/cal?d=5', '/a', '/b'].map((p) =>
      task(`http://x.test${p}`),
    );
    const r = admitByCaps(urls, new Map(), t);
    assert.deepEqual(
      r.admitted.map((a) => new URL(a.url).pathname + new URL(a.url).search),
      ['/cal?d=1', '/cal?d=2', '/a', '/b'],
    );
    assert.deepEqual(
      r.stopped.map((s) => s.reason),
      ['query-variants', 'query-variants', 'query-variants'],
    );
    // The batch's ADD counted all 7 on the host: the 3 variants give their places back.
    assert.deepEqual([...givenBack(r.stopped, t)], [['cap#host#x.test', -3]]);
    assert.deepEqual([...givenBack(r.stopped, traps({ maxQueryVariantsPerPath: 2 }))], []);
  });

  it('says how far past its cap each stopped URL is, and records no more of them than the cap admits', () => {
    const t = traps({ maxQueryVariantsPerPath: 2 });
    const urls = Array.from({ length: 4 }, (_, i) => task(`http://x.test/c?m=${i}`));
    // Before this batch: 2 admitted and 1 stopped already.
    const r = admitByCaps(urls, new Map([['cap#query#x.test/c', 3]]), t);
    assert.deepEqual(
      r.stopped.map((s) => [s.past, s.recorded]),
      [
        [1, true],
        [2, false],
        [3, false],
        [4, false],
      ],
    );
  });

  it('path parameters are variants of their path, counted with its query strings', () => {
    // `/cart.html;token=<random>` in every link was an endless crawl the cap never counted.
    const t = traps({ maxQueryVariantsPerPath: 2 });
    const urls = [
      'http://x.test/cart;t=1',
      'http://x.test/cart?x=2',
      'http://x.test/cart;t=3',
      'http://x.test/shop;v=1/list',
    ];
    assert.deepEqual(capKeys(urls[0]!, t), [{ key: 'cap#query#x.test/cart', reason: 'query-variants' }]);
    assert.deepEqual(capKeys(urls[3]!, t), [{ key: 'cap#query#x.test/shop/list', reason: 'query-variants' }]);
    assert.deepEqual(capKeys('http://x.test/cart', t), [], 'a bare path is no variant');
    const r = admitByCaps(urls.map(task), new Map(), t);
    assert.deepEqual(
      r.stopped.map((s) => s.task.url),
      ['http://x.test/cart;t=3'],
    );
  });

  it('the soft-404 fingerprint ignores the echoed path and numbers, not the words', () => {
    const a = soft404Fingerprint('Not here', 'We could not find /abc. Request 123.', 'http://x.test/abc');
    const b = soft404Fingerprint('Not here', 'We could not find /zzz-9. Request 456.', 'http://x.test/zzz-9');
    const c = soft404Fingerprint('About', 'About this site.', 'http://x.test/about');
    assert.equal(a, b);
    assert.notEqual(a, c);
  });
});

describe('limits.sitemapsPerSite: sitemaps per host across the crawl', () => {
  const sm = (url: string): UrlTask => ({
    url,
    depth: 0,
    queue: 'user',
    index: false,
    follow: true,
    priority: 0,
    kind: 'sitemap',
  });
  it('admits in order while the host count before the batch plus those admitted is under the limit', () => {
    const a = ['http://a.test/1.xml', 'http://a.test/2.xml', 'http://a.test/3.xml'].map(sm);
    const b = sm('http://b.test/1.xml');
    const before = new Map([[sitemapCapKey('http://a.test/x'), 1]]);
    const r = admitSitemaps([...a, b], before, 2);
    assert.deepEqual(
      r.admitted.map((t) => t.url),
      ['http://a.test/1.xml', 'http://b.test/1.xml'],
    );
    assert.deepEqual(
      r.stopped.map((t) => t.url),
      ['http://a.test/2.xml', 'http://a.test/3.xml'],
    );
    assert.equal(sitemapCapKey('http://a.test:8080/s.xml'), 'cap#sitemaps#a.test:8080');
    assert.deepEqual(admitSitemaps(a, new Map(), 0).admitted, []);
  });
});
