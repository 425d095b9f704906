// Crawler traps and soft 404s end to end (issue 17 item 4): a loopback site with repeating relative
// links, an infinite calendar, an endless chain of deeper paths and a soft-404 answer for every unknown
// path, beside a host with more links than its cap. The crawl ends with a bounded number of requests,
// each stop counted by reason and recorded or explained.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, refresh, urlStates } from '../../cli/session.ts';
import { printSummary } from '../../cli/summary.ts';
import { requestCounts } from '../../shared/aws/request-counter.ts';
import { parseConfig } from '../../shared/config.ts';
import { explainUrl } from '../../shared/crawl/rules/decide.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';

interface Site {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

const html = (title: string, body: string) =>
  `<html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

/** The trap site: every unknown path answers 200 with the same "not found" page (a soft 404). */
function trapPage(path: string, query: URLSearchParams): string {
  if (path === '/')
    return html(
      'Home',
      '<a href="/loop/">loop</a> <a href="/cal?month=1">calendar</a> <a href="/deep/1/">deep</a> <a href="/gone-page">gone</a> <a href="/about">about</a>',
    );
  if (path === '/about') return html('About', '<p>About this site, a page of its own.</p>');
  // Each page links `a/b/` below itself: /loop/a/b/a/b/a/b/… never ends.
  if (path.startsWith('/loop/')) return html(`Loop ${path}`, '<a href="a/b/">next</a>');
  if (path === '/cal') {
    const m = Number(query.get('month') ?? 0);
    return html(
      `Month ${m}`,
      `<a href="/cal?month=${m + 1}">next</a> <a href="/cal?month=${m - 1}">prev</a>`,
    );
  }
  if (path.startsWith('/deep/')) {
    const n = path.split('/').filter(Boolean).length;
    return html(`Deep ${n}`, `<a href="${n + 1}/">deeper</a>`);
  }
  // A soft 404: status 200, echoes the path, and links onward like many such pages do.
  return html('Sorry', `<p>We could not find ${path}. Try the search.</p><a href="${path}-more">more</a>`);
}

async function serve(page: (path: string, q: URLSearchParams) => string | null): Promise<Site> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/robots.txt') return void res.writeHead(404).end();
    const body = page(u.pathname, u.searchParams);
    if (body === null) return void res.writeHead(404).end('not found');
    res.writeHead(200, { 'content-type': 'text/html' }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

describe('crawler traps and soft 404s', () => {
  let emu: TestEmulator;
  let trap: Site;
  let big: Site;

  before(async () => {
    emu = await startTestEmulator();
    trap = await serve(trapPage);
    const links = Array.from({ length: 40 }, (_, i) => `<a href="/p${i}">p${i}</a>`).join(' ');
    // A well-behaved host: unknown paths are real 404s, so its probe finds no soft 404.
    big = await serve((path) => {
      if (path === '/') return html('Big', links);
      return /^\/p\d+$/.test(path) ? html(`Page ${path}`, `<p>leaf ${path.slice(2)}</p>`) : null;
    });
  });
  after(async () => {
    await trap?.close();
    await big?.close();
    await emu?.stop();
  });

  it('ends with a bounded number of fetches, every stop counted and explained', async () => {
    const traps = {
      maxSegmentRepeats: 2,
      maxPathDepth: 8,
      maxUrlsPerHost: 30,
      maxQueryVariantsPerPath: 10,
      soft404: true,
    };
    const config = parseConfig({
      name: uniqueCrawlName('traps'),
      startUrls: [`${trap.url}/`, `${big.url}/`],
      scope: { traps },
      fetch: { allowPrivateNetworks: true },
    });
    for (const k of Object.keys(stageStats)) delete stageStats[k];
    const session = await openSession(config);
    await crawl(session);
    const states = new Map<string, Record<string, unknown>>();
    for await (const s of urlStates(session)) states.set(String(s.url), s);

    // Bounded: home, about, 3 loop pages, 10 calendar months, 7 deep levels, one soft 404, the probe.
    assert.ok(trap.requests.length <= 30, `requests to the trap site: ${trap.requests.join(' ')}`);
    assert.ok(big.requests.length <= 33, `requests to the big site: ${big.requests.length}`);
    const stats = { ...stageStats };
    for (const reason of ['repeating-segments', 'path-too-deep', 'query-variants', 'host-cap', 'soft-404'])
      assert.ok((stats[`rejected:${reason}`] ?? 0) >= 1, `${reason} counted: ${JSON.stringify(stats)}`);
    assert.equal(stats['rejected:host-cap'], 40 - 30, 'the big host: 30 links admitted, 10 stopped');
    const bigStates = [...states.values()].filter((s) => String(s.url).startsWith(big.url));
    assert.equal(bigStates.filter((s) => s.state === 'indexed').length, 31, 'its home and 30 pages indexed');

    // Soft 404: one random-path probe, and the broken link is an error, not a document.
    assert.equal(trap.requests.filter((r) => r.startsWith('/trawl-probe-')).length, 1);
    assert.deepEqual(
      [states.get(`${trap.url}/gone-page`)?.state, states.get(`${trap.url}/gone-page`)?.errorCode],
      ['error', 'soft-404'],
    );
    assert.equal(states.get(`${trap.url}/about`)?.state, 'indexed', 'a real page is no soft 404');
    assert.ok(!trap.requests.includes('/gone-page-more'), "a soft 404's links are not followed");

    // Caps: the stopped URLs are recorded with the reason; path traps are explained without the network.
    const capped = [...states.values()].filter((s) => String(s.note ?? '').startsWith('trap: '));
    assert.ok(capped.some((s) => String(s.note).startsWith('trap: query-variants')));
    assert.equal(capped.filter((s) => String(s.note).startsWith('trap: host-cap')).length, 10);
    assert.equal(explainUrl(config, `${trap.url}/loop/a/b/a/b/a/b/`).reason, 'repeating-segments');
    assert.equal(explainUrl(config, `${trap.url}/deep/1/2/3/4/5/6/7/8/`).reason, 'path-too-deep');
    const cal = explainUrl(config, `${trap.url}/cal?month=99`).traps as Record<string, unknown>;
    assert.deepEqual(cal.queryVariants, {
      path: `${new URL(trap.url).host}/cal`,
      maxQueryVariantsPerPath: 10,
    });
  });

  it('a raised cap brings back the URLs the old one stopped, at the next cycle', async () => {
    // Until 2026-11-28 a URL a cap stopped was stopped for good: known to the table, it never
    // reached the gate again, whatever the config said later.
    const name = uniqueCrawlName('capraise');
    const configWith = (maxUrlsPerHost: number) =>
      parseConfig({
        name,
        startUrls: [`${big.url}/`],
        scope: { traps: { maxUrlsPerHost } },
        fetch: { allowPrivateNetworks: true },
      });
    const indexed = async (s: Awaited<ReturnType<typeof openSession>>) => {
      let n = 0;
      let capped = 0;
      for await (const u of urlStates(s)) {
        if (u.state === 'indexed') n++;
        if (String(u.note ?? '').startsWith('trap: host-cap')) capped++;
      }
      return { n, capped };
    };
    await crawl(await openSession(configWith(30)));
    assert.deepEqual(await indexed(await openSession(configWith(30))), { n: 31, capped: 10 });

    const day = 86_400_000;
    const later = await openSession(configWith(60), { now: new Date(Date.now() + day) });
    const asked = big.requests.length;
    await refresh(later);
    assert.deepEqual(await indexed(later), { n: 41, capped: 0 }, 'the 10 stopped pages are indexed');
    const leaves = big.requests.slice(asked).filter((r) => /^\/p\d+$/.test(r));
    assert.equal(new Set(leaves).size, leaves.length, `each page fetched once: ${leaves.join(' ')}`);

    // Lowered again: the pages already indexed stay; nothing stopped is judged twice.
    const lower = await openSession(configWith(30), { now: new Date(Date.now() + 2 * day) });
    await refresh(lower);
    assert.equal((await indexed(lower)).n, 41);
  });

  it('random links past a cap: as many rows as the cap admits, the rest only counted, however many refreshes', async () => {
    // A shop page whose 15 links carry a random `?s=` at every fetch: each refresh brought 15 new
    // URLs past the cap and a row each, without end (1,004 rows, then 2,006 after two refreshes).
    const CAP = 10;
    const LINKS = 15;
    let seq = 0;
    const shop = await serve((path) => {
      if (path === '/')
        return html(
          'Shop',
          Array.from({ length: LINKS }, () => `<a href="/list?s=${++seq}">x</a>`).join(' '),
        );
      return path === '/list' ? html('List', '<p>a list</p>') : null;
    });
    try {
      const config = parseConfig({
        name: uniqueCrawlName('randomlinks'),
        startUrls: [`${shop.url}/`],
        scope: { traps: { maxQueryVariantsPerPath: CAP } },
        fetch: { allowPrivateNetworks: true },
        refresh: { maxAge: '1h' },
      });
      for (const k of Object.keys(stageStats)) delete stageStats[k];
      await crawl(await openSession(config));
      const rows = async (s: Awaited<ReturnType<typeof openSession>>) => {
        const out = { variants: 0, capped: 0 };
        for await (const u of urlStates(s))
          if (new URL(String(u.url)).pathname === '/list') {
            out.variants++;
            if (String(u.note ?? '').startsWith('trap: query-variants')) out.capped++;
          }
        return out;
      };
      assert.deepEqual(await rows(await openSession(config)), { variants: LINKS, capped: LINKS - CAP });
      for (let cycle = 1; cycle <= 3; cycle++) {
        const later = await openSession(config, { now: new Date(Date.now() + cycle * 2 * 3_600_000) });
        await refresh(later);
        // Rows past the cap stop at the cap's own size: 10 admitted, 10 recorded stopped.
        assert.deepEqual(await rows(later), { variants: 2 * CAP, capped: CAP }, `after refresh ${cycle}`);
      }
      const homeFetches = shop.requests.filter((r) => r === '/').length;
      assert.equal(homeFetches, 4, 'the page was fetched at the crawl and each refresh');
      const stats = { ...stageStats };
      // Every stop counted: 5 at the crawl, 15 at each of 3 refreshes; 10 of them with a row.
      assert.equal(stats['rejected:query-variants'], LINKS - CAP + 3 * LINKS);
      assert.equal(stats['unrecorded:query-variants'], LINKS - CAP + 3 * LINKS - CAP);
      const lines: string[] = [];
      const write = process.stdout.write;
      process.stdout.write = ((t: string) => lines.push(t) > 0) as typeof process.stdout.write;
      try {
        const session = await openSession(config);
        printSummary({ kind: 'refresh', config, session, seconds: 1, stats, counts: requestCounts });
      } finally {
        process.stdout.write = write;
      }
      assert.ok(
        lines.includes('  traps stopped (scope.traps): query-variants 50 (40 without a row)\n'),
        lines.join(''),
      );
    } finally {
      await shop.close();
    }
  });

  it("a calendar's variants past their cap take no place of the host's: its real pages all enter", async () => {
    // Each page links 8 calendar days and 2 real pages. The 30 variants the path cap stopped were
    // counted on the host too, and 3 of the 10 real pages were stopped at maxUrlsPerHost (helper-47).
    const site = await serve((path) => {
      const calendar = Array.from({ length: 8 }, (_, d) => `<a href="/cal?d=${d}">${d}</a>`).join(' ');
      if (path === '/')
        return html('Home', [1, 2, 3, 4, 5].map((n) => `<a href="/p${n}">p${n}</a>`).join(' '));
      const p = /^\/p(\d)$/.exec(path);
      if (p)
        return html(`P${p[1]}`, `${calendar} <a href="/real${p[1]}a">a</a> <a href="/real${p[1]}b">b</a>`);
      if (path === '/cal' || path.startsWith('/real')) return html(`Page ${path}`, '<p>text</p>');
      return null;
    });
    try {
      const config = parseConfig({
        name: uniqueCrawlName('hostcap'),
        startUrls: [`${site.url}/`],
        scope: { traps: { maxQueryVariantsPerPath: 2, maxUrlsPerHost: 20 } },
        fetch: { allowPrivateNetworks: true },
      });
      const session = await openSession(config);
      await crawl(session);
      const real: string[] = [];
      const hostCapped: string[] = [];
      for await (const u of urlStates(session)) {
        const path = new URL(String(u.url)).pathname;
        if (path.startsWith('/real') && u.state === 'indexed') real.push(path);
        if (String(u.note ?? '').startsWith('trap: host-cap')) hostCapped.push(path);
      }
      assert.equal(real.length, 10, `real pages indexed: ${real.sort().join(' ')}`);
      assert.deepEqual(hostCapped, []);
    } finally {
      await site.close();
    }
  });

  it('a cap changed later: a stopped URL judged again past the record window gets the current note', async () => {
    const links = Array.from({ length: 30 }, (_, i) => `<a href="/list?s=${i}">x</a>`).join(' ');
    const shop = await serve((path) => {
      if (path === '/') return html('Shop', links);
      return path === '/list' ? html('List', '<p>a list</p>') : null;
    });
    try {
      const name = uniqueCrawlName('capnote');
      const configWith = (cap: number) =>
        parseConfig({
          name,
          startUrls: [`${shop.url}/`],
          scope: { traps: { maxQueryVariantsPerPath: cap } },
          fetch: { allowPrivateNetworks: true },
          refresh: { maxAge: '1h' },
        });
      const notes = async (s: Awaited<ReturnType<typeof openSession>>) => {
        const out: Record<string, number> = {};
        for await (const u of urlStates(s)) {
          const note = String(u.note ?? '');
          if (note.startsWith('trap: ')) out[note] = (out[note] ?? 0) + 1;
        }
        return out;
      };
      const first = configWith(10);
      await crawl(await openSession(first));
      assert.deepEqual(await notes(await openSession(first)), {
        'trap: query-variants (scope.traps.maxQueryVariantsPerPath 10)': 10,
      });
      // Lowered: the page is read again; its ten recorded stops are judged again, all past the
      // new cap's record window (the counter has seen 30 and more), and take the new note.
      const lower = configWith(5);
      const later = await openSession(lower, { now: new Date(Date.now() + 2 * 3_600_000) });
      await refresh(later);
      const after = await notes(later);
      assert.equal(
        after['trap: query-variants (scope.traps.maxQueryVariantsPerPath 10)'],
        undefined,
        JSON.stringify(after),
      );
      assert.equal(
        after['trap: query-variants (scope.traps.maxQueryVariantsPerPath 5)'],
        10,
        JSON.stringify(after),
      );
    } finally {
      await shop.close();
    }
  });

  it('a site that puts a new session id in every link is crawled once per page, and the crawl ends', async () => {
    // Every answer links its pages with a fresh `;jsessionid=` (and a PHPSESSID query): each link
    // was a new URL with the same content, and the crawl never ended (13,919 fetches in 100 s).
    let n = 0;
    const id = () => `${(++n).toString(16).padStart(8, '0')}A1B2C3D4E5F6A7B8C9D0E1F2`;
    const pages = ['/', '/catalog.html', '/cart.html'];
    const session = await serve((path) => {
      if (!pages.includes(path)) return null;
      const links = `<a href="/catalog.html;jsessionid=${id()}">catalog</a> <a href="/cart.html?PHPSESSID=${id()}">cart</a>`;
      return html(`Shop ${path}`, `<p>Shop page ${path}</p>${links}`);
    });
    try {
      const config = parseConfig({
        name: uniqueCrawlName('sessionids'),
        startUrls: [`${session.url}/`],
        fetch: { allowPrivateNetworks: true },
      });
      await crawl(await openSession(config));
      const fetched = session.requests.filter((r) => r !== '/robots.txt');
      assert.deepEqual(fetched.sort(), [...pages].sort(), 'each page once, under its URL without the id');
      const urls: string[] = [];
      for await (const u of urlStates(await openSession(config)))
        urls.push(new URL(u.url as string).pathname);
      assert.deepEqual(urls.sort(), [...pages].sort());
    } finally {
      await session.close();
    }
  });
});
