import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseConfig, parseDuration } from '../../shared/config.ts';
import { orphanGraceMs } from '../../shared/crawl/state/orphans.ts';
import { ConfigError } from '../../shared/errors.ts';

describe('parseConfig', () => {
  it('fills every default but name and startUrls', () => {
    const c = parseConfig({ name: 'docs', startUrls: ['https://www.example.com/'] });
    assert.equal(c.scope.sameHostAndScheme, true);
    assert.equal(c.fetch.userAgent, 'trawl');
    assert.equal(c.fetch.maxBytes, 10485760);
    assert.deepEqual(c.extract.removeElements, ['header', 'footer']);
    assert.equal(c.refresh.maxAge, '48h');
    assert.ok(c.scope.ignoredExtensions.includes('mp4'));
  });

  const bad: [string, unknown, RegExp][] = [
    ['unknown top-level key', { name: 'a', startUrls: ['http://x.y/'], colour: 1 }, /colour: unknown key/],
    [
      'unknown nested key, one slip from a known one',
      { name: 'a', startUrls: ['http://x.y/'], fetch: { userAgnet: 'x' } },
      /fetch\.userAgnet: unknown key \(did you mean "userAgent"\?\)/,
    ],
    [
      'a key in the wrong case, deeper down',
      { name: 'a', startUrls: ['http://x.y/'], scope: { traps: { MaxPathDepth: 3 } } },
      /scope\.traps\.MaxPathDepth: unknown key \(did you mean "maxPathDepth"\?\)/,
    ],
    [
      'an unknown key like no other names none',
      { name: 'a', startUrls: ['http://x.y/'], colour: 1 },
      /colour: unknown key$/,
    ],
    [
      'a value of none of the forms: what the forms are, and YAML yes read as text',
      { name: 'a', startUrls: ['http://x.y/'], fetch: { allowPrivateNetworks: 'yes' } },
      /fetch\.allowPrivateNetworks: expected boolean or array, not "yes" \(YAML reads yes as text: write true or false\)/,
    ],
    [
      'invalid regex',
      { name: 'a', startUrls: ['http://x.y/'], scope: { include: ['('] } },
      /scope\.include\.0/,
    ],
    ['relative start URL', { name: 'a', startUrls: ['/x'] }, /startUrls\.0/],
    [
      'bad duration',
      { name: 'a', startUrls: ['http://x.y/'], refresh: { maxAge: '2 days' } },
      /refresh\.maxAge/,
    ],
    [
      'bad priority',
      {
        name: 'a',
        startUrls: ['http://x.y/'],
        rules: [{ match: { path: '/a' }, actions: [{ priority: 3 }] }],
      },
      /rules\.0\.actions\.0/,
    ],
    [
      'adaptive min above max',
      { name: 'a', startUrls: ['http://x.y/'], refresh: { adaptive: { min: '2d', max: '1d' } } },
      /refresh\.adaptive: min must not exceed max/,
    ],
    [
      'orphan grace shorter than three times maxAge',
      { name: 'a', startUrls: ['http://x.y/'], refresh: { maxAge: '48h', orphanGrace: '5d' } },
      /refresh\.orphanGrace: must be at least three times the longest refresh interval \(48h\)/,
    ],
    [
      "orphan grace shorter than three times a rule's refresh max",
      {
        name: 'a',
        startUrls: ['http://x.y/'],
        refresh: { orphanGrace: '8d' },
        rules: [{ match: { path: '/a' }, actions: [{ refresh: { min: '1h', max: '3d' } }] }],
      },
      /refresh\.orphanGrace: .*\(72h\)/,
    ],
    [
      'a scheme Trawl cannot fetch',
      { name: 'a', startUrls: ['http://x.y/'], scope: { schemes: ['http', 'ftp'] } },
      /scope\.schemes\.1: must be "http" or "https"/,
    ],
    [
      'a start URL with a password in it',
      { name: 'a', startUrls: ['http://crawler:S3cret@x.y/'] },
      /startUrls\.0: holds a user name or password \(user:password@\): give credentials in fetch\.auth/,
    ],
    [
      'no scheme at all',
      { name: 'a', startUrls: ['http://x.y/'], scope: { schemes: [] } },
      /scope\.schemes: must name at least one scheme/,
    ],
    [
      'a duration past ten years (its refresh times were invalid dates: the crawl never ended)',
      { name: 'a', startUrls: ['http://x.y/'], refresh: { maxAge: '99999999999d' } },
      /refresh\.maxAge: must be at most 3650d/,
    ],
    [
      "a rule's refresh max past ten years",
      {
        name: 'a',
        startUrls: ['http://x.y/'],
        rules: [{ match: { path: '/a' }, actions: [{ refresh: { min: '1h', max: '4000d' } }] }],
      },
      /rules\.0\.actions\.0\.refresh\.max: must be at most 3650d/,
    ],
    [
      'a user agent with a line break (a header injection that failed every fetch)',
      { name: 'a', startUrls: ['http://x.y/'], fetch: { userAgent: 'good\r\nX-Injected: 1' } },
      /fetch\.userAgent: must be printable ASCII on one line/,
    ],
    [
      'fetch.resolve to something that is not an address',
      { name: 'a', startUrls: ['http://x.y/'], fetch: { resolve: { 'a.test': 'banana' } } },
      /fetch\.resolve\.a\.test: must be an IPv4 or IPv6 address/,
    ],
    [
      'index.mapping onto another field (the URL was dropped from every document)',
      { name: 'a', startUrls: ['http://x.y/'], index: { mapping: { url: 'title' } } },
      /index\.mapping: "url" and "title" would both be named "title"/,
    ],
    [
      'index.mapping of a field documents do not have',
      { name: 'a', startUrls: ['http://x.y/'], index: { mapping: { bogus: 'zz' } } },
      /index\.mapping: "bogus" is not a document field/,
    ],
    [
      'index.mapping to an empty name',
      { name: 'a', startUrls: ['http://x.y/'], index: { mapping: { hash: '' } } },
      /index\.mapping: "hash": the new name is empty/,
    ],
    [
      'an ignored media type without its subtype',
      { name: 'a', startUrls: ['http://x.y/'], scope: { ignoredMimeTypes: ['video'] } },
      /scope\.ignoredMimeTypes\.0: "video" is not a media type pattern: type\/subtype, type\/\* or \* \(the whole type is "video\/\*"\)/,
    ],
    [
      'an ignored media type with a space in it',
      { name: 'a', startUrls: ['http://x.y/'], scope: { ignoredMimeTypes: ['text/plain', 'text/ html'] } },
      /scope\.ignoredMimeTypes\.1: "text\/ html" is not a media type pattern/,
    ],
    [
      'orphan grace of two cycles',
      { name: 'a', startUrls: ['http://x.y/'], refresh: { orphanGrace: 2 } },
      /refresh\.orphanGrace/,
    ],
  ];
  {
    // Thousands of levels overflowed the stack in the recursive schema (exit 1, a stack trace);
    // the XML parser's own nesting limit was a plain Error.
    let deep: unknown = { path: '/a' };
    for (let i = 0; i < 3000; i++) deep = { not: deep };
    let xml = '<Path val="/a"/>';
    for (let i = 0; i < 150; i++) xml = `<Not>${xml}</Not>`;
    bad.push(
      [
        'JSON rules nested 3000 deep',
        { name: 'a', startUrls: ['http://x.y/'], rules: [{ match: deep, actions: ['index'] }] },
        /rules\.0\.match(\.not)+: nested deeper than 64 levels/,
      ],
      [
        'XML rules nested 150 deep',
        { name: 'a', startUrls: ['http://x.y/'], rules: `<Rules><Rule>${xml}<Index/></Rule></Rules>` },
        /rules: invalid XML: Maximum nested tags exceeded/,
      ],
    );
  }
  for (const [label, raw, pattern] of bad) {
    it(`rejects ${label} naming the field path`, () => {
      assert.throws(
        () => parseConfig(raw, 'crawl.json'),
        (e: unknown) => {
          assert.ok(e instanceof ConfigError);
          assert.match(e.message, /^crawl\.json: /);
          assert.match(e.message, pattern);
          return true;
        },
      );
    });
  }
});

describe('scope.ignoredMimeTypes', () => {
  it('takes type/subtype, type/*, * and */*, in any case and with spaces around', () => {
    const { scope } = parseConfig({
      name: 'a',
      startUrls: ['http://x.y/'],
      scope: { ignoredMimeTypes: [' Image/PNG ', 'application/vnd.ms-excel', 'font/*', '*/*', '*'] },
    });
    assert.deepEqual(scope.ignoredMimeTypes, ['image/png', 'application/vnd.ms-excel', 'font/*', '*/*', '*']);
  });
});

describe('extract.removeElements and removeClasses', () => {
  const extract = (e: Record<string, unknown>) =>
    parseConfig({ name: 'a', startUrls: ['http://x.y/'], extract: e }).extract;
  it('take element names and class names, any case, custom elements and Tailwind classes too', () => {
    assert.deepEqual(extract({ removeElements: ['HEADER', 'my-widget'] }).removeElements, [
      'HEADER',
      'my-widget',
    ]);
    assert.deepEqual(extract({ removeClasses: ['no-index', 'w-1.5', 'md:hidden'] }).removeClasses, [
      'no-index',
      'w-1.5',
      'md:hidden',
    ]);
  });
  it('refuse CSS selectors, which matched nothing and said nothing', () => {
    for (const bad of ['div.sidebar', '#nav', 'nav ul', '.ad'])
      assert.throws(
        () => extract({ removeElements: [bad] }),
        /extract\.removeElements\.0: not an element name/,
        bad,
      );
    for (const bad of ['.ad', '#top', 'a b'])
      assert.throws(() => extract({ removeClasses: [bad] }), /extract\.removeClasses\.0: a class name/, bad);
  });
});

describe('scope.schemes', () => {
  it('takes them in any case', () => {
    const c = parseConfig({ name: 'a', startUrls: ['http://x.y/'], scope: { schemes: [' HTTPS'] } });
    assert.deepEqual(c.scope.schemes, ['https']);
  });
});

describe('fetch.caCertificates', () => {
  const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
  const withCas = (caCertificates: unknown) =>
    parseConfig({ name: 'a', startUrls: ['https://x.y/'], fetch: { caCertificates } }, 'crawl.json');

  it('none by default; a CA certificate in PEM is taken as given', () => {
    assert.deepEqual(parseConfig({ name: 'a', startUrls: ['https://x.y/'] }).fetch.caCertificates, []);
    const ca = fixture('cert.pem');
    assert.deepEqual(withCas([ca]).fetch.caCertificates, [ca]);
  });
  const bad: [string, unknown, RegExp][] = [
    ['text that is no PEM', ['not a certificate'], /caCertificates\.0: not one PEM certificate/],
    [
      'a PEM block whose body is not a certificate',
      ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'],
      /caCertificates\.0: not a readable certificate/,
    ],
    ['a private key', [fixture('key.pem')], /caCertificates\.0: not one PEM certificate/],
    [
      'a certificate that is no CA',
      [fixture('leaf-not-ca.pem')],
      /CN=leaf\.tls\.test is not a CA certificate/,
    ],
    ['more than 32', Array.from({ length: 33 }, () => fixture('cert.pem')), /caCertificates/],
  ];
  for (const [label, raw, pattern] of bad) {
    it(`rejects ${label}`, () => {
      assert.throws(
        () => withCas(raw),
        (e: unknown) => e instanceof ConfigError && pattern.test(e.message),
      );
    });
  }
});

describe('refresh.orphanGrace', () => {
  const config = (refresh: Record<string, unknown>) =>
    parseConfig({ name: 'a', startUrls: ['http://x.y/'], refresh });
  it('off by default', () => assert.equal(orphanGraceMs(config({})), null));
  it('a duration', () => assert.equal(orphanGraceMs(config({ orphanGrace: '7d' })), 7 * 86_400_000));
  it('a number of cycles of the longest refresh interval', () => {
    assert.equal(orphanGraceMs(config({ orphanGrace: 3 })), 3 * 48 * 3_600_000);
    const adaptive = config({ orphanGrace: 3, adaptive: { min: '1h', max: '7d' } });
    assert.equal(orphanGraceMs(adaptive), 21 * 86_400_000);
  });
});

describe('parseDuration', () => {
  for (const [text, ms] of [
    ['30s', 30_000],
    ['1h', 3_600_000],
    ['48h', 172_800_000],
    ['2d', 172_800_000],
    ['250ms', 250],
  ] as const) {
    it(`${text} = ${ms} ms`, () => assert.equal(parseDuration(text), ms));
  }
});
