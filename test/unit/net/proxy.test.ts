/** fetch.proxy's login: config validation, resolution, the header, the connection id, the proxy's errors. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSecretResolver } from '../../../shared/aws/secrets.ts';
import { parseConfig } from '../../../shared/config.ts';
import { PROXY_ERROR_CODES, proxyAnswerVerdict } from '../../../shared/crawl/state/classify.ts';
import { envSecretPaths, plainSecretPaths, secretArns } from '../../../shared/net/auth.ts';
import {
  proxyAnswerError,
  proxyAuthorization,
  proxyConnectionId,
  resolveProxy,
} from '../../../shared/net/proxy.ts';

const config = (proxy: unknown, auth: unknown[] = []) =>
  parseConfig({ name: 'p', startUrls: ['https://intranet.test/'], fetch: { proxy, auth } });

describe('fetch.proxy config', () => {
  it('takes host and port alone (the contract), or with a username and a password secret', () => {
    assert.deepEqual(config({ host: 'proxy.corp', port: 3128 }).fetch.proxy, {
      host: 'proxy.corp',
      port: 3128,
    });
    for (const password of [
      'inline',
      { env: 'PROXY_PW' },
      { secretArn: 'arn:aws:secretsmanager:x', key: 'pw' },
    ]) {
      const p = config({ host: 'proxy.corp', port: 3128, username: 'crawler', password }).fetch.proxy;
      assert.deepEqual(p, { host: 'proxy.corp', port: 3128, username: 'crawler', password });
    }
  });

  const refused: [string, unknown, RegExp][] = [
    [
      'a password without a username',
      { password: { env: 'PW' } },
      /fetch\.proxy\.username: a password needs a username/,
    ],
    [
      'a username without a password',
      { username: 'crawler' },
      /fetch\.proxy\.password: a username needs a password/,
    ],
    [
      'a colon in the username (RFC 7617)',
      { username: 'a:b', password: 'x' },
      /fetch\.proxy\.username: no colon/,
    ],
    [
      'a line break in the username',
      { username: 'a\r\nX-Evil: 1', password: 'x' },
      /fetch\.proxy\.username: no colon/,
    ],
    ['an empty username', { username: '', password: 'x' }, /fetch\.proxy\.username/],
    ['an unknown key (a typo)', { user: 'crawler', password: 'x' }, /fetch\.proxy\.user: unknown key/],
    [
      'a password that is no secret form',
      { username: 'u', password: { file: '/pw' } },
      /fetch\.proxy\.password/,
    ],
    [
      'an env name that is no variable name',
      { username: 'u', password: { env: 'A-B' } },
      /fetch\.proxy\.password/,
    ],
  ];
  for (const [what, fields, message] of refused)
    it(`refuses ${what}, naming the field`, () => {
      assert.throws(() => config({ host: 'proxy.corp', port: 3128, ...(fields as object) }), message);
    });

  it('counts the password among the secrets: plain ones warned about, env refused by deploy, ARNs granted', () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:1:secret:proxy';
    const siteArn = 'arn:aws:secretsmanager:us-east-1:1:secret:site';
    const auth = [{ urlPrefix: 'https://intranet.test/', bearer: { secretArn: siteArn } }];
    const withArn = config(
      { host: 'p', port: 1, username: 'u', password: { secretArn: arn, key: 'pw' } },
      auth,
    );
    assert.deepEqual(secretArns(withArn.fetch), { auth: [siteArn], proxy: [arn] });
    assert.deepEqual(plainSecretPaths(withArn.fetch), []);
    const inline = config({ host: 'p', port: 1, username: 'u', password: 'inline' });
    assert.deepEqual(plainSecretPaths(inline.fetch), ['fetch.proxy.password']);
    const fromEnv = config({ host: 'p', port: 1, username: 'u', password: { env: 'PROXY_PW' } });
    assert.deepEqual(envSecretPaths(fromEnv.fetch), ['fetch.proxy.password']);
    assert.deepEqual(secretArns(config({ host: 'p', port: 1 }).fetch), { auth: [], proxy: [] });
  });
});

describe('fetch.proxy login', () => {
  it('resolves the password with the fetch.auth resolver; a missing variable names the field, not a value', async () => {
    const c = config({ host: 'proxy.corp', port: 3128, username: 'crawler', password: { env: 'PROXY_PW' } });
    const resolved = await resolveProxy(c.fetch.proxy, createSecretResolver({ env: { PROXY_PW: 's3cret' } }));
    assert.deepEqual(resolved, {
      host: 'proxy.corp',
      port: 3128,
      credentials: { username: 'crawler', password: 's3cret' },
    });
    await assert.rejects(
      resolveProxy(c.fetch.proxy, createSecretResolver({ env: {} })),
      /^ConfigError: fetch\.proxy\.password: environment variable PROXY_PW is not set$/,
    );
    assert.equal(await resolveProxy(null, createSecretResolver({ env: {} })), null);
  });

  it('is sent as Basic user:pass in UTF-8 (RFC 7617), and only with credentials', () => {
    const proxy = { host: 'p', port: 1, credentials: { username: 'crawler', password: 'pä:ss' } };
    assert.equal(
      proxyAuthorization(proxy),
      `Basic ${Buffer.from('crawler:pä:ss', 'utf8').toString('base64')}`,
    );
    assert.equal(proxyAuthorization({ host: 'p', port: 1 }), null);
  });

  it('names a connection by proxy and login without the password in it', () => {
    const password = 'the-proxy-password';
    const id = (pw: string) =>
      proxyConnectionId({ host: 'p', port: 3128, credentials: { username: 'u', password: pw } });
    const a = id(password);
    assert.ok(a.startsWith('p:3128#'), a);
    for (const leak of [password, Buffer.from(`u:${password}`).toString('base64')])
      assert.ok(!a.includes(leak));
    assert.equal(id(password), a, 'the same login, the same connections');
    assert.notEqual(id('rotated'), a, 'another password, other connections');
    assert.equal(proxyConnectionId({ host: 'p', port: 3128 }), 'p:3128');
    assert.equal(proxyConnectionId(null), '');
  });
});

describe("the proxy's own answers", () => {
  const cases: [number, string][] = [
    [407, 'proxy-refused'],
    [403, 'proxy-refused'],
    [400, 'proxy-refused'],
    [502, 'proxy-failed'],
    [503, 'proxy-failed'],
    [504, 'proxy-failed'],
    [500, 'proxy-failed'],
    [101, 'proxy-failed'],
  ];
  for (const [status, code] of cases)
    it(`${status} is a temporary ${code}`, () => {
      assert.deepEqual(proxyAnswerVerdict(status), { kind: 'temporary', code });
      assert.ok(PROXY_ERROR_CODES.has(code));
    });

  it('says whether the proxy wants a login or refused the one sent, never with the secret', () => {
    const password = 'pw-not-in-notes';
    const none = proxyAnswerError(407, { host: 'proxy.corp', port: 3128 }, 'CONNECT a.test:443');
    assert.equal(
      none.message,
      'the proxy proxy.corp:3128 answered CONNECT a.test:443 with HTTP 407: it wants a login (set fetch.proxy.username and fetch.proxy.password)',
    );
    const wrong = proxyAnswerError(
      407,
      { host: 'proxy.corp', port: 3128, credentials: { username: 'crawler', password } },
      'the request',
    );
    assert.match(
      wrong.message,
      /HTTP 407: it refused the credentials \(check fetch\.proxy\.username and fetch\.proxy\.password\)$/,
    );
    assert.ok(!wrong.message.includes(password));
    assert.deepEqual(
      [wrong.errorKind, wrong.code, wrong.httpStatus],
      ['temporary', 'proxy-refused', undefined],
    );
    const gateway = proxyAnswerError(502, { host: 'proxy.corp', port: 3128 }, 'CONNECT a.test:443');
    assert.match(gateway.message, /HTTP 502: it could not reach the site/);
    assert.equal(gateway.code, 'proxy-failed');
  });
});
