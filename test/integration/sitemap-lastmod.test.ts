/**
 * Sitemap dates (change-hints.ts): a known page that a sitemap lists with a `<lastmod>` after the
 * sitemap's previous read is fetched again by the next refresh cycle, not `refresh.maxAge` later;
 * a sitemap index's dates do the same for its child sitemaps; a sitemap that dates every entry
 * with the time it is generated is not believed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { crawl, documents, openSession, planRefresh, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';
import { startSiteServer } from '../helpers/site-server.ts';

const HOUR = 3_600_000;
const page = (title: string, text: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${text}</p></body></html>`;
const urlset = (entries: [string, string | null][]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries
    .map(([loc, lastmod]) => `<url><loc>${loc}</loc>${lastmod ? `<lastmod>${lastmod}</lastmod>` : ''}</url>`)
    .join('')}</urlset>`;
const xml = (body: string | (() => string)) => ({
  handler: (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'application/xml' });
    res.end(typeof body === 'string' ? body : body());
  },
});

describe('sitemap lastmod: known pages listed as changed are refreshed early (change-hints.ts)', () => {
  const env = useEmulatorAndSite();

  it('a page whose lastmod moves past the last read is fetched by the next cycle; the others wait', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-lastmod-'));
    const file = (name: string, html: string, at: Date) => {
      writeFileSync(join(dir, name), html);
      utimesSync(join(dir, name), at, at);
    };
    const old = new Date('2026-01-01T00:00:00Z');
    for (const p of ['a', 'b', 'c']) file(`${p}.html`, page(`Page ${p}`, `first text of ${p}`), old);
    const files = await startSiteServer({ root: dir });
    const u = (p: string) => `${files.url}${p}`;
    const dates: Record<string, string> = { a: '2026-01-01', b: '2026-01-01', c: '2026-01-01' };
    files.route(
      '/sitemap.xml',
      xml(() => urlset(['a', 'b', 'c'].map((p) => [u(`/${p}.html`), dates[p] ?? null]))),
    );
    files.route('/robots.txt', { status: 404, body: '' });
    const count = (p: string) => files.requests.filter((r) => r.path === p).length;
    try {
      const config = parseConfig({
        name: uniqueCrawlName('lastmod'),
        startUrls: [u('/a.html')],
        sitemaps: [u('/sitemap.xml')],
        discovery: false,
        fetch: { allowPrivateNetworks: true },
        refresh: { maxAge: '48h' },
      });
      const start = Date.now();
      await crawl(await openSession(config));
      assert.deepEqual(
        ['a', 'b', 'c'].map((p) => count(`/${p}.html`)),
        [1, 1, 1],
      );

      // An hour later b changes, and the sitemap says so; c's date moves too, but its content
      // does not (a conditional refetch answers 304).
      const changedAt = new Date(start + HOUR);
      file('b.html', page('Page b', 'second text of b'), changedAt);
      dates.b = changedAt.toISOString();
      dates.c = changedAt.toISOString();
      // The discovery cycle two hours on reads the sitemap again: it leaves hints, fetches nothing.
      await crawl(await openSession(config, { now: new Date(start + 2 * HOUR) }));
      assert.deepEqual(
        ['a', 'b', 'c'].map((p) => count(`/${p}.html`)),
        [2, 1, 1],
        'the start URL is fetched again by discovery; the pages wait for the refresh cycle',
      );
      assert.equal(count('/sitemap.xml'), 2);

      const cycle = await openSession(config, { now: new Date(start + 3 * HOUR) });
      const plan = await planRefresh(cycle);
      assert.deepEqual(plan.map((p) => p.url).sort(), [u('/b.html'), u('/c.html')]);
      for (const p of plan) assert.match(p.reason, /listed as changed at .* by .*\/sitemap\.xml/, p.url);

      await refresh(cycle);
      assert.deepEqual(
        ['a', 'b', 'c'].map((p) => count(`/${p}.html`)),
        [2, 2, 2],
        'b and c are fetched again, 45 hours before their refresh time',
      );
      const cRefetch = files.requests.filter((r) => r.path === '/c.html').at(-1);
      assert.ok(cRefetch?.headers['if-none-match'], 'the refetch is conditional on the kept validators');
      assert.equal(cRefetch?.status, 304);
      const docs = new Map((await collect(documents(cycle))).map((d) => [d.url, d]));
      assert.match(String(docs.get(u('/b.html'))?.content), /second text of b/);
      assert.match(String(docs.get(u('/c.html'))?.content), /first text of c/);

      // The next cycles ask nothing more: the refetches answered the hints.
      await refresh(await openSession(config, { now: new Date(start + 4 * HOUR) }));
      await refresh(await openSession(config, { now: new Date(start + 5 * HOUR) }));
      assert.deepEqual(
        ['a', 'b', 'c'].map((p) => count(`/${p}.html`)),
        [2, 2, 2],
      );
      // A date after b's first fetch but before its refetch (the sitemap regenerated late): b was
      // fetched since, nothing is due. Its first fetch's line, judged too, was due and refetched
      // b with that fetch's validators (helper-45's audit).
      dates.b = new Date(start + 2.5 * HOUR).toISOString();
      await crawl(await openSession(config, { now: new Date(start + 5.5 * HOUR) }));
      assert.equal(count('/sitemap.xml'), 3);
      const later = await openSession(config, { now: new Date(start + 6 * HOUR) });
      assert.deepEqual(await planRefresh(later), []);
      await refresh(later);
      assert.deepEqual(
        ['b', 'c'].map((p) => count(`/${p}.html`)),
        [2, 2],
      );
      // A date that comes late: c changed at 4 h, after its refetch at 3 h, but the sitemap read
      // at 5.5 h did not list it yet (regenerated by cron, cached by a CDN). The next read's date
      // is older than the read before it, and still brings c back (it waited for maxAge).
      file('c.html', page('Page c', 'second text of c'), new Date(start + 4 * HOUR));
      dates.c = new Date(start + 4 * HOUR).toISOString();
      await crawl(await openSession(config, { now: new Date(start + 6.5 * HOUR) }));
      const lateCycle = await openSession(config, { now: new Date(start + 7 * HOUR) });
      assert.deepEqual(
        (await planRefresh(lateCycle)).map((p) => p.url),
        [u('/c.html')],
      );
      await refresh(lateCycle);
      assert.equal(count('/c.html'), 3);
      const cDoc = (await collect(documents(lateCycle))).find((d) => d.url === u('/c.html'));
      assert.match(String(cDoc?.content), /second text of c/);
      // …and the pages keep one refresh time: at 2 days past the refetch, each is fetched once.
      await refresh(await openSession(config, { now: new Date(start + 3 * HOUR + 49 * HOUR) }));
      assert.deepEqual(
        ['b', 'c'].map((p) => count(`/${p}.html`)),
        [3, 3],
      );
    } finally {
      await files.close();
    }
  });

  it("a sitemap index's lastmod brings its child sitemap back early, and the child's new pages with it", async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}${p}`;
    let childDate = '2026-01-01';
    let childPages = ['/p1.html'];
    site.route(
      '/index.xml',
      xml(
        () =>
          `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${u('/child.xml')}</loc><lastmod>${childDate}</lastmod></sitemap></sitemapindex>`,
      ),
    );
    site.route(
      '/child.xml',
      xml(() => urlset(childPages.map((p) => [u(p), null]))),
    );
    for (const p of ['/p1.html', '/p2.html', '/home.html']) site.route(p, { body: page(p, `text of ${p}`) });
    site.route('/robots.txt', { status: 404, body: '' });
    const count = (p: string) => site.requests.filter((r) => r.path === p).length;
    const config = parseConfig({
      name: uniqueCrawlName('lastmod-index'),
      startUrls: [u('/home.html')],
      sitemaps: [u('/index.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    assert.equal(count('/child.xml'), 1);

    // Its date unchanged, the child is not read again by the next discovery cycle.
    await crawl(await openSession(config, { now: new Date(start + HOUR) }));
    assert.deepEqual([count('/index.xml'), count('/child.xml')], [2, 1]);

    childPages = ['/p1.html', '/p2.html'];
    childDate = new Date(start + HOUR).toISOString();
    const later = await openSession(config, { now: new Date(start + 2 * HOUR) });
    await crawl(later);
    assert.equal(count('/index.xml'), 3);
    assert.equal(count('/child.xml'), 2, 'the discovery cycle reads the child again: its date moved');
    assert.equal(count('/p2.html'), 1, 'the page the child now lists is found and fetched');
    const states = new Map((await collect(urlStates(later))).map((s) => [s.url as string, s]));
    assert.equal(states.get(u('/p2.html'))?.state, 'indexed');
    assert.equal(count('/p1.html'), 1, 'the page the child listed before waits for its own time');
  });

  it('a sitemap that dates every entry with the time it is generated is not believed', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}${p}`;
    const pages = Array.from({ length: 12 }, (_, i) => `/gen/${i}.html`);
    let clock = Date.now();
    site.route(
      '/generated.xml',
      xml(() => urlset(pages.map((p) => [u(p), new Date(clock).toISOString()]))),
    );
    for (const p of pages) site.route(p, { body: page(p, `text of ${p}`) });
    site.route('/robots.txt', { status: 404, body: '' });
    const count = () => site.requests.filter((r) => r.path.startsWith('/gen/')).length;
    const config = parseConfig({
      name: uniqueCrawlName('lastmod-now'),
      startUrls: [u('/gen/0.html')],
      sitemaps: [u('/generated.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    assert.equal(count(), 12);

    clock = start + 2 * HOUR;
    const later = await openSession(config, { now: new Date(start + 2 * HOUR) });
    await crawl(later);
    await refresh(await openSession(config, { now: new Date(start + 3 * HOUR) }));
    assert.equal(count(), 13, 'only the start URL, fetched again by discovery');
    const states = new Map((await collect(urlStates(later))).map((s) => [s.url as string, s]));
    assert.match(
      String(states.get(u('/generated.xml'))?.note),
      /^urlset: 12 URLs; lastmod not used: 12 of 12 entries say they changed since the last read/,
    );
  });
});
