import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { LocalRunner } from '../../cli/runner.ts';
import { clearErrors, crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { handler as extractHandler } from '../../functions/extract/handler.ts';
import { handler as fetchHandler } from '../../functions/fetch/handler.ts';
import { handler as indexHandler } from '../../functions/index/handler.ts';
import { handler as refreshHandler } from '../../functions/refresh/handler.ts';
import { handler as seedHandler } from '../../functions/seed/handler.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { lastRunKey, scheduleRunKey } from '../../shared/stages/handler-kit.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, body: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${body}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

describe('refresh: aged documents, removed pages and changed rules (seeds 001, 002, 004)', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let dir: string;

  before(async () => {
    emu = await startTestEmulator();
    dir = mkdtempSync(join(tmpdir(), 'trawl-refresh-'));
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('re-fetches conditionally three days later and leaves exactly the expected index', async () => {
    const links = ['/a.html', '/b.html', '/c.html', '/d.html', '/e.html', '/f.html', '/g.html'];
    writeFileSync(join(dir, 'index.html'), page('Home', 'the home page', links));
    writeFileSync(join(dir, 'a.html'), page('A', 'page a, soon gone'));
    writeFileSync(join(dir, 'b.html'), page('B', 'page b, first version'));
    writeFileSync(join(dir, 'c.html'), page('C', 'page c, never changes'));
    writeFileSync(join(dir, 'd.html'), page('D', 'page d, soon excluded by a rule'));
    writeFileSync(join(dir, 'g.html'), page('G', 'page g, soon noIndex by a rule'));
    // e: fine at first, then 503 with Retry-After; f: no validators, so refresh gets a 200 with the same bytes.
    site.route('/e.html', { body: page('E', 'page e, soon unavailable') });
    site.route('/f.html', { body: page('F', 'page f, no validators') });
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('refresh'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h', maxTemporaryErrors: 2 },
    };
    const first = await openSession(parseConfig(input));
    await crawl(first);
    const before = await collect(documents(first));
    assert.deepEqual(
      before.map((d) => new URL(d.url as string).pathname),
      ['/', '/a.html', '/b.html', '/c.html', '/d.html', '/e.html', '/f.html', '/g.html'],
    );
    const bBefore = before.find((d) => (d.url as string).endsWith('/b.html'));

    // The site changes.
    rmSync(join(dir, 'a.html'));
    writeFileSync(join(dir, 'b.html'), page('B', 'page b, second and longer version'));
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(dir, 'b.html'), later, later);
    site.route('/e.html', { status: 503, headers: { 'Retry-After': '1' }, body: 'busy' });
    const sinceRefresh = site.requests.length;
    const now = new Date(Date.now() + 3 * DAY);
    const changed = parseConfig({
      ...input,
      rules: [
        { match: { path: '/d.html' }, actions: ['ignore'] },
        { match: { path: '/g.html' }, actions: ['noIndex'] },
      ],
    });
    const second = await openSession(changed, { now });
    for (const k of Object.keys(stageStats)) delete stageStats[k];
    const summary = (await refresh(second)) as { due: number; requeued: number; deleted: number };
    // The run's summary counts every deletion: the refresh stage's own (d, g) and the index
    // stage's (a); it used to leave the refresh stage's out.
    assert.equal(stageStats['documents:deleted'], 3);

    assert.equal(summary.due, 8);
    assert.equal(summary.deleted, 1, 'd.html is deleted by the refresh stage itself');
    const after = await collect(documents(second));
    assert.deepEqual(
      after.map((d) => new URL(d.url as string).pathname),
      ['/', '/b.html', '/c.html', '/e.html', '/f.html'],
      'e.html, unavailable for one cycle, keeps its document',
    );
    const bAfter = after.find((d) => (d.url as string).endsWith('/b.html'));
    assert.match(bAfter?.content as string, /second and longer version/);
    assert.notEqual(bAfter?.hash, bBefore?.hash);
    assert.ok(
      Date.parse(bAfter?.indexedAt as string) >= now.getTime() - 60_000,
      'reindexed at the shifted time',
    );

    // The request log: conditional GETs with the stored validators; c answered 304.
    const refreshed = site.requests.slice(sinceRefresh).filter((r) => r.method === 'GET');
    const get = (p: string) => refreshed.filter((r) => r.path === p);
    for (const p of ['/', '/b.html', '/c.html']) {
      const [r] = get(p);
      assert.ok(r, `${p} fetched again`);
      assert.ok(r.headers['if-modified-since'], `${p} sent If-Modified-Since`);
      assert.ok(r.headers['if-none-match'], `${p} sent If-None-Match`);
    }
    assert.equal(get('/c.html')[0]?.status, 304);
    assert.equal(get('/a.html')[0]?.status, 404);
    assert.equal(get('/e.html').length, 3, 'one try and maxTemporaryErrors (2) retries');
    assert.equal(get('/d.html').length, 0, 'an excluded URL is not fetched');
    assert.ok(get('/f.html')[0]?.headers['if-modified-since'], 'no Last-Modified: the fetch time is sent');
    assert.equal(get('/f.html')[0]?.status, 200);
    // g is now noIndex: fetched whole (a 304 would say nothing about its links) and its document removed.
    assert.equal(get('/g.html')[0]?.headers['if-none-match'], undefined);

    // The change feed names each deletion with its reason; the unchanged pages wrote nothing.
    const feed = await readChanges(second, { since: now.toISOString().slice(0, 10) });
    const deletes = Object.fromEntries(
      feed.filter((c) => c.type === 'delete').map((c) => [new URL(c.url).pathname, c.reason]),
    );
    assert.deepEqual(Object.keys(deletes).sort(), ['/a.html', '/d.html', '/g.html']);
    assert.match(deletes['/g.html'] as string, /^not-indexed: rule 1: noIndex/);
    assert.match(deletes['/a.html'] as string, /^permanent-error: .*404/);
    assert.match(deletes['/d.html'] as string, /^out-of-scope: rule 0: ignore/);
    const upserts = feed.filter((c) => c.type === 'upsert').map((c) => [new URL(c.url).pathname, c.reason]);
    assert.deepEqual(upserts, [['/b.html', 'changed']]);
    // The first crawl's upserts said why too (docs/documents.md): every page was new then.
    const initial = (await readChanges(second)).filter(
      (c) => c.type === 'upsert' && c.at < now.toISOString(),
    );
    assert.ok(
      initial.length > 0 && initial.every((c) => c.reason === 'new'),
      JSON.stringify(initial.slice(0, 2)),
    );

    // URL states: the excluded URL is forgotten, the 404 remembered as an error (seed 001: tried
    // again after maxAge, forgotten if it fails again), the others indexed at the shifted time.
    const states = await collect(urlStates(second));
    assert.deepEqual(
      states.map((s) => [new URL(s.url as string).pathname, s.state]),
      [
        ['/', 'indexed'],
        ['/a.html', 'error'],
        ['/b.html', 'indexed'],
        ['/c.html', 'indexed'],
        ['/e.html', 'error'],
        ['/f.html', 'indexed'],
        ['/g.html', 'followed'],
      ],
    );
    assert.ok(states.every((s) => Date.parse(s.lastFetched as string) >= now.getTime() - 60_000));

    // e.html's outage: one failed cycle is one temporary error (its quick retries took 2 s; a site
    // down that long during a refresh used to lose every document). It is tried again an hour
    // later, then two: the third failure in a row is more than maxTemporaryErrors (2), but the
    // page has failed for 3 hours, less than maxAge (48 h): kept (on the count alone a night's
    // outage deleted a site). A failure past 48 h deletes the document and forgets the URL (seed 001).
    const e = () =>
      collect(urlStates(second)).then((all) => all.find((u) => (u.url as string).endsWith('/e.html')));
    const failed = await e();
    assert.deepEqual([failed?.errorKind, failed?.temporaryErrors], ['temporary', 1]);
    const wait = Date.parse(failed?.nextRefreshAt as string) - Date.parse(failed?.lastFetched as string);
    assert.ok(wait >= 3_600_000 && wait < 3_660_000, `tried again ${wait} ms after the failure`);
    const cycle = async (hours: number) => {
      const at = await openSession(changed, { now: new Date(now.getTime() + hours * 3_600_000) });
      await refresh(at);
      return collect(documents(at));
    };
    assert.ok(
      (await cycle(1.1)).some((d) => (d.url as string).endsWith('/e.html')),
      'kept after two',
    );
    assert.equal((await e())?.temporaryErrors, 2);
    assert.ok(
      (await cycle(3.2)).some((d) => (d.url as string).endsWith('/e.html')),
      'kept after three within maxAge',
    );
    assert.equal((await e())?.temporaryErrors, 3);
    const last = await cycle(49);
    assert.deepEqual(
      last.map((d) => new URL(d.url as string).pathname),
      ['/', '/b.html', '/c.html', '/f.html'],
    );
    assert.equal(await e(), undefined, 'forgotten');
    const gone = (await readChanges(second)).filter((c) => c.type === 'delete' && c.url.endsWith('/e.html'));
    assert.equal(gone.length, 1);
    assert.match(gone[0]?.reason ?? '', /^temporary-errors: .*503/);
    assert.equal(
      get('/e.html').length,
      3,
      'the first cycle: one try and maxTemporaryErrors (2) quick retries',
    );
  });

  it('a discovery cycle finds new pages, known URLs keep their state; clear-errors queues errors again (seed 002)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'trawl-discovery-'));
    const own = await startSiteServer({ root });
    try {
      writeFileSync(join(root, 'index.html'), page('Home', 'home', ['/x.html', '/missing.html']));
      writeFileSync(join(root, 'x.html'), page('X', 'x'));
      const session = await openSession(
        parseConfig({
          name: uniqueCrawlName('disc'),
          startUrls: [`${own.url}/`],
          fetch: { allowPrivateNetworks: true },
        }),
      );
      await crawl(session);
      const state = async () =>
        Object.fromEntries(
          (await collect(urlStates(session))).map((s) => [new URL(s.url as string).pathname, s]),
        );
      const first = await state();
      assert.deepEqual(Object.keys(first), ['/', '/missing.html', '/x.html']);
      assert.equal(first['/missing.html']?.state, 'error');
      assert.equal(first['/missing.html']?.errorKind, 'permanent');
      assert.equal(first['/missing.html']?.httpStatus, 404);
      assert.equal(first['/x.html']?.state, 'indexed');

      // The home page now also links to a new page; the next discovery cycle visits the start URL again.
      writeFileSync(
        join(root, 'index.html'),
        page('Home', 'home, now with y', ['/x.html', '/missing.html', '/y.html']),
      );
      writeFileSync(join(root, 'y.html'), page('Y', 'y'));
      const later = new Date(Date.now() + 60_000);
      utimesSync(join(root, 'index.html'), later, later);
      const mark = own.requests.length;
      await crawl(session);
      const second = await state();
      assert.equal(second['/y.html']?.state, 'indexed', 'the new page is found and indexed');
      assert.deepEqual(second['/missing.html'], first['/missing.html'], 'a known error keeps its state');
      assert.deepEqual(second['/x.html'], first['/x.html'], 'a known indexed URL keeps its state');
      const again = own.requests.slice(mark).map((r) => r.path);
      assert.ok(
        again.includes('/') && !again.includes('/missing.html') && !again.includes('/x.html'),
        again.join(' '),
      );

      // The page is back: clear-errors forgets its error and queues it again, and the next crawl
      // fetches it though the home page answers 304 (which names no links): forgotten only, it
      // was never found again.
      writeFileSync(join(root, 'missing.html'), page('Missing', 'back again'));
      assert.equal(await clearErrors(session), 1);
      const cleared = await state();
      assert.deepEqual(Object.keys(cleared), ['/', '/missing.html', '/x.html', '/y.html']);
      assert.equal(cleared['/missing.html']?.state, 'pending');
      assert.equal(cleared['/missing.html']?.errorKind, null);
      const before = own.requests.length;
      await crawl(session);
      assert.equal((await state())['/missing.html']?.state, 'indexed');
      assert.deepEqual(
        own.requests
          .slice(before)
          .map((r) => r.path)
          .filter((p) => p !== '/'),
        ['/missing.html'],
      );
    } finally {
      await own.close();
    }
  });

  it('a refresh cycle a command starts (no schedule event) is recorded as the last one, as a seed run is', async () => {
    // `trawl refresh` on a deployed stack invokes the function with an event of its own: status
    // showed the last refresh as null (only the schedule's runs were recorded).
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('manual-run'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const before = new Date(session.now()).toISOString();
    await session.runner.invoke('refresh', { source: 'trawl', action: 'refresh' });
    const at = await session.hosts.getValue(lastRunKey('refresh'));
    assert.ok(at !== null && at >= before.slice(0, 19), `last-run#refresh: ${at}`);
    assert.equal(
      await session.hosts.getValue(scheduleRunKey('refresh')),
      null,
      'not taken for a schedule run',
    );
  });

  it('the local runner fires the discovery and refresh schedules as timers', async () => {
    const root = mkdtempSync(join(tmpdir(), 'trawl-timers-'));
    const own = await startSiteServer({ root });
    try {
      writeFileSync(join(root, 'index.html'), page('Home', 'home', ['/x.html']));
      writeFileSync(join(root, 'x.html'), page('X', 'x'));
      const session = await openSession(
        parseConfig({
          name: uniqueCrawlName('timers'),
          startUrls: [`${own.url}/`],
          fetch: { allowPrivateNetworks: true },
        }),
      );
      const runner = new LocalRunner({
        handlers: {
          seed: seedHandler,
          fetch: fetchHandler,
          extract: extractHandler,
          index: indexHandler,
          refresh: refreshHandler,
        },
        queueUrls: session.resources.queueUrls,
        monitor: session.monitor,
        pollers: session.clients,
        schedules: { discoveryMs: 300, refreshMs: 500 },
      });
      // No explicit seed: the first discovery tick starts the crawl.
      const deadline = Date.now() + 30_000;
      let added = false;
      const indexedY = () => own.requests.some((r) => r.path === '/y.html');
      await runner.watch(() => {
        // Once a discovery cycle got a 304 for the indexed home page, the site changes.
        if (!added && own.requests.some((r) => r.path === '/' && r.status === 304)) {
          writeFileSync(join(root, 'index.html'), page('Home', 'home, now with y', ['/x.html', '/y.html']));
          writeFileSync(join(root, 'y.html'), page('Y', 'y'));
          const later = new Date(Date.now() + 60_000);
          utimesSync(join(root, 'index.html'), later, later);
          added = true;
        }
        return (indexedY() && runner.fired.refresh >= 2) || Date.now() > deadline;
      });
      // What the last ticks started finishes on a runner without timers (with them it never goes quiet).
      await session.runner.drain();
      assert.ok(Date.now() <= deadline, 'stopped by the condition, not the deadline');
      assert.ok(runner.fired.seed >= 2 && runner.stats.seed.invocations === runner.fired.seed);
      assert.ok(runner.stats.refresh.invocations >= 2);
      const docs = (await collect(documents(session))).map((d) => new URL(d.url as string).pathname);
      assert.deepEqual(docs, ['/', '/x.html', '/y.html']);
      // Discovery cycles after the home page was indexed asked for it conditionally.
      const homes = own.requests.filter((r) => r.path === '/');
      assert.ok(homes.length >= 3, `${homes.length} fetches of the start URL`);
      assert.ok(homes.some((r) => r.headers['if-none-match'] && r.status === 304));
      assert.ok(
        homes.some((r) => r.headers['if-none-match'] && r.status === 200),
        'the changed home page came back whole',
      );
    } finally {
      await own.close();
    }
  });
});
