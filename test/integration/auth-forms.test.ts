/**
 * Login forms that carry a token (fetch.auth form.readForm), through the real pipeline on the
 * emulator against real loopback sites built as the frameworks build them:
 * - Django's: the login page (reached through a redirect that adds the slash) sets a `csrftoken`
 *   cookie and puts the same token in a hidden field; a POST without both, or without an Origin
 *   and Referer of the site, is a 403. The session ends mid-crawl: the new login reads the page
 *   again for a new token.
 * - Keycloak's: the form posts to an action whose query holds a one-time session code bound to
 *   the `AUTH_SESSION_ID` cookie the page set, and the submit button's name must come with it.
 * - without readForm the Django login is refused, and the note says what to set;
 * - a login page with no login form: a temporary login-failed saying so.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { resetAuthSessions } from '../../shared/stages/fetch-auth.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const APP_PAGES = ['/app/p0', '/app/p1', '/app/p2', '/app/p3'];
const DOCS_PAGES = ['/docs/d0', '/docs/d1'];
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const token = () => randomBytes(12).toString('hex');

function readBody(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => resolve(new URLSearchParams(body)));
  });
}

function cookie(req: http.IncomingMessage, name: string): string | undefined {
  return new RegExp(`(?:^|; )${name}=([^;]*)`).exec(req.headers.cookie ?? '')?.[1];
}

describe('fetch.auth form.readForm: login forms that carry a token', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  /** Django: session id -> user; the tokens handed out */
  const djangoSessions = new Set<string>();
  /** why each Django login POST was refused or accepted, in order */
  const djangoPosts: string[] = [];
  /** Keycloak: session code -> AUTH_SESSION_ID it was issued with */
  const codes = new Map<string, string>();
  const keycloakSessions = new Set<string>();
  const keycloakPosts: string[] = [];
  /** the Django site ends every session once, after this many pages were served (-1: never) */
  let endSessionsAfter = -1;
  let served = 0;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { status: 404, body: '' });
    // Django: APPEND_SLASH redirects /accounts/login to /accounts/login/.
    site.route('/accounts/login', {
      handler: (req, res) => {
        const query = (req.url ?? '').slice('/accounts/login'.length);
        res.writeHead(301, { location: `/accounts/login/${query}` }).end();
      },
    });
    site.route('/accounts/login/', {
      handler: async (req, res) => {
        if (req.method === 'GET') {
          const csrf = cookie(req, 'csrftoken') ?? token();
          res.writeHead(200, {
            'content-type': 'text/html',
            'set-cookie': `csrftoken=${csrf}; Path=/; SameSite=Lax`,
          });
          return void res.end(`<html><title>Log in</title>
            <form action="/search" method="get"><input name="q"></form>
            <form method="post">
              <input type="hidden" name="csrfmiddlewaretoken" value="${csrf}">
              <input type="text" name="username"><input type="password" name="password">
              <input type="hidden" name="next" value="/app/">
              <input type="submit" value="Log in">
            </form></html>`);
        }
        const form = await readBody(req);
        const origin = site.url;
        const csrf = cookie(req, 'csrftoken');
        const why =
          !csrf || form.get('csrfmiddlewaretoken') !== csrf
            ? 'CSRF token missing or incorrect'
            : req.headers.origin !== origin || !String(req.headers.referer).startsWith(`${origin}/`)
              ? 'Origin or Referer checking failed'
              : form.get('next') !== '/app/'
                ? 'no next'
                : form.get('username') !== 'ann' || form.get('password') !== PASSWORD
                  ? 'wrong password'
                  : 'ok';
        djangoPosts.push(why);
        if (why === 'wrong password')
          return void res.writeHead(200, { 'content-type': 'text/html' }).end('<form>');
        if (why !== 'ok')
          return void res.writeHead(403, { 'content-type': 'text/html' }).end(`<h1>403 ${why}</h1>`);
        const sid = token();
        djangoSessions.add(sid);
        res.writeHead(302, { location: '/app/', 'set-cookie': `sessionid=${sid}; Path=/; HttpOnly` }).end();
      },
    });
    for (const p of APP_PAGES)
      site.route(p, {
        handler: (req, res) => {
          if (!djangoSessions.has(cookie(req, 'sessionid') ?? ''))
            return void res.writeHead(302, { location: `/accounts/login/?next=${p}` }).end();
          if (++served === endSessionsAfter) djangoSessions.clear();
          res
            .writeHead(200, { 'content-type': 'text/html' })
            .end(`<html><title>${p}</title><p>${p} for ann</p></html>`);
        },
      });
    // Keycloak: the action carries a session code bound to the page's AUTH_SESSION_ID cookie.
    site.route('/realms/corp/protocol/openid-connect/auth', {
      handler: (_req, res) => {
        const session = token();
        const code = token();
        codes.set(code, session);
        res.writeHead(200, {
          'content-type': 'text/html',
          'set-cookie': `AUTH_SESSION_ID=${session}; Path=/realms/corp/`,
        });
        res.end(`<html><form id="kc-form-login" method="post"
            action="${site.url}/realms/corp/login-actions/authenticate?session_code=${code}&amp;tab_id=t1">
          <input name="username" type="text"><input name="password" type="password">
          <input type="checkbox" name="rememberMe">
          <input type="hidden" name="credentialId" value="">
          <input type="submit" name="login" value="Sign In">
        </form></html>`);
      },
    });
    site.route('/realms/corp/login-actions/authenticate', {
      handler: async (req, res) => {
        const form = await readBody(req);
        const code = new URL(req.url ?? '/', site.url).searchParams.get('session_code') ?? '';
        const why =
          codes.get(code) === undefined || codes.get(code) !== cookie(req, 'AUTH_SESSION_ID')
            ? 'session code not of this session'
            : form.get('login') !== 'Sign In' || form.has('rememberMe') || !form.has('credentialId')
              ? 'not the form as a browser sends it'
              : form.get('username') !== 'ann' || form.get('password') !== PASSWORD
                ? 'wrong password'
                : 'ok';
        keycloakPosts.push(why);
        codes.delete(code);
        if (why !== 'ok') return void res.writeHead(400, { 'content-type': 'text/html' }).end(why);
        const sid = token();
        keycloakSessions.add(sid);
        res.writeHead(302, { location: '/docs/', 'set-cookie': `KEYCLOAK_SESSION=${sid}; Path=/` }).end();
      },
    });
    for (const p of DOCS_PAGES)
      site.route(p, {
        handler: (req, res) => {
          if (!keycloakSessions.has(cookie(req, 'KEYCLOAK_SESSION') ?? ''))
            return void res.writeHead(302, { location: '/realms/corp/protocol/openid-connect/auth' }).end();
          res
            .writeHead(200, { 'content-type': 'text/html' })
            .end(`<html><title>${p}</title><p>${p}</p></html>`);
        },
      });
    site.route('/nologin', {
      status: 200,
      headers: { 'content-type': 'text/html' },
      body: '<p>maintenance</p>',
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
    delete process.env.TRAWL_TEST_FORM_PASS;
  });
  beforeEach(() => {
    resetAuthSessions();
    site.requests.length = 0;
    djangoPosts.length = 0;
    keycloakPosts.length = 0;
    endSessionsAfter = -1;
    served = 0;
    process.env.TRAWL_TEST_FORM_PASS = PASSWORD;
  });

  async function crawlPages(paths: string[], auth: unknown[]) {
    const config = parseConfig({
      name: uniqueCrawlName('forms'),
      startUrls: paths.map((p) => `${site.url}${p}`),
      discovery: false,
      refresh: { maxTemporaryErrors: 1 },
      fetch: { allowPrivateNetworks: true, concurrency: 1, auth },
    });
    const session = await openSession(config);
    await crawl(session);
    const states = await collect(urlStates(session));
    return new Map(states.map((s) => [new URL(String(s.url)).pathname, s]));
  }

  // The login page is given without its slash (reached through Django's redirect); the form's
  // action URL is the one with it.
  const django = (readForm: boolean) => ({
    urlPrefix: `${site.url}/app/`,
    form: {
      loginUrl: `${site.url}/accounts/login${readForm ? '' : '/'}`,
      readForm,
      fields: { username: 'ann', password: { env: 'TRAWL_TEST_FORM_PASS' } },
      successWhen: { cookie: 'sessionid' },
    },
  });

  it("Django's login: the page's token and cookie go with the login; a new session reads a new token", async () => {
    endSessionsAfter = 2;
    const states = await crawlPages(APP_PAGES, [django(true)]);
    for (const p of APP_PAGES) assert.equal(states.get(p)?.state, 'indexed', `${p}: ${states.get(p)?.note}`);
    assert.deepEqual(djangoPosts, ['ok', 'ok'], 'one login, and one more after the session ended');
    const pageReads = site.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/accounts/login'));
    assert.deepEqual(
      pageReads.map((r) => r.path),
      ['/accounts/login', '/accounts/login/', '/accounts/login', '/accounts/login/'],
      'the login page read (through its redirect) before each login',
    );
    const logins = site.requests.filter((r) => r.method === 'POST');
    assert.equal(logins.length, 2);
    assert.notEqual(
      /csrftoken=(\w+)/.exec(String(logins[0]?.headers.cookie))?.[1],
      undefined,
      'the cookie the page set went with the login',
    );
  });

  it("without readForm Django's login is refused, and the note says what to set", async () => {
    const states = await crawlPages(APP_PAGES.slice(0, 2), [django(false)]);
    const s = states.get('/app/p0');
    assert.deepEqual([s?.state, s?.errorKind, s?.errorCode], ['error', 'temporary', 'login-failed']);
    assert.match(String(s?.note), /HTTP 403.*form\.readForm: true/);
    assert.deepEqual(djangoPosts, ['CSRF token missing or incorrect'], 'one refused login for both pages');
    assert.ok(!String(s?.note).includes(PASSWORD));
  });

  it("Keycloak's login: posts to the form's action with its one-time session code, as a browser would", async () => {
    const states = await crawlPages(DOCS_PAGES, [
      {
        urlPrefix: `${site.url}/docs/`,
        form: {
          loginUrl: `${site.url}/realms/corp/protocol/openid-connect/auth`,
          readForm: true,
          fields: { username: 'ann', password: { env: 'TRAWL_TEST_FORM_PASS' } },
        },
      },
    ]);
    for (const p of DOCS_PAGES) assert.equal(states.get(p)?.state, 'indexed', `${p}: ${states.get(p)?.note}`);
    assert.deepEqual(keycloakPosts, ['ok']);
  });

  it('a login page without a login form: login-failed, saying so, and no credentials sent', async () => {
    const states = await crawlPages(
      ['/app/p0'],
      [{ ...django(true), form: { ...django(true).form, loginUrl: `${site.url}/nologin` } }],
    );
    const s = states.get('/app/p0');
    assert.equal(s?.errorCode, 'login-failed');
    assert.match(
      String(s?.note),
      /no login form on http:\/\/127\.0\.0\.1:\d+\/nologin \(no form with the fields username, password/,
    );
    assert.deepEqual(djangoPosts, []);
    assert.equal(site.requests.filter((r) => r.method === 'POST').length, 0);
  });
});
