import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { loadConfigFile } from '../../cli/config-file.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { printSummary } from '../../cli/summary.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import { requestCounts, resetRequestCounts } from '../../shared/aws/request-counter.ts';
import { parseConfig } from '../../shared/config.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { startSiteServer } from '../helpers/site-server.ts';

/** crawler-commons fixtures and their expected counts (test/fixtures/sitemaps/SOURCE.txt). */
const CORPUS = join(import.meta.dirname, '../fixtures/sitemaps');
const FIXTURES = JSON.parse(readFileSync(join(CORPUS, 'expected.json'), 'utf8')) as {
  file: string;
  kind: string;
  expected_url_count: number;
}[];

const html = (title: string, body = '') => ({
  body: `<html><head><title>${title}</title></head><body>${title} ${body}<a href="/linked-only.html">more</a></body></html>`,
});

describe('sitemaps and feeds through the pipeline (issue #5 item 10)', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  it('every crawler-commons fixture, fetched as a configured sitemap, lists the URLs expected.json counts', async () => {
    const site = await startSiteServer({ root: CORPUS, routes: { '/': html('Home') } });
    try {
      const config = parseConfig({
        name: uniqueCrawlName('smcorpus'),
        startUrls: [`${site.url}/`],
        discovery: false,
        sitemaps: FIXTURES.map((f) => `${site.url}/${f.file}`),
        fetch: { allowPrivateNetworks: true },
      });
      const session = await openSession(config);

      await crawl(session);

      const states = new Map((await collect(urlStates(session))).map((u) => [u.url as string, u]));
      for (const f of FIXTURES) {
        const state = states.get(`${site.url}/${f.file}`);
        const listed = f.kind.startsWith('sitemapindex') ? 'sitemaps' : 'URLs';
        assert.equal(state?.state, 'followed', f.file);
        assert.match(String(state?.note), new RegExp(`: ${f.expected_url_count} ${listed}$`), f.file);
      }
      // The fixtures list other hosts: scope keeps them out of the frontier, nothing leaves loopback.
      assert.deepEqual(
        [...states.keys()].filter((u) => !u.startsWith(site.url)),
        [],
      );
      assert.equal(site.requests.filter((r) => r.path === '/linked-only.html').length, 0);
    } finally {
      await site.close();
    }
  });

  it('discovery: false fetches the start URL and the entries of sitemaps (robots.txt, index, .xml.gz, text) and feeds, no links', async () => {
    const site = await startSiteServer();
    const u = (p: string) => `${site.url}${p}`;
    const urlset = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <url><loc>${u('/a.html')}</loc></url><url><loc>${u('/b.html')}</loc></url></urlset>`;
    const routes = {
      '/robots.txt': {
        headers: { 'Content-Type': 'text/plain' },
        body: `User-agent: *\nAllow: /\nSitemap: ${u('/sitemap-index.xml')}\n`,
      },
      '/sitemap-index.xml': {
        headers: { 'Content-Type': 'application/xml' },
        body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${u('/sitemaps/pages.xml.gz')}</loc></sitemap><sitemap><loc>${u('/sitemaps/more.txt')}</loc></sitemap></sitemapindex>`,
      },
      '/sitemaps/pages.xml.gz': { headers: { 'Content-Type': 'application/gzip' }, body: gzipSync(urlset) },
      '/sitemaps/more.txt': { headers: { 'Content-Type': 'text/plain' }, body: `${u('/c.html')}\n` },
      '/feed.rss': {
        headers: { 'Content-Type': 'application/rss+xml' },
        body: `<rss version="2.0"><channel><link>${u('/')}</link><item><link>${u('/d.html')}</link></item></channel></rss>`,
      },
      '/atom.xml': {
        headers: { 'Content-Type': 'application/atom+xml' },
        body: `<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="${u('/e.html')}"/></entry></feed>`,
      },
      '/': html('Home'),
      ...Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((p) => [`/${p}.html`, html(`Page ${p}`)])),
      '/linked-only.html': html('Linked only'),
    };
    for (const [path, route] of Object.entries(routes)) site.route(path, route);
    try {
      const config = parseConfig({
        name: uniqueCrawlName('smsite'),
        startUrls: [u('/')],
        discovery: false,
        sitemaps: [u('/feed.rss'), u('/atom.xml')],
        fetch: { allowPrivateNetworks: true },
      });
      const session = await openSession(config);

      await crawl(session);

      const docs = await collect(documents(session));
      assert.deepEqual(
        docs.map((d) => [d.url, d.title]),
        [['/', 'Home'], ...['a', 'b', 'c', 'd', 'e'].map((p) => [`/${p}.html`, `Page ${p}`])].map(
          ([p, t]) => [u(p!), t],
        ),
      );
      assert.equal(site.requests.filter((r) => r.path === '/linked-only.html').length, 0);
      const states = new Map((await collect(urlStates(session))).map((s) => [s.url as string, s]));
      assert.equal(states.get(u('/sitemap-index.xml'))?.note, 'sitemapindex: 2 sitemaps');
      assert.equal(states.get(u('/sitemaps/pages.xml.gz'))?.note, 'urlset: 2 URLs');
      assert.equal(states.get(u('/sitemaps/more.txt'))?.note, 'text: 1 URLs');
      assert.equal(states.get(u('/feed.rss'))?.note, 'rss: 1 URLs');
      assert.equal(states.get(u('/atom.xml'))?.note, 'atom: 1 URLs');

      // Three days later the refresh cycle reads every sitemap and feed again; none is dropped as
      // out of scope (`.xml` is an ignored extension for links, not for sitemaps).
      const later = await openSession(config, { now: new Date(Date.now() + 3 * 86_400_000) });
      const before = site.requests.filter((r) => r.path === '/sitemap-index.xml').length;
      await refresh(later);
      assert.equal(site.requests.filter((r) => r.path === '/sitemap-index.xml').length, before + 1);
      const after = new Map((await collect(urlStates(later))).map((s) => [s.url as string, s]));
      for (const [url, state] of states) {
        if (!String(state.note ?? '').match(/^(sitemapindex|urlset|text|rss|atom):/)) continue;
        assert.equal(after.get(url)?.note, state.note, url);
      }
      assert.equal((await collect(documents(later))).length, docs.length);
    } finally {
      await site.close();
    }
  });

  it('a feed or sitemap reached as a page (a start URL, a link) is read as one; other XML is a document', async () => {
    const site = await startSiteServer();
    const u = (p: string) => `${site.url}${p}`;
    const routes = {
      '/': html(
        'Home',
        '<a href="/feed">RSS</a> <a href="/data">data</a> <a href="/index-of-sitemaps">all</a>',
      ),
      '/feed': {
        headers: { 'Content-Type': 'application/rss+xml; charset=utf-8' },
        body: `<?xml version="1.0"?><rss version="2.0"><channel><item><link>${u('/r1.html')}</link></item><item><link>${u('/r2.html')}</link></item></channel></rss>`,
      },
      '/news': {
        headers: { 'Content-Type': 'application/atom+xml' },
        body: `<!-- Atom --><feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="${u('/n1.html')}"/></entry></feed>`,
      },
      '/index-of-sitemaps': {
        headers: { 'Content-Type': 'text/xml' },
        body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${u('/pages-sitemap')}</loc></sitemap></sitemapindex>`,
      },
      '/pages-sitemap': {
        headers: { 'Content-Type': 'application/xml' },
        body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${u('/s1.html')}</loc></url></urlset>`,
      },
      '/data': {
        headers: { 'Content-Type': 'application/xml' },
        body: '<?xml version="1.0"?><catalog><book><title>An XML Book</title><author>Someone</author></book></catalog>',
      },
      ...Object.fromEntries(['r1', 'r2', 'n1', 's1'].map((p) => [`/${p}.html`, html(`Page ${p}`)])),
      '/linked-only.html': html('Linked only'),
    };
    for (const [path, route] of Object.entries(routes)) site.route(path, route);
    try {
      const crawlFrom = async (startUrls: string[], discovery: boolean) => {
        const config = parseConfig({
          name: uniqueCrawlName('smpage'),
          startUrls,
          discovery,
          fetch: { allowPrivateNetworks: true },
        });
        const session = await openSession(config);
        await crawl(session);
        const states = new Map((await collect(urlStates(session))).map((s) => [s.url as string, s]));
        return { states, docs: await collect(documents(session)) };
      };

      const { states, docs } = await crawlFrom([u('/'), u('/news')], true);
      assert.equal(states.get(u('/feed'))?.state, 'followed');
      assert.equal(states.get(u('/feed'))?.note, 'rss: 2 URLs');
      assert.equal(states.get(u('/news'))?.note, 'atom: 1 URLs');
      assert.equal(states.get(u('/index-of-sitemaps'))?.note, 'sitemapindex: 1 sitemaps');
      assert.equal(states.get(u('/pages-sitemap'))?.note, 'urlset: 1 URLs');
      const byUrl = new Map(docs.map((d) => [d.url as string, d]));
      for (const p of ['r1', 'r2', 'n1', 's1'])
        assert.equal(byUrl.get(u(`/${p}.html`))?.title, `Page ${p}`, p);
      for (const p of ['/feed', '/news', '/index-of-sitemaps', '/pages-sitemap'])
        assert.ok(!byUrl.has(u(p)), p);
      // Other XML is a document of its text, not of its markup.
      assert.equal(byUrl.get(u('/data'))?.content, 'An XML Book Someone');

      // discovery: false follows no links, but a feed given as a start URL is read.
      const lone = await crawlFrom([u('/news')], false);
      assert.deepEqual(
        lone.docs.map((d) => d.url),
        [u('/n1.html')],
      );
    } finally {
      await site.close();
    }
  });

  it("limits.sitemapsPerSite counts a site's sitemaps across the crawl: robots.txt lines and every index's children", async () => {
    const site = await startSiteServer();
    const u = (p: string) => `${site.url}${p}`;
    const index = (children: string[]) => ({
      headers: { 'Content-Type': 'application/xml' },
      body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${children.map((c) => `<sitemap><loc>${u(c)}</loc></sitemap>`).join('')}</sitemapindex>`,
    });
    const urlset = (page: string) => ({
      headers: { 'Content-Type': 'application/xml' },
      body: `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${u(page)}</loc></url></urlset>`,
    });
    const children = ['/a1.xml', '/a2.xml', '/b1.xml', '/b2.xml'];
    site.route('/robots.txt', {
      headers: { 'Content-Type': 'text/plain' },
      body: `User-agent: *\nSitemap: ${u('/index-a.xml')}\nSitemap: ${u('/index-b.xml')}\n`,
    });
    site.route('/index-a.xml', index(['/a1.xml', '/a2.xml']));
    site.route('/index-b.xml', index(['/b1.xml', '/b2.xml']));
    for (const c of children) site.route(c, urlset(`/${c.slice(1, 3)}.html`));
    site.route('/', html('Home'));
    try {
      const config = parseConfig({
        name: uniqueCrawlName('smcap'),
        startUrls: [u('/')],
        discovery: false,
        fetch: { allowPrivateNetworks: true },
        limits: { sitemapsPerSite: 3 },
      });
      const session = await openSession(config);
      for (const k of Object.keys(stageStats)) delete stageStats[k];
      await crawl(session);
      const read = new Set(site.requests.filter((r) => r.path.endsWith('.xml')).map((r) => r.path));
      // Two from robots.txt, then one child of either index: three sitemaps for the whole site.
      assert.equal(read.size, 3, [...read].join(' '));
      assert.ok(read.has('/index-a.xml') && read.has('/index-b.xml'));
      const states = await collect(urlStates(session));
      const stopped = states.filter((s) =>
        /limits\.sitemapsPerSite \(3\) for this site/.test(String(s.note)),
      );
      assert.equal(stopped.length, 3, JSON.stringify(stopped));
      for (const s of stopped) assert.equal(s.state, 'ignored');
      // The crawl summary counts each (trap-gate.ts → the extract stage's stats).
      assert.equal(stageStats['rejected:limit-sitemaps-per-site'], 3);
    } finally {
      await site.close();
    }
  });

  it('the demo site: the crawl summary reports S3 PUTs per indexed page, at most 0.1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-demo-'));
    const site = await startSiteServer({ root: dir });
    try {
      const counts = generateDemoSite(dir, { baseUrl: site.url });
      const demo = loadConfigFile(join(import.meta.dirname, '../../demo/trawl.json'));
      const config = { ...demo, name: uniqueCrawlName('demo'), startUrls: [`${site.url}/`] };
      const session = await openSession(config);
      resetRequestCounts();
      for (const k of Object.keys(stageStats)) delete stageStats[k];

      await crawl(session);

      const lines: string[] = [];
      const write = process.stdout.write;
      process.stdout.write = ((s: string) => lines.push(s) > 0) as typeof process.stdout.write;
      try {
        printSummary({
          kind: 'crawl',
          config,
          session,
          seconds: 1,
          stats: stageStats,
          counts: requestCounts,
        });
      } finally {
        process.stdout.write = write;
      }
      const line = lines.find((l) => l.includes('S3 PUTs per indexed page')) ?? '';
      const ratio = Number(/S3 PUTs per indexed page: ([\d.]+)/.exec(line)?.[1]);
      const puts = requestCounts.calls['S3.PutObject'] ?? 0;
      assert.equal(stageStats.indexed, counts.expectedIndexed);
      assert.ok(ratio <= 0.1, line);
      assert.equal(ratio.toFixed(3), (puts / counts.expectedIndexed).toFixed(3));
    } finally {
      await site.close();
    }
  });
});
