/** fetch.auth's pure parts: which prefix covers a URL, Set-Cookie parsing, the logged-out test, config. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSecretResolver } from '../../../shared/aws/secrets.ts';
import { parseConfig } from '../../../shared/config.ts';
import {
  AuthSessions,
  authFor,
  cleartextAuthPaths,
  isLoggedOut,
  parseSetCookies,
  plainSecretPaths,
  resolveAuth,
  secretArns,
} from '../../../shared/net/auth.ts';

const config = (auth: unknown[]) =>
  parseConfig({ name: 'a', startUrls: ['http://intranet.test/'], fetch: { auth } });

describe('fetch.auth', () => {
  it('sends credentials only to the prefix origin and path, longest prefix first', async () => {
    const c = config([
      { urlPrefix: 'http://intranet.test/', basic: { username: 'u', password: { env: 'P' } } },
      { urlPrefix: 'http://intranet.test/api/', bearer: { env: 'T' } },
    ]);
    const resolved = await resolveAuth(c.fetch.auth, createSecretResolver({ env: { P: 'pw', T: 'tok' } }));
    const cases: [string, string | null][] = [
      ['http://intranet.test/a', `Basic ${Buffer.from('u:pw').toString('base64')}`],
      ['http://intranet.test/api/x', 'Bearer tok'],
      ['http://intranet.test.evil.com/a', null],
      ['https://intranet.test/a', null],
      ['http://intranet.test:8080/a', null],
      ['http://other.test/http://intranet.test/', null],
    ];
    for (const [url, header] of cases)
      assert.equal(authFor(url, resolved)?.headers.authorization ?? null, header, url);
  });

  it("a form entry's cookies go with its login only to the prefix's origin, not to a login page elsewhere", async () => {
    // The login's request is captured where it would leave (the fetch is the network boundary).
    const logins: { url: string; cookie: string | undefined }[] = [];
    const send = async (url: string, init: { headers: Record<string, string> }) => {
      logins.push({ url, cookie: init.headers.cookie });
      return { kind: 'redirect', status: 302, location: 'http://intranet.test/', headers: {} } as never;
    };
    for (const loginUrl of ['http://sso.test/login', 'http://intranet.test/login']) {
      const c = config([
        {
          urlPrefix: 'http://intranet.test/',
          cookies: { team: { env: 'TEAM' } },
          form: { loginUrl, fields: { user: 'u', pass: { env: 'P' } } },
        },
      ]);
      const resolved = await resolveAuth(
        c.fetch.auth,
        createSecretResolver({ env: { TEAM: 'blue', P: 'pw' } }),
      );
      await new AuthSessions(resolved, send).headersFor('http://intranet.test/page');
    }
    assert.deepEqual(logins, [
      { url: 'http://sso.test/login', cookie: undefined },
      { url: 'http://intranet.test/login', cookie: 'team=blue' },
    ]);
  });

  it('matches a prefix written with escapes as the normalized URLs carry its path', async () => {
    const c = config([{ urlPrefix: 'http://intranet.test/%7eann/caf%c3%a9/', bearer: 't' }]);
    const resolved = await resolveAuth(c.fetch.auth, createSecretResolver({ env: {} }));
    assert.equal(
      authFor('http://intranet.test/~ann/caf%C3%A9/x', resolved)?.headers.authorization,
      'Bearer t',
    );
    assert.equal(authFor('http://intranet.test/~ann/other', resolved), null);
  });

  it('refuses a missing variable with the field path, never the value', async () => {
    const c = config([{ urlPrefix: 'http://intranet.test/', bearer: { env: 'NOPE_NOT_SET' } }]);
    await assert.rejects(
      resolveAuth(c.fetch.auth, createSecretResolver({ env: {} })),
      /fetch\.auth\.0\.bearer: environment variable NOPE_NOT_SET is not set/,
    );
  });

  it('names plain-string secrets (for the warning) and the Secrets Manager ARNs (for the grant)', () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:1:secret:x';
    const c = config([
      { urlPrefix: 'http://intranet.test/', basic: { username: 'u', password: 'inline' } },
      { urlPrefix: 'http://intranet.test/b/', headers: { 'X-Api-Key': { secretArn: arn, key: 'k' } } },
    ]);
    assert.deepEqual(plainSecretPaths(c.fetch), ['fetch.auth.0.basic.password']);
    assert.deepEqual(secretArns(c.fetch), { auth: [arn], proxy: [] });
    // Both entries send their credentials in clear text; an https prefix with an http login form too.
    const form = { loginUrl: 'http://sso.test/login', fields: { user: 'u' } };
    const tls = config([
      { urlPrefix: 'https://a.test/', bearer: 't' },
      { urlPrefix: 'https://b.test/', form },
    ]);
    assert.deepEqual(cleartextAuthPaths(c.fetch.auth), [
      'fetch.auth.0 (http://intranet.test/)',
      'fetch.auth.1 (http://intranet.test/b/)',
    ]);
    assert.deepEqual(cleartextAuthPaths(tls.fetch.auth), [
      'fetch.auth.1.form.loginUrl (http://sso.test/login)',
    ]);
    assert.throws(() => config([{ urlPrefix: 'http://intranet.test/' }]), /at least one of basic/);
    assert.throws(() => config([{ urlPrefix: 'ftp://x/', bearer: 'x' }]), /urlPrefix/);
  });

  it('parses Set-Cookie pairs and recognizes a logged-out answer', async () => {
    assert.deepEqual(parseSetCookies(['sid=abc; Path=/; HttpOnly', 'theme=dark', 'bad']), {
      sid: 'abc',
      theme: 'dark',
    });
    const c = config([
      {
        urlPrefix: 'http://intranet.test/',
        form: { loginUrl: 'http://intranet.test/login', fields: { u: 'x' } },
      },
    ]);
    const [entry] = await resolveAuth(c.fetch.auth, createSecretResolver({ env: {} }));
    const headers = {};
    const redirect = (location: string) => ({ kind: 'redirect', status: 302, location, headers }) as const;
    assert.equal(isLoggedOut(entry!, redirect('http://intranet.test/login?next=/a')), true);
    assert.equal(isLoggedOut(entry!, redirect('http://intranet.test/b')), false);
    const err = {
      kind: 'error',
      errorKind: 'permanent',
      code: 'http-401',
      status: 401,
      message: '',
    } as const;
    assert.equal(isLoggedOut(entry!, err), true);
  });
});
