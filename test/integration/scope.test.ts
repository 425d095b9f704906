/**
 * Issue #3 end to end: one loopback site (test/helpers/scope-site.ts) crawled once per scope
 * setting through cli/session.ts on the emulator. Each test checks what the server was asked for,
 * what `documents()` / `urlStates()` hold, and the crawl's `rejected:<reason>` counters.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_IGNORED_EXTENSIONS } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator } from '../helpers/emulator.ts';
import {
  type CrawlResult,
  crawlSite,
  LONG_PATH,
  pathsOf,
  rejections,
  type ScopeSites,
  startScopeSites,
} from '../helpers/scope-site.ts';

const sorted = (paths: string[]) => [...paths].sort();

describe('crawl scope end to end (one crawl per setting)', () => {
  let emu: TestEmulator;
  let sites: ScopeSites;

  before(async () => {
    emu = await startTestEmulator();
    sites = await startScopeSites();
  });
  after(async () => {
    await sites?.close();
    await emu?.stop();
  });

  describe('defaults with maxDepth 2, maxUrlLength 200 and "log" added to ignoredExtensions', () => {
    let r: CrawlResult;
    before(async () => {
      r = await crawlSite(sites, '/', {
        scope: { maxDepth: 2, maxUrlLength: 200, ignoredExtensions: [...DEFAULT_IGNORED_EXTENSIONS, 'log'] },
      });
    });
    it('fetches exactly the in-scope pages, each once', () => {
      assert.deepEqual(sorted(r.seenA), ['/', '/a.html', '/d1.html', '/d2.html']);
      assert.deepEqual(pathsOf(sites, r.urls), ['/', '/a.html', '/d1.html', '/d2.html']);
      assert.ok(r.urls.every((u) => u.state === 'indexed'));
    });
    it('sameHostAndScheme: site B (127.0.0.1 on another port) is never asked for anything', () => {
      assert.deepEqual(sites.b.requests, []);
    });
    it('ignoredExtensions: png, css, js and log links are never requested (seed 004)', () => {
      for (const p of ['/img.png', '/style.css', '/app.js', '/notes.log']) assert.ok(!r.seenA.includes(p), p);
    });
    it('maxUrlLength and schemes: the long link and the ftp link are not requested (seed 002)', () => {
      assert.ok(!r.seenA.includes(LONG_PATH));
      assert.ok(r.seenA.every((p) => p.length < 200));
    });
    it('maxDepth: depths 0..2 are recorded on the documents, depth 3 is not fetched (seed 003)', () => {
      const depths = Object.fromEntries(r.docs.map((d) => [String(d.url).replace(sites.a.url, ''), d.depth]));
      assert.deepEqual(depths, { '/': 0, '/a.html': 1, '/d1.html': 1, '/d2.html': 2 });
      assert.ok(!r.seenA.includes('/d3.html'));
    });
    it('the crawl stats count every rejected link by reason', () => {
      assert.deepEqual(rejections(r.stats), {
        offsite: 1,
        'scheme-not-allowed': 1,
        'ignored-extension': 4,
        'url-too-long': 1,
        'max-depth': 1,
      });
      assert.equal(r.stats.discovered, 3);
    });
  });

  it('sameHostAndScheme false: the same host name on another port is followed, another host name is not', async () => {
    const r = await crawlSite(sites, '/offsite.html', { scope: { sameHostAndScheme: false } });
    assert.deepEqual(sorted(r.seenB), ['/b.html']);
    assert.deepEqual(sorted(r.seenA), ['/a.html', '/offsite.html']);
    assert.ok(r.docs.some((d) => d.url === `${sites.b.url}/b.html`));
    assert.deepEqual(rejections(r.stats), { offsite: 1 });
  });

  it('followOffsite: links to another host name are followed too (seed 002)', async () => {
    const r = await crawlSite(sites, '/offsite.html', { scope: { followOffsite: true } });
    assert.deepEqual(sorted(r.seenB), ['/b.html', '/b2.html']);
    const b2 = sites.b.requests.find((q) => q.path === '/b2.html');
    assert.equal(b2?.headers.host, `offsite.test:${sites.b.port}`);
    assert.ok(r.docs.some((d) => d.url === `http://offsite.test:${sites.b.port}/b2.html`));
    assert.deepEqual(rejections(r.stats), {});
  });

  it('underStartPath: the start directory and below, not /docs-old/ nor the parent (seed 002)', async () => {
    const r = await crawlSite(sites, '/docs/index.html', { scope: { underStartPath: true } });
    assert.deepEqual(sorted(r.seenA), ['/docs/a.html', '/docs/index.html', '/docs/sub/b.html']);
    assert.deepEqual(pathsOf(sites, r.docs), ['/docs/a.html', '/docs/index.html', '/docs/sub/b.html']);
    assert.deepEqual(rejections(r.stats), { 'outside-start-path': 3 });
  });

  it('schemes ["https"]: the http start URL is fetched, none of its http links', async () => {
    const r = await crawlSite(sites, '/offsite.html', { scope: { schemes: ['https'], followOffsite: true } });
    assert.deepEqual(r.seenA, ['/offsite.html']);
    assert.deepEqual(r.seenB, []);
    assert.deepEqual(pathsOf(sites, r.urls), ['/offsite.html']);
    assert.deepEqual(rejections(r.stats), { 'scheme-not-allowed': 3 });
  });

  it('followQueryStrings false: links with a query string are not followed (seed 002)', async () => {
    const r = await crawlSite(sites, '/query/index.html', { scope: { followQueryStrings: false } });
    assert.deepEqual(sorted(r.seenA), ['/query/index.html', '/query/plain.html']);
    assert.ok(r.seenA.every((p) => !p.includes('?')));
    assert.deepEqual(rejections(r.stats), { 'query-string': 2 });
  });

  it('keepQueryParams ["id"]: the calendar trap collapses to one page (seed 004)', async () => {
    const r = await crawlSite(sites, '/query/index.html', { scope: { keepQueryParams: ['id'] } });
    assert.deepEqual(
      r.seenA.filter((p) => p.startsWith('/cal')),
      ['/cal?id=7'],
    );
    assert.deepEqual(sorted(r.seenA), [
      '/cal?id=7',
      '/query/index.html',
      '/query/page.html',
      '/query/plain.html',
    ]);
    assert.deepEqual(pathsOf(sites, r.urls), [
      '/cal?id=7',
      '/query/index.html',
      '/query/page.html',
      '/query/plain.html',
    ]);
    assert.ok(r.urls.every((u) => u.state === 'indexed'));
  });

  it('mustContain / mustNotContain: substrings of the URL without its #fragment (seed 004)', async () => {
    const r = await crawlSite(sites, '/filter/index.html', {
      scope: { mustContain: ['/shop/'], mustNotContain: ['/print/'] },
    });
    assert.deepEqual(sorted(r.seenA), ['/filter/index.html', '/filter/shop/a.html', '/filter/shop/b.cgi']);
    assert.deepEqual(rejections(r.stats), { 'must-contain': 3, 'must-not-contain': 1 });
  });

  it('include / exclude: regular expressions on the normalized URL (seed 003)', async () => {
    const r = await crawlSite(sites, '/filter/index.html', {
      scope: { include: ['/filter/(shop|blog)/'], exclude: ['\\.cgi$', '/print/'] },
    });
    assert.deepEqual(sorted(r.seenA), [
      '/filter/blog/x.html',
      '/filter/blog/y.html',
      '/filter/index.html',
      '/filter/shop/a.html',
    ]);
    assert.deepEqual(rejections(r.stats), { excluded: 2, 'not-included': 1 });
  });
});
