/**
 * Orphans (issue 15 item 6, seed 004 "removed pages"): a page that still answers 200 but that no
 * page links to and no sitemap lists any more is deleted by the refresh cycle once
 * `refresh.orphanGrace` has passed, with reason `orphan` in the change feed and in
 * `trawl refresh --dry-run`; pages reached only through an unchanged page or a sitemap stay.
 * Real loopback site (static files: Last-Modified, so 304s are possible), real emulator, shifted clock.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, planRefresh, refresh } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

describe('orphans: pages nothing links to any more are deleted after the grace period', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let dir: string;
  before(async () => {
    emu = await startTestEmulator();
    dir = mkdtempSync(join(tmpdir(), 'trawl-orphans-'));
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('deletes the unlinked page in the first cycle past the grace, keeps the others', async () => {
    writeFileSync(join(dir, 'index.html'), page('Home', ['/a.html', '/b.html', '/gone.html']));
    writeFileSync(join(dir, 'a.html'), page('A', ['/deep.html']));
    for (const p of ['b', 'gone', 'deep', 'listed']) writeFileSync(join(dir, `${p}.html`), page(p));
    const sitemap = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${site.url}/listed.html</loc></url></urlset>`;
    writeFileSync(join(dir, 'sitemap.xml'), sitemap);
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('orphans'),
      startUrls: [`${site.url}/`],
      sitemaps: [`${site.url}/sitemap.xml`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d', orphanGrace: '3d' },
    };
    const config = parseConfig(input);
    const t0 = Date.now();
    await crawl(await openSession(config));
    const paths = async (s: Awaited<ReturnType<typeof openSession>>) =>
      (await collect(documents(s))).map((d) => new URL(d.url as string).pathname);
    assert.deepEqual(await paths(await openSession(config)), [
      '/',
      '/a.html',
      '/b.html',
      '/deep.html',
      '/gone.html',
      '/listed.html',
    ]);

    // The home page stops linking to gone.html; the page itself still answers 200.
    writeFileSync(join(dir, 'index.html'), page('Home, edited', ['/a.html', '/b.html']));
    const at = (days: number) => new Date(t0 + days * DAY + 5 * 60_000);
    for (const days of [1, 2]) {
      const since = site.requests.length;
      await refresh(await openSession(config, { now: at(days) }));
      const got = site.requests.slice(since).filter((r) => r.path === '/a.html');
      // a.html never changes, but with orphans on it is fetched whole: a 304 would name no links.
      assert.equal(got[0]?.status, 200, `day ${days}: a.html fetched whole`);
      assert.equal(got[0]?.headers['if-modified-since'], undefined);
      assert.ok(
        (await paths(await openSession(config))).includes('/gone.html'),
        `day ${days}: within the grace`,
      );
    }

    const third = await openSession(config, { now: at(3) });
    const plan = await planRefresh(third);
    const planned = Object.fromEntries(plan.map((p) => [new URL(p.url).pathname, p]));
    assert.equal(planned['/gone.html']?.action, 'delete');
    assert.match(planned['/gone.html']?.reason ?? '', /^orphan: not linked or listed since /);
    for (const p of ['/a.html', '/b.html', '/deep.html', '/listed.html'])
      assert.equal(planned[p]?.action, 'refresh', `${p}: ${planned[p]?.reason}`);

    const since = site.requests.length;
    await refresh(third);
    assert.deepEqual(await paths(third), ['/', '/a.html', '/b.html', '/deep.html', '/listed.html']);
    const deletes = (await readChanges(third)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deletes.map((c) => [new URL(c.url).pathname, c.reason]),
      [['/gone.html', planned['/gone.html']?.reason]],
    );
    const gone = site.requests.slice(since).filter((r) => r.path === '/gone.html');
    assert.equal(gone.length, 0, 'an orphan is deleted without being fetched');
  });

  it('a cycle long after the last one (more than the grace) deletes no linked page: the time no cycle ran is not counted', async () => {
    // Until 2026-11-28 such a cycle deleted every linked page as an orphan before it read the page
    // linking to them, and indexed them again as new in the same cycle.
    mkdirSync(join(dir, 'gap'), { recursive: true });
    writeFileSync(join(dir, 'gap', 'index.html'), page('Gap home', ['/gap/x.html', '/gap/y.html']));
    for (const p of ['x', 'y']) writeFileSync(join(dir, 'gap', `${p}.html`), page(`Gap ${p}`));
    const config = parseConfig({
      name: uniqueCrawlName('orphans-gap'),
      startUrls: [`${site.url}/gap/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d', orphanGrace: '3d' },
    });
    const t0 = Date.now();
    await crawl(await openSession(config));
    await refresh(await openSession(config, { now: new Date(t0 + DAY + 60_000) }));
    // Five days on: more than the grace since the last cycle, the site unchanged.
    const late = await openSession(config, { now: new Date(t0 + 6 * DAY) });
    const plan = await planRefresh(late);
    assert.deepEqual(
      plan.filter((p) => p.action === 'delete').map((p) => p.url),
      [],
      'nothing planned for deletion',
    );
    await refresh(late);
    const docs = (await collect(documents(late))).map((d) => new URL(d.url as string).pathname);
    assert.deepEqual(docs, ['/gap/', '/gap/x.html', '/gap/y.html']);
    const deletes = (await readChanges(late)).filter((c) => c.type === 'delete');
    assert.deepEqual(deletes, [], 'no delete record');
  });

  it('keeps a page that had an error while the page linking to it is read whole (its stamp is never moved back)', async () => {
    // The audit's repro: p.html answers 503 once, so its state is kept in the table from then on;
    // each refresh of it rewrote its item with the reach stamp its task carried (read at the start
    // of the cycle), over the stamp the link from the home page wrote in that same cycle: deleted
    // as an orphan once the grace had passed, and added back as new two days later.
    const sub = join(dir, 'o2');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'index.html'), page('O2', ['p.html', 'q.html']));
    for (const p of ['p', 'q']) writeFileSync(join(sub, `${p}.html`), page(p.toUpperCase()));
    const config = parseConfig({
      name: uniqueCrawlName('orphans-kept'),
      startUrls: [`${site.url}/o2/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d', orphanGrace: '14d' },
    });
    const t0 = Date.now();
    await crawl(await openSession(config));
    const at = (days: number) => new Date(t0 + days * DAY + 2 * 3_600_000);
    const paths = async (s: Awaited<ReturnType<typeof openSession>>) =>
      (await collect(documents(s))).map((d) => new URL(d.url as string).pathname);
    const deleted: string[] = [];
    for (let days = 1; days <= 17; days++) {
      // Day 1 only: a temporary error (it is retried after a second, in vain, then kept as an error).
      if (days === 1) site.route('/o2/p.html', { status: 503, headers: { 'Retry-After': '1' } });
      const since = site.requests.length;
      const session = await openSession(config, { now: at(days) });
      await refresh(session);
      site.route('/o2/p.html', null);
      const got = site.requests.slice(since);
      if (days === 1)
        assert.ok(
          got.some((r) => r.path === '/o2/p.html' && r.status === 503),
          'day 1: p.html 503',
        );
      for (const c of (await readChanges(session)).filter((c) => c.type === 'delete'))
        if (!deleted.some((d) => d.startsWith(`${c.url} `))) deleted.push(`${c.url} ${c.reason}`);
      assert.deepEqual(deleted, [], `day ${days}: nothing deleted`);
      const docs = await paths(session);
      if (days > 1) assert.deepEqual(docs, ['/o2/', '/o2/p.html', '/o2/q.html'], `day ${days}`);
    }
    // The stamp moved on with the links read (every quarter of the grace), not left at day 0.
    const pUrl = `${site.url}/o2/p.html`;
    const item = (await (await openSession(config, { now: at(17) })).urls.getMany([pUrl])).get(pUrl);
    assert.ok((item?.reachedAt ?? '') > at(12).toISOString(), `p.html reached at ${item?.reachedAt}`);
  });
});
