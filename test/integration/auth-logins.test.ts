/**
 * Form logins that fail, and the accounts they belong to, through the real pipeline on the
 * emulator against a real loopback site:
 * - a wrong password on a site that sets a cookie anyway and sends every page to its login: the
 *   crawl ends with the pages as `login-failed` after one login (with a politeness delay it used
 *   to log in again on every pass, for ever);
 * - a login page that answers 500: one login for all the pages, the status in their note (a login
 *   was sent for every URL, ten within 40 ms: enough to lock a directory account);
 * - two accounts on one site (two prefixes): each prefix gets its own session (the first account's
 *   session went to both);
 * - a page that answers 403 under a login that works: recorded as the page's own 403 after one
 *   new login, not retried as a session problem with a login each time.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { resetAuthSessions } from '../../shared/stages/fetch-auth.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = ['/app/p0', '/app/p1', '/app/p2', '/app/p3'];
const ROTATING = ['/rot/r0', '/rot/r1', '/rot/r2', '/rot/r3'];

function readBody(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => resolve(new URLSearchParams(body)));
  });
}

describe('form logins that fail, and two accounts on one site', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  /** login POSTs by path */
  const posts = new Map<string, number>();
  /** session id -> user */
  const sessions = new Map<string, string>();
  let loginStatus = 200;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { status: 404, body: '' });
    const login = (path: string, user: string, password: string) =>
      site.route(path, {
        handler: async (req, res) => {
          posts.set(path, (posts.get(path) ?? 0) + 1);
          const form = await readBody(req);
          if (loginStatus !== 200) return void res.writeHead(loginStatus).end('login service down');
          if (form.get('user') !== user || form.get('pass') !== password)
            // A failed login sets a cookie too (a flash message): any cookie is no proof of success.
            return void res.writeHead(302, { location: `${path}?error=1`, 'set-cookie': 'flash=bad' }).end();
          const sid = `${user}-${sessions.size}`;
          sessions.set(sid, user);
          res.writeHead(302, { location: '/', 'set-cookie': `sid=${sid}; Path=/` }).end();
        },
      });
    login('/login', 'ann', 'right');
    login('/login-bob', 'bob', 'bobs');
    const page = (path: string, user: string, status = 200) =>
      site.route(path, {
        handler: (req, res) => {
          const sid = /sid=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1] ?? '';
          if (sessions.get(sid) !== user) return void res.writeHead(302, { location: '/login?next=1' }).end();
          res.writeHead(status, { 'content-type': 'text/html' });
          res.end(`<html><title>${path}</title><p>${path} for ${user}</p></html>`);
        },
      });
    for (const p of PAGES) page(p, 'ann');
    // A session id rotated on every answer, the old one ended at once (PHP's
    // session_regenerate_id(true) on each request).
    for (const p of ROTATING)
      site.route(p, {
        handler: (req, res) => {
          const sid = /sid=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1] ?? '';
          if (sessions.get(sid) !== 'ann')
            return void res.writeHead(302, { location: '/login?next=1' }).end();
          sessions.delete(sid);
          const next = `ann-${sessions.size}-${p.slice(-1)}`;
          sessions.set(next, 'ann');
          res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': `sid=${next}; Path=/; HttpOnly` });
          res.end(`<html><title>${p}</title><p>${p} for ann, rotated</p></html>`);
        },
      });
    page('/app/forbidden', 'ann', 403);
    page('/bob/b0', 'bob');
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
    delete process.env.TRAWL_TEST_LOGIN_PASS;
  });
  beforeEach(() => {
    posts.clear();
    loginStatus = 200;
    resetAuthSessions();
  });

  const form = (path: string, user: string, env: string) => ({
    loginUrl: `${site.url}${path}`,
    fields: { user, pass: { env } },
  });

  async function crawlPages(paths: string[], auth: unknown[], fetch: Record<string, unknown> = {}) {
    const config = parseConfig({
      name: uniqueCrawlName('logins'),
      startUrls: paths.map((p) => `${site.url}${p}`),
      discovery: false,
      refresh: { maxTemporaryErrors: 1 },
      fetch: { allowPrivateNetworks: true, auth, ...fetch },
    });
    const session = await openSession(config);
    await crawl(session);
    const states = await collect(urlStates(session));
    return new Map(states.map((s) => [new URL(String(s.url)).pathname, s]));
  }

  it('a wrong password on a site that sets a cookie anyway: one login, the pages login-failed, the crawl ends', async () => {
    process.env.TRAWL_TEST_LOGIN_PASS = 'wrong';
    const states = await crawlPages(
      PAGES,
      [{ urlPrefix: `${site.url}/app/`, form: form('/login', 'ann', 'TRAWL_TEST_LOGIN_PASS') }],
      { waitBetweenRequestsMs: 1000 },
    );
    for (const p of PAGES) {
      const s = states.get(p);
      assert.deepEqual([s?.state, s?.errorKind, s?.errorCode], ['error', 'temporary', 'login-failed'], p);
    }
    // The redirect's query is left out of the note: a login page may echo the fields back in it.
    assert.match(
      String(states.get('/app/p0')?.note),
      /logged out right after the login \(a redirect to [^?)]*\/login\)/,
    );
    assert.equal(
      posts.get('/login'),
      1,
      'one login, remembered as failed for the other pages and the retries',
    );
  });

  it('a login page that answers 500: one login for every page, its status in their note', async () => {
    process.env.TRAWL_TEST_LOGIN_PASS = 'right';
    loginStatus = 500;
    const states = await crawlPages(PAGES, [
      { urlPrefix: `${site.url}/app/`, form: form('/login', 'ann', 'TRAWL_TEST_LOGIN_PASS') },
    ]);
    for (const p of PAGES) assert.equal(states.get(p)?.errorCode, 'login-failed', p);
    assert.match(String(states.get('/app/p1')?.note), /the login answered HTTP 500/);
    assert.equal(posts.get('/login'), 1);
  });

  it('a session id the site rotates on every page: taken from each answer, one login for all the pages', async () => {
    process.env.TRAWL_TEST_LOGIN_PASS = 'right';
    const states = await crawlPages(
      ROTATING,
      [{ urlPrefix: `${site.url}/rot/`, form: form('/login', 'ann', 'TRAWL_TEST_LOGIN_PASS') }],
      // One request at a time: the old id ends at once, so two pages in flight would share it.
      { concurrency: 1, maxInvocations: 1 },
    );
    for (const p of ROTATING) assert.equal(states.get(p)?.state, 'indexed', p);
    // Before, only the login's cookie was kept: each next page was refused and logged in again.
    const seen = site.requests.filter((r) => r.path.startsWith('/rot/') || r.path.startsWith('/login'));
    assert.equal(
      posts.get('/login'),
      1,
      seen.map((r) => `${r.method} ${r.path} ${r.status} ${r.headers.cookie ?? ''}`).join(' | '),
    );
  });

  it('two accounts on one site: each prefix has its own session', async () => {
    process.env.TRAWL_TEST_LOGIN_PASS = 'right';
    process.env.TRAWL_TEST_BOB_PASS = 'bobs';
    try {
      const states = await crawlPages(
        ['/app/p0', '/bob/b0'],
        [
          { urlPrefix: `${site.url}/app/`, form: form('/login', 'ann', 'TRAWL_TEST_LOGIN_PASS') },
          { urlPrefix: `${site.url}/bob/`, form: form('/login-bob', 'bob', 'TRAWL_TEST_BOB_PASS') },
        ],
      );
      assert.equal(states.get('/app/p0')?.state, 'indexed');
      assert.equal(states.get('/bob/b0')?.state, 'indexed');
      assert.deepEqual([posts.get('/login'), posts.get('/login-bob')], [1, 1]);
      const bobRequests = site.requests.filter((r) => r.path === '/bob/b0');
      assert.ok(
        bobRequests.every((r) => String(r.headers.cookie).includes('sid=bob-')),
        `bob's page got bob's session only: ${bobRequests.map((r) => r.headers.cookie).join(' | ')}`,
      );
    } finally {
      delete process.env.TRAWL_TEST_BOB_PASS;
    }
  });

  it("a 403 under a login that works is the page's own answer: one new login, a permanent http-403", async () => {
    process.env.TRAWL_TEST_LOGIN_PASS = 'right';
    const states = await crawlPages(
      [...PAGES, '/app/forbidden'],
      [{ urlPrefix: `${site.url}/app/`, form: form('/login', 'ann', 'TRAWL_TEST_LOGIN_PASS') }],
      { concurrency: 1 },
    );
    for (const p of PAGES) assert.equal(states.get(p)?.state, 'indexed', p);
    const forbidden = states.get('/app/forbidden');
    assert.deepEqual([forbidden?.errorKind, forbidden?.errorCode], ['permanent', 'http-403']);
    assert.ok((posts.get('/login') ?? 0) <= 2, `${posts.get('/login')} logins`);
  });

  it('a secret that stops resolving during the run stops the local run with its error', {
    timeout: 120_000,
  }, async () => {
    // The fetch function failed on it at every invocation and the drain invoked it for ever.
    process.env.TRAWL_TEST_GONE_PASS = 'right';
    const config = parseConfig({
      name: uniqueCrawlName('logins'),
      startUrls: [`${site.url}/app/p0`],
      discovery: false,
      fetch: {
        allowPrivateNetworks: true,
        auth: [{ urlPrefix: `${site.url}/app/`, form: form('/login', 'ann', 'TRAWL_TEST_GONE_PASS') }],
      },
    });
    const session = await openSession(config);
    delete process.env.TRAWL_TEST_GONE_PASS;
    await crawl(session);
    assert.match(
      String(session.runner.configFailure?.message),
      /fetch\.auth\.0\.form\.fields\.pass: environment variable TRAWL_TEST_GONE_PASS is not set/,
    );
    assert.equal(posts.get('/login'), undefined, 'no login without the password');
  });
});
