/**
 * Sitemaps as discovery reads them (helper-39's audit, 2026-11-28): moved sitemaps, an index's
 * known children, sitemaps on another host of the crawl, a sitemap cut at fetch.maxBytes, a
 * configured sitemap written in another form, and refreshes with discovery off.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

const HOUR = 3_600_000;
const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title} text</p></body></html>`;
const urlset = (locs: string[]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((l) => `<url><loc>${l}</loc></url>`)
    .join('')}</urlset>`;
const xml = (body: () => string) => ({
  handler: (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'application/xml' });
    res.end(body());
  },
});

describe('sitemaps in discovery: moved, known children, other hosts, cut, another form', () => {
  const env = useEmulatorAndSite();

  it('a sitemap that redirects (config and robots.txt) is read where it went', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/mv${p}`;
    site.route('/robots.txt', { body: `User-agent: *\nAllow: /\nSitemap: ${u('/robots-sm.xml')}\n` });
    site.route('/mv/config-sm.xml', {
      status: 302,
      headers: { Location: u('/real/config-sm.xml') },
      body: '',
    });
    site.route('/mv/robots-sm.xml', {
      status: 301,
      headers: { Location: u('/real/robots-sm.xml') },
      body: '',
    });
    site.route(
      '/mv/real/config-sm.xml',
      xml(() => urlset([u('/c1')])),
    );
    site.route(
      '/mv/real/robots-sm.xml',
      xml(() => urlset([u('/r1')])),
    );
    for (const p of ['/', '/c1', '/r1']) site.route(`/mv${p}`, { body: page(p) });
    try {
      const session = await openSession(
        parseConfig({
          name: uniqueCrawlName('sm-moved'),
          startUrls: [u('/')],
          sitemaps: [u('/config-sm.xml')],
          discovery: false,
          fetch: { allowPrivateNetworks: true },
        }),
      );
      await crawl(session);
      const states = new Map((await collect(urlStates(session))).map((s) => [s.url as string, s]));
      assert.equal(states.get(u('/config-sm.xml'))?.note, `redirected to ${u('/real/config-sm.xml')}`);
      assert.equal(states.get(u('/real/config-sm.xml'))?.note, 'urlset: 1 URLs');
      // `trawl urls` names what was read as a sitemap (`trawl explain --state` then judges it as one).
      assert.equal(states.get(u('/real/config-sm.xml'))?.kind, 'sitemap');
      assert.equal(states.get(u('/c1'))?.kind, undefined);
      assert.equal(states.get(u('/real/robots-sm.xml'))?.note, 'urlset: 1 URLs');
      assert.deepEqual([states.get(u('/c1'))?.state, states.get(u('/r1'))?.state], ['indexed', 'indexed']);
    } finally {
      site.route('/robots.txt', null);
    }
  });

  it("a discovery cycle reads an index's known children again: undated ones each cycle, dated ones when the date moves", async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/ix${p}`;
    let news = ['/n1'];
    let datedAt = '2026-01-01';
    site.route(
      '/ix/index.xml',
      xml(
        () =>
          `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${u('/news.xml')}</loc></sitemap><sitemap><loc>${u('/dated.xml')}</loc><lastmod>${datedAt}</lastmod></sitemap></sitemapindex>`,
      ),
    );
    site.route(
      '/ix/news.xml',
      xml(() => urlset(news.map(u))),
    );
    site.route(
      '/ix/dated.xml',
      xml(() => urlset([u('/d1')])),
    );
    for (const p of ['/', '/n1', '/n2', '/d1']) site.route(`/ix${p}`, { body: page(p) });
    const count = (p: string) => site.requests.filter((r) => r.path === `/ix${p}`).length;
    const config = parseConfig({
      name: uniqueCrawlName('sm-index'),
      startUrls: [u('/')],
      sitemaps: [u('/index.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { discoveryInterval: '1h', maxAge: '7d' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    assert.deepEqual([count('/news.xml'), count('/dated.xml')], [1, 1]);

    news = ['/n1', '/n2'];
    await crawl(await openSession(config, { now: new Date(start + HOUR) }));
    assert.deepEqual([count('/news.xml'), count('/dated.xml')], [2, 1], 'the undated child read again');
    assert.equal(
      count('/n2'),
      1,
      'the page added to the child is found by the discovery cycle, not 7 days on',
    );
    assert.equal(count('/n1'), 1);

    // Read twice within half a discovery interval (the index named twice, a run repeated): once.
    await crawl(await openSession(config, { now: new Date(start + HOUR + 60_000) }));
    assert.equal(count('/news.xml'), 2);

    datedAt = new Date(start + 90 * 60_000).toISOString();
    const last = await openSession(config, { now: new Date(start + 2 * HOUR) });
    await crawl(last);
    assert.deepEqual(
      [count('/news.xml'), count('/dated.xml')],
      [3, 2],
      'the dated child read again once its date moved',
    );
    // Each early read starts its refresh time again: a maxAge after the last read, not one more
    // maxAge for every read (7 days on, not 21).
    const newsState = (await collect(urlStates(last))).find((st) => st.url === u('/news.xml'));
    const next = Date.parse(String(newsState?.nextRefreshAt));
    assert.ok(
      next <= start + 2 * HOUR + 7 * 24 * HOUR + 60_000,
      `news.xml next read at ${newsState?.nextRefreshAt}`,
    );
  });

  it('a sitemap on another host of the crawl (robots.txt, an index) is read; its .xml is no reason to leave it out', async () => {
    const { site } = env;
    const port = new URL(site.url).port;
    const a = (p: string) => `http://a.sitemaps.test:${port}${p}`;
    const b = (p: string) => `http://b.sitemaps.test:${port}${p}`;
    const byHost = (routes: Record<string, () => { type?: string; body: string }>) => ({
      handler: (req: IncomingMessage, res: ServerResponse) => {
        const made = routes[String(req.headers.host).split(':')[0] ?? ''];
        if (!made) return void res.writeHead(404).end();
        const { type = 'text/html', body } = made();
        res.writeHead(200, { 'Content-Type': type }).end(body);
      },
    });
    const XML = 'application/xml';
    site.route(
      '/robots.txt',
      byHost({
        'a.sitemaps.test': () => ({
          type: 'text/plain',
          body: `User-agent: *\nSitemap: ${b('/cross-robots.xml')}\n`,
        }),
        'b.sitemaps.test': () => ({ type: 'text/plain', body: 'User-agent: *\nAllow: /\n' }),
      }),
    );
    site.route(
      '/a-index.xml',
      byHost({
        'a.sitemaps.test': () => ({
          type: XML,
          body: `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${b('/b-sitemap.xml')}</loc></sitemap></sitemapindex>`,
        }),
      }),
    );
    site.route(
      '/cross-robots.xml',
      byHost({ 'b.sitemaps.test': () => ({ type: XML, body: urlset([a('/from-robots')]) }) }),
    );
    site.route(
      '/b-sitemap.xml',
      byHost({ 'b.sitemaps.test': () => ({ type: XML, body: urlset([a('/from-b')]) }) }),
    );
    for (const p of ['/home', '/from-robots', '/from-b'])
      site.route(
        p,
        byHost({
          'a.sitemaps.test': () => ({ body: page(p) }),
          'b.sitemaps.test': () => ({ body: page(p) }),
        }),
      );
    try {
      const session = await openSession(
        parseConfig({
          name: uniqueCrawlName('sm-cross'),
          startUrls: [a('/home'), b('/home')],
          sitemaps: [a('/a-index.xml')],
          discovery: false,
          fetch: {
            allowPrivateNetworks: true,
            resolve: { 'a.sitemaps.test': '127.0.0.1', 'b.sitemaps.test': '127.0.0.1' },
          },
        }),
      );
      await crawl(session);
      const states = new Map((await collect(urlStates(session))).map((s) => [s.url as string, s]));
      assert.equal(states.get(b('/cross-robots.xml'))?.note, 'urlset: 1 URLs');
      assert.equal(states.get(b('/b-sitemap.xml'))?.note, 'urlset: 1 URLs');
      assert.deepEqual(
        [states.get(a('/from-robots'))?.state, states.get(a('/from-b'))?.state],
        ['indexed', 'indexed'],
      );
    } finally {
      site.route('/robots.txt', null);
    }
  });

  it('a sitemap cut at fetch.maxBytes inside a tag gives the entries before the cut, and says so', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/cut${p}`;
    const locs = Array.from({ length: 40 }, (_, i) => u(`/p${i}`));
    const body = urlset(locs);
    // Cut inside the 31st entry's opening tag: `…</url><ur`.
    const maxBytes = body.indexOf('<url>', body.indexOf(u('/p29'))) + 3;
    site.route(
      '/cut/big.xml',
      xml(() => body),
    );
    site.route('/cut/', { body: page('cut') });
    for (const l of locs) site.route(new URL(l).pathname, { body: page(l) });
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('sm-cut'),
        startUrls: [u('/')],
        sitemaps: [u('/big.xml')],
        discovery: false,
        fetch: { allowPrivateNetworks: true, maxBytes },
      }),
    );
    await crawl(session);
    const states = new Map((await collect(urlStates(session))).map((s) => [s.url as string, s]));
    assert.equal(
      states.get(u('/big.xml'))?.note,
      `urlset: 30 URLs; truncated at fetch.maxBytes (${maxBytes} bytes): the entries after it not read`,
    );
    assert.equal(states.get(u('/p29'))?.state, 'indexed');
    assert.equal(states.has(u('/p30')), false);
  });

  it('a configured sitemap is fetched once, whatever form the config writes it in', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/norm${p}`;
    site.route(
      '/norm/s.xml',
      xml(() => urlset([u('/x')])),
    );
    site.route('/norm/', { body: page('norm') });
    site.route('/norm/x', { body: page('x') });
    const upper = `${site.url.replace('http://', 'HTTP://')}/norm/./s.xml#frag`;
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('sm-norm'),
        startUrls: [u('/')],
        sitemaps: [upper, u('/s.xml')],
        discovery: false,
        fetch: { allowPrivateNetworks: true },
      }),
    );
    await crawl(session);
    assert.equal(site.requests.filter((r) => r.path === '/norm/s.xml').length, 1);
    const urls = (await collect(urlStates(session))).map((s) => s.url as string);
    assert.deepEqual(
      urls.filter((x) => x.includes('s.xml')),
      [u('/s.xml')],
    );
  });

  it('with orphanGrace, a sitemap its index no longer lists is forgotten, then its pages; a child that keeps failing is forgotten', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/ret${p}`;
    let children = ['/a.xml', '/b.xml', '/gone.xml'];
    site.route(
      '/ret/index.xml',
      xml(
        () =>
          `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${children
            .map((c) => `<sitemap><loc>${u(c)}</loc></sitemap>`)
            .join('')}</sitemapindex>`,
      ),
    );
    site.route(
      '/ret/a.xml',
      xml(() => urlset([u('/pa')])),
    );
    site.route(
      '/ret/b.xml',
      xml(() => urlset([u('/pb')])),
    );
    site.route('/ret/gone.xml', { status: 404, body: 'gone' });
    for (const p of ['/', '/pa', '/pb']) site.route(`/ret${p}`, { body: page(p) });
    const config = parseConfig({
      name: uniqueCrawlName('sm-retired'),
      startUrls: [u('/')],
      sitemaps: [u('/index.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d', orphanGrace: '3d' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    children = ['/a.xml'];
    let last = await openSession(config);
    for (let day = 1; day <= 9; day++) {
      last = await openSession(config, { now: new Date(start + day * 24 * HOUR) });
      await refresh(last);
    }
    const states = new Map((await collect(urlStates(last))).map((s) => [s.url as string, s]));
    assert.equal(states.has(u('/b.xml')), false, 'the retired child is an orphan, forgotten');
    assert.equal(states.has(u('/gone.xml')), false, 'the 404 child is forgotten after failing again');
    assert.equal(states.get(u('/index.xml'))?.note, 'sitemapindex: 1 sitemaps', 'the configured index stays');
    assert.equal(states.get(u('/a.xml'))?.note, 'urlset: 1 URLs');
    const docs = (await collect(documents(last))).map((d) => d.url);
    assert.deepEqual(docs.sort(), [u('/'), u('/pa')], "the retired child's page leaves the index");
  });

  it("limits.sitemapsPerSite counts the sitemaps a site has now: a retired child's place goes to a new one", async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/rot${p}`;
    let children = ['/w1.xml', '/w2.xml'];
    site.route(
      '/rot/index.xml',
      xml(
        () =>
          `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${children
            .map((c) => `<sitemap><loc>${u(c)}</loc></sitemap>`)
            .join('')}</sitemapindex>`,
      ),
    );
    for (const w of ['w1', 'w2', 'w3']) {
      site.route(
        `/rot/${w}.xml`,
        xml(() => urlset([u(`/${w}`)])),
      );
      site.route(`/rot/${w}`, { body: page(w) });
    }
    site.route('/rot/', { body: page('home') });
    const config = parseConfig({
      name: uniqueCrawlName('sm-rotating'),
      startUrls: [u('/')],
      sitemaps: [u('/index.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      // The index and two weekly children: a site's three.
      limits: { sitemapsPerSite: 3 },
      refresh: { maxAge: '1d', orphanGrace: '3d' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    // Next week's sitemap replaces the oldest: over the cap while w1 is still known.
    children = ['/w2.xml', '/w3.xml'];
    let last = await openSession(config);
    let capped = false;
    for (let day = 1; day <= 9; day++) {
      last = await openSession(config, { now: new Date(start + day * 24 * HOUR) });
      await refresh(last);
      const w3 = (await collect(urlStates(last))).find((s) => s.url === u('/w3.xml'));
      capped ||= String(w3?.note).startsWith('sitemap over limits.sitemapsPerSite (3)');
    }
    assert.ok(capped, 'w3 waits while the retired w1 still holds its place');
    const states = new Map((await collect(urlStates(last))).map((s) => [s.url as string, s]));
    assert.equal(states.has(u('/w1.xml')), false, 'the retired child is forgotten');
    assert.equal(
      states.get(u('/w3.xml'))?.note,
      'urlset: 1 URLs',
      "the new child read in the retired one's place",
    );
    assert.equal(states.get(u('/w3'))?.state, 'indexed');
  });

  it('with discovery off, orphanGrace does not make every refresh a whole fetch (no links are read)', async () => {
    const { site } = env;
    const u = (p: string) => `${site.url}/og${p}`;
    const at = new Date('2026-01-01T00:00:00Z').toUTCString();
    const conditional = (title: string) => ({
      handler: (req: IncomingMessage, res: ServerResponse) => {
        if (req.headers['if-modified-since']) return void res.writeHead(304).end();
        res.writeHead(200, { 'Content-Type': 'text/html', 'Last-Modified': at }).end(page(title));
      },
    });
    site.route(
      '/og/s.xml',
      xml(() => urlset([u('/p')])),
    );
    site.route('/og/', conditional('og'));
    site.route('/og/p', conditional('p'));
    const config = parseConfig({
      name: uniqueCrawlName('sm-og'),
      startUrls: [u('/')],
      sitemaps: [u('/s.xml')],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d', orphanGrace: '3d' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    await refresh(await openSession(config, { now: new Date(start + 25 * HOUR) }));
    const refetch = site.requests.filter((r) => r.path === '/og/p').at(-1);
    assert.equal(site.requests.filter((r) => r.path === '/og/p').length, 2);
    assert.equal(refetch?.headers['if-modified-since'], at, 'a conditional GET, answered 304');
    assert.equal(refetch?.status, 304);
  });
});
