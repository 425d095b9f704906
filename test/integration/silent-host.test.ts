// A host that sends nothing back (a hung server, a firewall that drops) against the whole local
// pipeline on the emulator: each request to it costs a fetch invocation fetch.timeoutMs of waiting,
// so after two such requests in a row the host is held and its other URLs count their attempt
// unsent (politeness/host-turns.ts, SILENT_REQUESTS). Real loopback servers whose routes never
// answer; the requests they received are counted.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = ['/p1', '/p2', '/p3', '/p4', '/p5', '/p6'];
const TIMEOUT_MS = 600;
/** refresh.maxTemporaryErrors: each URL is tried this many times more after its first attempt. */
const RETRIES = 3;
/** What the URLs' attempts would send without the hold: every attempt of every URL. */
const EVERY_ATTEMPT = PAGES.length * (RETRIES + 1);

const html = (title: string, links: string[] = []) =>
  `<html><head><title>${title}</title></head><body><p>${title} text</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join(' ')}</body></html>`;

/** A route that takes the request and never answers (the crawler's timeout closes it). */
const SILENT = { handler: () => {} };

const input = (name: string, site: SiteServer, fetch: CrawlConfigInput['fetch'] = {}): CrawlConfigInput => ({
  name: uniqueCrawlName(name),
  startUrls: [`${site.url}/`],
  fetch: { allowPrivateNetworks: true, timeoutMs: TIMEOUT_MS, ...fetch },
  refresh: { maxAge: '48h', maxTemporaryErrors: RETRIES },
});

const requestsTo = (site: SiteServer, paths: string[]) =>
  site.requests.filter((r) => paths.includes(r.path)).length;

async function statesByPath(session: Awaited<ReturnType<typeof openSession>>) {
  const out = new Map<string, Record<string, unknown>>();
  for await (const s of urlStates(session)) out.set(new URL(String(s.url)).pathname, s);
  return out;
}

describe('a host that sends nothing back', () => {
  let emu: TestEmulator;
  const sites: SiteServer[] = [];
  const site = async () => {
    const s = await startSiteServer({});
    sites.push(s);
    return s;
  };

  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    for (const s of sites) await s.close();
    await emu?.stop();
  });

  for (const waitMs of [0, 200])
    it(`is held after two silent requests in a row (waitBetweenRequestsMs ${waitMs}): its URLs end as temporary errors, most attempts unsent`, async () => {
      const s = await site();
      s.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', PAGES) });
      for (const p of PAGES) s.route(p, SILENT);
      const session = await openSession(parseConfig(input('silent', s, { waitBetweenRequestsMs: waitMs })));
      await crawl(session);

      const sent = requestsTo(s, PAGES);
      console.log(`requests to the silent pages: ${sent} (every attempt: ${EVERY_ATTEMPT})`);
      assert.ok(sent >= 2, `the host was tried: ${sent}`);
      assert.ok(sent <= EVERY_ATTEMPT / 2, `${sent} requests to a silent host, of ${EVERY_ATTEMPT} attempts`);
      const states = await statesByPath(session);
      assert.equal(states.get('/')?.state, 'indexed');
      const codes = new Set<string>();
      for (const p of PAGES) {
        const st = states.get(p);
        assert.deepEqual([st?.state, st?.errorKind], ['error', 'temporary'], `${p}: ${JSON.stringify(st)}`);
        codes.add(String(st?.errorCode));
      }
      assert.ok(codes.has('host-not-answering'), [...codes].join());
      const unsent = PAGES.map((p) => states.get(p)).find((st) => st?.errorCode === 'host-not-answering');
      assert.match(
        String(unsent?.note),
        /^not sent: the host sent nothing back to its last \d+ requests within fetch\.timeoutMs \(600 ms\)$/,
      );
    });

  it('a host silent for a while and then back: after the hold one request tries it, and every page is indexed', async () => {
    const s = await site();
    s.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', PAGES) });
    // Its first two page requests get nothing back (a restart); every later one is answered.
    let silentLeft = 2;
    for (const p of PAGES)
      s.route(p, {
        handler: (_req, res) => {
          if (silentLeft-- > 0) return;
          res.writeHead(200, { 'content-type': 'text/html' }).end(html(p));
        },
      });
    const session = await openSession(parseConfig(input('back', s, { waitBetweenRequestsMs: 100 })));
    await crawl(session);
    const states = await statesByPath(session);
    for (const p of PAGES)
      assert.equal(states.get(p)?.state, 'indexed', `${p}: ${JSON.stringify(states.get(p))}`);
    // Held after the two: the others waited for it, unsent, instead of each sending into the silence.
    assert.equal(requestsTo(s, PAGES), PAGES.length + 2);
  });

  it('one silent page of a host that answers the rest: every other page indexed, none held unsent', async () => {
    const s = await site();
    const fine = ['/a', '/b', '/c', '/d'];
    s.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', ['/slow', ...fine]) });
    for (const p of fine) s.route(p, { headers: { 'content-type': 'text/html' }, body: html(p) });
    s.route('/slow', SILENT);
    const session = await openSession(parseConfig(input('one-silent', s, { waitBetweenRequestsMs: 100 })));
    await crawl(session);
    const states = await statesByPath(session);
    for (const p of fine)
      assert.equal(states.get(p)?.state, 'indexed', `${p}: ${JSON.stringify(states.get(p))}`);
    assert.deepEqual([states.get('/slow')?.state, states.get('/slow')?.errorKind], ['error', 'temporary']);
    for (const p of fine) assert.equal(requestsTo(s, [p]), 1, `${p} fetched once`);
  });

  it('a host whose search pages hang and whose documents answer: only /search is held, every document indexed', async () => {
    // Until 2026-11-28 the hung search pages held the whole host: 10 of these 40 documents ended as
    // `host-not-answering` errors without a request ever sent to them.
    const s = await site();
    const docs = Array.from({ length: 40 }, (_, i) => `/doc/${i}`);
    const searches = Array.from({ length: 8 }, (_, i) => `/search?q=${i}`);
    const links = [...docs.slice(0, 20), ...searches, ...docs.slice(20)];
    s.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', links) });
    for (const p of docs) s.route(p, { headers: { 'content-type': 'text/html' }, body: html(p) });
    for (const p of searches) s.route(p, SILENT);
    const session = await openSession(parseConfig(input('section', s)));
    await crawl(session);
    const states = new Map<string, Record<string, unknown>>();
    for await (const st of urlStates(session)) {
      const u = new URL(String(st.url));
      states.set(u.pathname + u.search, st);
    }
    const notIndexed = docs.filter((p) => states.get(p)?.state !== 'indexed');
    assert.deepEqual(notIndexed, [], JSON.stringify(states.get(notIndexed[0] ?? '')));
    for (const p of docs) assert.equal(requestsTo(s, [p]), 1, `${p} fetched once`);
    const sent = s.requests.filter((r) => r.path.startsWith('/search')).length;
    const every = searches.length * (RETRIES + 1);
    console.log(`requests to the hung search pages: ${sent} (every attempt: ${every})`);
    assert.ok(sent <= every / 2, `${sent} requests to hung pages, of ${every} attempts`);
    const notes = searches.map((p) => String(states.get(p)?.note));
    assert.ok(
      notes.some((n) =>
        /^not sent: the host sent nothing back to its last \d+ requests under \/search within/.test(n),
      ),
      notes.join('\n'),
    );
  });

  it('a crawled host gone silent: the refresh sends it few requests and every document stays', async () => {
    const s = await site();
    s.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', PAGES) });
    for (const p of PAGES) s.route(p, { headers: { 'content-type': 'text/html' }, body: html(p) });
    const config = parseConfig(input('gone-silent', s, { waitBetweenRequestsMs: 100 }));
    await crawl(await openSession(config));
    const fetched = requestsTo(s, PAGES);
    assert.equal(fetched, PAGES.length);

    for (const p of ['/', ...PAGES]) s.route(p, SILENT);
    const before = requestsTo(s, ['/', ...PAGES]);
    const later = await openSession(config, { now: new Date(Date.now() + 3 * 86_400_000) });
    await refresh(later);
    const sent = requestsTo(s, ['/', ...PAGES]) - before;
    const every = (PAGES.length + 1) * (RETRIES + 1);
    console.log(`refresh requests to the silent host: ${sent} (every attempt: ${every})`);
    assert.ok(sent <= every / 2, `${sent} requests to a silent host, of ${every} attempts`);
    const states = await statesByPath(later);
    for (const p of ['/', ...PAGES])
      assert.deepEqual([states.get(p)?.state, states.get(p)?.errorKind], ['error', 'temporary'], p);
    // A temporary error keeps its document (seed 001): the refresh deleted none.
    const docs = await collect(documents(later));
    assert.deepEqual(docs.map((d) => new URL(String(d.url)).pathname).sort(), ['/', ...PAGES].sort());
  });
});
