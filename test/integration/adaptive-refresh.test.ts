/**
 * Adaptive refresh (issue 17 item 3): on a loopback site where some pages change before every
 * cycle and others never do, hourly refresh cycles on a shifted clock (`refresh --now`) refetch
 * the changing pages at least 4× as often as the static ones, every interval within the bounds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const H = 3_600_000;
const CHANGING = ['/news-1', '/news-2'];
const STATIC = ['/about', '/terms'];
const CYCLES = 10;
const page = (title: string, body: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${body}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

describe('adaptive refresh: changing pages are refreshed more often than static ones', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const publish = (version: number) => {
    for (const p of CHANGING) site.route(p, { body: page(p, `edition ${version} of ${p}`) });
  };
  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/': { body: page('Home', 'home', [...CHANGING, ...STATIC]) },
        '/robots.txt': { status: 404, body: '' },
        ...Object.fromEntries(STATIC.map((p) => [p, { body: page(p, `${p} never changes`) }])),
      },
    });
    publish(0);
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it(`after ${CYCLES} hourly cycles: changing ≥ 4× static, intervals within [1h, 24h]`, async () => {
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('adaptive'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '2h', adaptive: { min: '1h', max: '24h' } },
    };
    const config = parseConfig(input);
    const t0 = Date.now();
    await crawl(await openSession(config));
    const since = site.requests.length;
    for (let h = 1; h <= CYCLES; h++) {
      publish(h);
      // Five minutes past each hour: a URL due on the hour is due in that cycle.
      await refresh(await openSession(config, { now: new Date(t0 + h * H + 5 * 60_000) }));
    }
    const gets = site.requests.slice(since).filter((r) => r.method === 'GET');
    const count = (p: string) => gets.filter((r) => r.path === p).length;
    const changing = CHANGING.map(count);
    const fixed = STATIC.map(count);
    // Changing: due at 2h (→ 1h), then every cycle: 9. Static: 2h (→ 4h), 6h (→ 8h): 2.
    console.log(`refetches in ${CYCLES} cycles: changing ${changing}, static ${fixed}`);
    for (const n of fixed) assert.ok(n >= 1, `static pages are still refreshed (${fixed})`);
    for (const c of changing)
      for (const s of fixed) assert.ok(c >= 4 * s, `changing ${changing} vs static ${fixed}`);

    const session = await openSession(config, { now: new Date(t0 + CYCLES * H + 5 * 60_000) });
    const states = await collect(urlStates(session));
    const byPath = new Map(states.map((s) => [new URL(s.url as string).pathname, s]));
    for (const p of [...CHANGING, ...STATIC]) {
      const s = byPath.get(p);
      const interval = s?.refreshInterval as number;
      assert.ok(interval >= H && interval <= 24 * H, `${p}: interval ${interval} within bounds`);
      assert.ok(Date.parse(s?.nextRefreshAt as string) > t0 + CYCLES * H, `${p}: next refresh ahead`);
    }
    assert.equal(byPath.get(CHANGING[0]!)?.refreshInterval, H, 'changing pages reach the minimum');
    assert.ok((byPath.get(STATIC[0]!)?.refreshInterval as number) >= 8 * H, 'static pages back off');
  });
});
