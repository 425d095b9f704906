import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { clearErrors, crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, body: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${body}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

async function collect<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}

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
    const links = ['/a.html', '/b.html', '/c.html', '/d.html', '/e.html', '/f.html'];
    writeFileSync(join(dir, 'index.html'), page('Home', 'the home page', links));
    writeFileSync(join(dir, 'a.html'), page('A', 'page a, soon gone'));
    writeFileSync(join(dir, 'b.html'), page('B', 'page b, first version'));
    writeFileSync(join(dir, 'c.html'), page('C', 'page c, never changes'));
    writeFileSync(join(dir, 'd.html'), page('D', 'page d, soon excluded by a rule'));
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
      ['/', '/a.html', '/b.html', '/c.html', '/d.html', '/e.html', '/f.html'],
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
    const changed = parseConfig({ ...input, rules: [{ match: { path: '/d.html' }, actions: ['ignore'] }] });
    const second = await openSession(changed, { now });
    const t0 = Date.now();
    const summary = (await refresh(second)) as { due: number; requeued: number; deleted: number };
    console.log("refresh ms", Date.now() - t0, summary, second.runner.stats);

    assert.equal(summary.due, 7);
    assert.equal(summary.deleted, 1, 'd.html is deleted by the refresh stage itself');
    const after = await collect(documents(second));
    assert.deepEqual(
      after.map((d) => new URL(d.url as string).pathname),
      ['/', '/b.html', '/c.html', '/f.html'],
    );
    const bAfter = after.find((d) => (d.url as string).endsWith('/b.html'));
    assert.match(bAfter?.content as string, /second and longer version/);
    assert.notEqual(bAfter?.hash, bBefore?.hash);
    assert.ok(Date.parse(bAfter?.indexedAt as string) >= now.getTime() - 60_000, 'reindexed at the shifted time');

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

    // The change feed names each deletion with its reason; the unchanged pages wrote nothing.
    const feed = await readChanges(second, { since: now.toISOString().slice(0, 10) });
    const deletes = Object.fromEntries(feed.filter((c) => c.type === 'delete').map((c) => [new URL(c.url).pathname, c.reason]));
    assert.deepEqual(Object.keys(deletes).sort(), ['/a.html', '/d.html', '/e.html']);
    assert.match(deletes['/a.html'] as string, /^permanent-error: .*404/);
    assert.match(deletes['/d.html'] as string, /^out-of-scope: rule 0: ignore/);
    assert.match(deletes['/e.html'] as string, /^temporary-errors: .*503/);
    const upserts = feed.filter((c) => c.type === 'upsert').map((c) => new URL(c.url).pathname);
    assert.deepEqual(upserts, ['/b.html']);

    // URL states: removed URLs are forgotten, the others indexed at the shifted time.
    const states = await collect(urlStates(second));
    assert.deepEqual(
      states.map((s) => [new URL(s.url as string).pathname, s.state]),
      [['/', 'indexed'], ['/b.html', 'indexed'], ['/c.html', 'indexed'], ['/f.html', 'indexed']],
    );
    assert.ok(states.every((s) => Date.parse(s.lastFetched as string) >= now.getTime() - 60_000));
  });
});
