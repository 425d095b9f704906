/**
 * A page behind one server error comes back (seed 001: "the error status is remembered for each
 * URL", "documents in error are refreshed like other documents"). Real loopback site whose pages
 * carry Last-Modified (the page linking to the leaf answers 304 at every refresh, so its links are
 * not read again), real emulator, shifted clock:
 * - the leaf answers 502 once at a refresh: its document is deleted at once, its URL kept in error;
 * - the next refresh (maxAge later) finds it back: indexed again. Before, the URL was forgotten with
 *   its document and never fetched again while the linking page answered 304;
 * - a leaf that answers 404 at two refreshes in a row is forgotten at the second;
 * - a start URL whose host is gone (DNS) for two refreshes is never forgotten: it comes back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, refresh, stateOf, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

/** a refresh cycle's step: a day (maxAge) and two hours, so what the last one fetched is due */
const STEP = 86_400_000 + 7_200_000;
const MODIFIED = 'Sun, 01 Nov 2026 00:00:00 GMT';
const html = (title: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title} text</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

describe('refresh: a page behind a server error comes back; one gone twice is forgotten', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  /** path -> status it answers now (200 by default) */
  const status = new Map<string, number>();

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { status: 404, body: '' });
    const serve = (path: string, body: string) =>
      site.route(path, {
        handler: (req, res) => {
          const code = status.get(path) ?? 200;
          if (code !== 200) return void res.writeHead(code, { 'content-type': 'text/plain' }).end('error');
          if (req.headers['if-modified-since'] === MODIFIED) return void res.writeHead(304).end();
          res.writeHead(200, { 'content-type': 'text/html', 'last-modified': MODIFIED }).end(body);
        },
      });
    serve('/', html('Home', ['/section.html']));
    serve('/section.html', html('Section', ['/leaf.html', '/gone.html']));
    serve('/leaf.html', html('Leaf'));
    serve('/gone.html', html('Gone'));
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('a 502 at one refresh: deleted, kept in error, indexed again at the next; a 404 twice: forgotten', async () => {
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('recovery'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d' },
    };
    const config = parseConfig(input);
    const t0 = Date.now();
    await crawl(await openSession(config));
    const at = async (days: number) => {
      const s = await openSession(config, { now: new Date(t0 + days * STEP) });
      await refresh(s);
      const states = new Map((await collect(urlStates(s))).map((u) => [new URL(String(u.url)).pathname, u]));
      const docs = (await collect(documents(s))).map((d) => new URL(String(d.url)).pathname);
      return { s, states, docs };
    };

    status.set('/leaf.html', 502);
    status.set('/gone.html', 404);
    const first = await at(1);
    assert.deepEqual(first.docs, ['/', '/section.html'], 'both documents deleted at once (seed 001)');
    assert.deepEqual(
      [first.states.get('/leaf.html')?.state, first.states.get('/leaf.html')?.errorCode],
      ['error', 'http-502'],
      'the URL is remembered in error',
    );
    assert.equal(first.states.get('/gone.html')?.state, 'error');

    status.delete('/leaf.html');
    const sinceSecond = site.requests.length;
    const second = await at(2);
    assert.deepEqual(second.docs, ['/', '/leaf.html', '/section.html'], 'the leaf is back');
    assert.equal(second.states.get('/leaf.html')?.state, 'indexed');
    assert.equal(
      site.requests.slice(sinceSecond).find((r) => r.path === '/section.html')?.status,
      304,
      'the page linking to it answered 304: its links were not read again',
    );
    assert.equal(second.states.has('/gone.html'), false, 'a 404 again on a URL in error: forgotten');
    // `trawl explain --state` reads one URL's records, not the whole listing: the same line for
    // every URL after two cycles' manifests, none for the forgotten one.
    for (const [path, line] of second.states)
      assert.deepEqual(await stateOf(second.s, String(line.url)), line, path);
    assert.equal(await stateOf(second.s, `${site.url}/gone.html`), undefined);
    const feed = await readChanges(second.s);
    const leaf = feed.filter((c) => c.url.endsWith('/leaf.html')).map((c) => [c.type, c.reason]);
    assert.deepEqual(leaf.slice(-2), [
      ['delete', 'permanent-error: http-502 (HTTP 502)'],
      ['upsert', 'new'],
    ]);
  });

  it('with fetch.serverErrors "temporary", a site-wide outage (503 without Retry-After, 502) deletes nothing', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('outage'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true, serverErrors: 'temporary' },
      refresh: { maxAge: '1d' },
    });
    const t0 = Date.now();
    status.clear(); // the case above left /gone.html answering 404
    await crawl(await openSession(config));
    for (const path of ['/', '/section.html', '/leaf.html', '/gone.html']) status.set(path, 503);
    status.set('/leaf.html', 502);
    try {
      const s = await openSession(config, { now: new Date(t0 + STEP) });
      await refresh(s);
      const states = new Map((await collect(urlStates(s))).map((u) => [new URL(String(u.url)).pathname, u]));
      const docs = (await collect(documents(s))).map((d) => new URL(String(d.url)).pathname);
      assert.deepEqual(docs, ['/', '/gone.html', '/leaf.html', '/section.html'], 'every document kept');
      assert.deepEqual(
        [
          states.get('/leaf.html')?.state,
          states.get('/leaf.html')?.errorKind,
          states.get('/leaf.html')?.errorCode,
        ],
        ['error', 'temporary', 'http-502'],
      );
      assert.equal(states.get('/')?.errorKind, 'temporary');
      assert.equal((await readChanges(s)).filter((c) => c.type === 'delete').length, 0);
    } finally {
      status.clear();
    }
  });

  it('a start URL whose host is gone at two refreshes is never forgotten, and comes back', async () => {
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('recovery-start'),
      startUrls: ['http://start.test/'],
      fetch: { allowPrivateNetworks: true, resolve: { 'start.test': '127.0.0.1' } },
      refresh: { maxAge: '1d' },
    };
    // The site answers on its own port; the start URL names that port through the resolve entry.
    const url = `http://start.test:${site.port}/`;
    input.startUrls = [url];
    const t0 = Date.now();
    await crawl(await openSession(parseConfig(input)));
    const gone = parseConfig({ ...input, fetch: { allowPrivateNetworks: true } });
    for (const days of [1, 2]) {
      const s = await openSession(gone, { now: new Date(t0 + days * STEP) });
      await refresh(s);
      const [state] = await collect(urlStates(s));
      assert.deepEqual(
        [state?.url, state?.state, state?.errorKind],
        [url, 'error', 'permanent'],
        `day ${days}`,
      );
    }
    const back = await openSession(parseConfig(input), { now: new Date(t0 + 3 * STEP) });
    await refresh(back);
    const docs = (await collect(documents(back))).map((d) => d.url);
    assert.ok(docs.includes(url), JSON.stringify(docs));
  });
});
