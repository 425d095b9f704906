// fetch.auth end to end (issue 17 item 1): three loopback sites — basic auth, a login form whose
// session expires mid-crawl, a bearer token read from Secrets Manager (the emulator's) — are crawled
// completely; an open site on another origin (reached by a redirect from a protected page) never
// sees a credential; and no S3 object nor log line holds a secret.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { resetAuthSessions } from '../../shared/stages/fetch-auth.ts';
import { captureOutput } from '../helpers/capture-output.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { allObjects } from '../helpers/s3-objects.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;
const BASIC_PASS = secret('basicpw');
const FORM_PASS = secret('formpw');
const TOKEN = secret('token');
const PAGES = ['/', '/p1', '/p2', '/p3', '/p4', '/p5', '/p6'];

function page(title: string, links: string[]): string {
  const a = links.map((l) => `<a href="${l}">${l}</a>`).join(' ');
  return `<html><head><title>${title}</title></head><body><p>${title} text</p>${a}</body></html>`;
}

/** Serves PAGES (each linking to all) when `allowed(req)`; otherwise `deny(res)`. */
function protect(
  site: SiteServer,
  allowed: (req: http.IncomingMessage) => boolean,
  deny: (res: http.ServerResponse) => void,
  extraLinks: Record<string, string[]> = {},
) {
  for (const p of PAGES) {
    site.route(p, {
      handler: (req, res) => {
        if (!allowed(req)) return deny(res);
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(page(`${site.port}${p}`, [...PAGES, ...(extraLinks[p] ?? [])]));
      },
    });
  }
}

describe('fetch.auth: basic, form login with an expiring session, bearer token', () => {
  let emu: TestEmulator;
  const sites: Record<'basic' | 'form' | 'bearer' | 'open', SiteServer> = {} as never;
  let formLogins = 0;
  /** the first test's crawl, refreshed by the second */
  let crawled: ReturnType<typeof parseConfig> | null = null;

  before(async () => {
    emu = await startTestEmulator();
    for (const k of ['basic', 'form', 'bearer', 'open'] as const) sites[k] = await startSiteServer({});
    const basic = `Basic ${Buffer.from(`reader:${BASIC_PASS}`).toString('base64')}`;
    protect(
      sites.basic,
      (req) => req.headers.authorization === basic,
      (res) => res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }).end(),
      { '/p1': ['/to-open'] },
    );
    sites.basic.route('/to-open', {
      handler: (req, res) => {
        const ok = req.headers.authorization === basic;
        res.writeHead(ok ? 302 : 401, ok ? { location: `${sites.open.url}/` } : {}).end();
      },
    });
    protect(
      sites.bearer,
      (req) => req.headers.authorization === `Bearer ${TOKEN}`,
      (res) => res.writeHead(401).end(),
    );
    // The form site: a session serves 3 pages and then ends (the server forgets it).
    const sessions = new Map<string, number>();
    sites.form.route('/login', {
      handler: (req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          const f = new URLSearchParams(body);
          if (req.method !== 'POST' || f.get('user') !== 'ann' || f.get('pass') !== FORM_PASS)
            return void res.writeHead(200, { 'content-type': 'text/html' }).end('<form>login</form>');
          formLogins++;
          const sid = randomBytes(8).toString('hex');
          // The first session ends after 3 pages (mid-crawl); the next ones last.
          sessions.set(sid, formLogins === 1 ? 3 : 1000);
          res.writeHead(302, { location: '/', 'set-cookie': `sid=${sid}; Path=/; HttpOnly` }).end();
        });
      },
    });
    protect(
      sites.form,
      (req) => {
        const sid = /sid=([0-9a-f]+)/.exec(req.headers.cookie ?? '')?.[1] ?? '';
        const left = sessions.get(sid) ?? 0;
        if (left <= 0) return false;
        sessions.set(sid, left - 1);
        return true;
      },
      (res) => res.writeHead(302, { location: '/login?next=x' }).end(),
    );
    sites.open.route('/', { body: page('open', []) });
  });
  after(async () => {
    for (const s of Object.values(sites)) await s?.close();
    await emu?.stop();
    delete process.env.TRAWL_TEST_BASIC_PASS;
    delete process.env.TRAWL_TEST_FORM_PASS;
  });

  it('crawls the three sites completely; no secret in S3 or in the logs; none sent off-prefix', async () => {
    process.env.TRAWL_TEST_BASIC_PASS = BASIC_PASS;
    process.env.TRAWL_TEST_FORM_PASS = FORM_PASS;
    const sm = new SecretsManagerClient({ endpoint: emu.endpoint });
    const created = await sm.send(
      new CreateSecretCommand({
        Name: uniqueCrawlName('tok'),
        SecretString: JSON.stringify({ token: TOKEN }),
      }),
    );
    const config = parseConfig({
      name: uniqueCrawlName('auth'),
      startUrls: [`${sites.basic.url}/`, `${sites.form.url}/`, `${sites.bearer.url}/`, `${sites.open.url}/`],
      fetch: {
        allowPrivateNetworks: true,
        auth: [
          {
            urlPrefix: `${sites.basic.url}/`,
            basic: { username: 'reader', password: { env: 'TRAWL_TEST_BASIC_PASS' } },
          },
          {
            urlPrefix: `${sites.form.url}/`,
            form: {
              loginUrl: `${sites.form.url}/login`,
              fields: { user: 'ann', pass: { env: 'TRAWL_TEST_FORM_PASS' } },
              successWhen: { cookie: 'sid' },
            },
          },
          {
            urlPrefix: `${sites.bearer.url}/`,
            bearer: { secretArn: created.ARN!, key: 'token' },
          },
        ],
      },
    });
    const logged: string[] = [];
    const restore = captureOutput(logged);
    resetAuthSessions();
    try {
      const session = await openSession(config, { logLevel: 'DEBUG' });
      await crawl(session);
      const docs: string[] = [];
      for await (const d of documents(session)) docs.push(String(d.url));
      const states: Record<string, unknown>[] = [];
      for await (const s of urlStates(session)) states.push(s);
      for (const k of ['basic', 'form', 'bearer'] as const)
        for (const p of PAGES)
          assert.ok(docs.includes(`${sites[k].url}${p}`), `${k}${p} indexed: ${JSON.stringify(states)}`);
      assert.ok(formLogins >= 2, `the expiring session was renewed (${formLogins} logins)`);
      assert.ok(
        sites.open.requests.some((r) => r.path === '/'),
        'the open site was fetched (redirect target and start URL)',
      );
      for (const r of sites.open.requests)
        assert.deepEqual([r.headers.authorization, r.headers.cookie], [undefined, undefined]);
      const objects = await allObjects(session.resources.bucket);
      // What was scanned holds the protected pages (their documents), however they were batched.
      for (const k of ['basic', 'form', 'bearer'] as const)
        assert.ok(
          objects.some((o) => o.text.includes(`${sites[k].port}/p1 text`)),
          `${k}: its /p1 in none of ${objects.map((o) => o.key).join(' ')}`,
        );
      const basicHeader = Buffer.from(`reader:${BASIC_PASS}`).toString('base64');
      for (const needle of [BASIC_PASS, FORM_PASS, TOKEN, basicHeader]) {
        for (const o of objects) assert.ok(!o.text.includes(needle), `secret found in s3://${o.key}`);
        assert.ok(!logged.join('').includes(needle), 'secret found in the logs');
      }
      assert.ok(logged.length > 0, 'logs were captured (DEBUG)');
      crawled = config;
    } finally {
      restore();
    }
  });

  it('a password the site no longer takes keeps the documents behind it, as a temporary error that says why', async () => {
    // A rotated password made every page behind it a permanent 401: the refresh deleted them all.
    assert.ok(crawled, 'the crawl above ran');
    process.env.TRAWL_TEST_BASIC_PASS = 'rotated-and-not-updated';
    resetAuthSessions();
    const later = await openSession(crawled, { now: new Date(Date.now() + 3 * 86_400_000) });
    await refresh(later);
    const docs: string[] = [];
    for await (const d of documents(later)) docs.push(String(d.url));
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(later)) states.set(String(u.url), u);
    for (const p of PAGES) {
      const url = `${sites.basic.url}${p}`;
      assert.ok(docs.includes(url), `${url} kept its document`);
      const u = states.get(url);
      assert.deepEqual([u?.state, u?.errorKind, u?.errorCode], ['error', 'temporary', 'auth-refused'], url);
      assert.match(
        String(u?.note),
        /fetch\.auth for .*: the site refused the credentials \(HTTP 401\): check them/,
      );
    }
    const deleted = (await readChanges(later)).filter(
      (c) => c.type === 'delete' && c.url.startsWith(sites.basic.url),
    );
    assert.deepEqual(deleted, []);
  });
});
