import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig, parseDuration } from '../../shared/config.ts';
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
      'unknown nested key',
      { name: 'a', startUrls: ['http://x.y/'], fetch: { userAgnet: 'x' } },
      /fetch.*userAgnet/,
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
  ];
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
