/**
 * RFC 9309 §2.3.1.3–4: when robots.txt answers a server error or the site cannot be reached, the
 * whole site counts as disallowed for a while. Trawl records that as what it is, a temporary error
 * naming robots.txt (retried, then kept for the refresh cycle), not as the site's own disallow.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../cli/emulator.ts';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

async function statesOf(...startUrls: string[]) {
  const config = parseConfig({
    name: uniqueCrawlName('robots-down'),
    startUrls,
    fetch: { allowPrivateNetworks: true, timeoutMs: 3000 },
    refresh: { maxTemporaryErrors: 1 },
  });
  const session = await openSession(config);
  await crawl(session);
  const out = [];
  for await (const u of urlStates(session)) out.push(u);
  return out;
}

describe('robots.txt unavailable', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/robots.txt': { status: 500, body: 'oops' },
        '/': { headers: { 'content-type': 'text/html' }, body: '<title>Home</title><a href="/a.html">a</a>' },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('a 5xx robots.txt: the page is not fetched and ends as a temporary robots-unavailable error', async () => {
    const states = await statesOf(`${site.url}/`);
    assert.equal(states.length, 1);
    assert.equal(states[0]?.state, 'error');
    assert.equal(states[0]?.errorKind, 'temporary');
    assert.equal(states[0]?.errorCode, 'robots-unavailable');
    assert.match(String(states[0]?.note), /HTTP 500/);
    assert.equal(site.requests.filter((r) => r.path === '/').length, 0, 'the page itself is never requested');
  });

  it('an unreachable site: the same, naming the connection error', async () => {
    const port = await freePort();
    const states = await statesOf(`http://127.0.0.1:${port}/`);
    assert.equal(states[0]?.state, 'error');
    assert.equal(states[0]?.errorCode, 'robots-unavailable');
    assert.match(String(states[0]?.note), /connection-refused/);
  });

  it('a 429 or 503 robots.txt with a Retry-After: asked again then, and the site crawled (one lost it for the run)', async () => {
    // Two sites in one crawl (each crawl here waits out the extract stage's batching window).
    const sites = await Promise.all([startSiteServer({}), startSiteServer({})]);
    try {
      for (const [i, status] of [429, 503].entries()) {
        const other = sites[i] as SiteServer;
        let refused = 0;
        other.route('/robots.txt', {
          handler: (_req, res) => {
            if (refused++ === 0) {
              res.writeHead(status, { 'Retry-After': '2' });
              res.end('busy');
            } else {
              res.writeHead(200, { 'content-type': 'text/plain' });
              res.end('User-agent: *\nDisallow: /private/\n');
            }
          },
        });
        other.route('/', {
          headers: { 'content-type': 'text/html' },
          body: `<title>Home ${status}</title><a href="/a.html">a</a> <a href="/private/x.html">x</a>`,
        });
        other.route('/a.html', {
          headers: { 'content-type': 'text/html' },
          body: `<title>A ${status}</title>`,
        });
      }
      const states = await statesOf(...sites.map((o) => `${o.url}/`));
      for (const [i, status] of [429, 503].entries()) {
        const other = sites[i] as SiteServer;
        const byPath = new Map(
          states
            .filter((u) => String(u.url).startsWith(other.url))
            .map((u) => [new URL(String(u.url)).pathname, u]),
        );
        assert.equal(byPath.get('/')?.state, 'indexed', `${status}: ${JSON.stringify(byPath.get('/'))}`);
        assert.equal(byPath.get('/a.html')?.state, 'indexed', String(status));
        assert.equal(
          byPath.get('/private/x.html')?.state,
          'ignored',
          `${status}: the robots.txt read afterwards is obeyed`,
        );
        const asked = other.requests.filter((r) => r.path === '/robots.txt');
        assert.equal(asked.length, 2, String(status));
        assert.ok(
          (asked[1]?.at ?? 0) - (asked[0]?.at ?? 0) >= 2000,
          `${status}: asked again after its Retry-After`,
        );
      }
    } finally {
      await Promise.all(sites.map((o) => o.close()));
    }
  });
});
