import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import {
  createScopeFilters,
  directoryOf,
  extensionOf,
  type ScopeReason,
} from '../../../shared/crawl/url/scope.ts';
import { ConfigError } from '../../../shared/errors.ts';
import { judgeScope } from '../../helpers/judge-scope.ts';

const START = ['https://www.example.com/docs/index.html'];

/** The scope chains' verdict, start URLs last so the tables can leave them out. */
const judge = (scope: CrawlConfigInput['scope'], url: string, depth = 1, startUrls = START) =>
  judgeScope(scope, url, startUrls, depth);

/** [label, scope config, URL, depth, expected reason or null (in scope)]. */
const CASES: [string, CrawlConfigInput['scope'], string, number, ScopeReason | null][] = [
  ['defaults: same host and scheme passes', {}, 'https://www.example.com/blog/', 1, null],
  ['seed 004: the host must match', {}, 'https://docs.example.com/', 1, 'offsite'],
  ['seed 004: the scheme must match', {}, 'http://www.example.com/docs/', 1, 'offsite'],
  ['the port is part of the host', {}, 'https://www.example.com:8443/docs/', 1, 'offsite'],
  ['host compare is on the normalized URL', {}, 'HTTPS://WWW.EXAMPLE.COM:443/x', 1, null],
  [
    'seed 002 followOffsite lifts the host restriction',
    { followOffsite: true },
    'https://other.org/',
    1,
    null,
  ],
  [
    'sameHostAndScheme false: another scheme on the host passes',
    { sameHostAndScheme: false },
    'http://www.example.com/x',
    1,
    null,
  ],
  [
    'sameHostAndScheme false: another port on the host passes',
    { sameHostAndScheme: false },
    'https://www.example.com:8443/x',
    1,
    null,
  ],
  [
    'sameHostAndScheme false: seed 002 still limits links to the host name',
    { sameHostAndScheme: false },
    'http://other.org/',
    1,
    'offsite',
  ],
  [
    'sameHostAndScheme false: a subdomain is another host name',
    { sameHostAndScheme: false },
    'https://docs.example.com/',
    1,
    'offsite',
  ],
  [
    'followOffsite beats sameHostAndScheme',
    { sameHostAndScheme: true, followOffsite: true },
    'http://other.org:81/',
    1,
    null,
  ],
  [
    'seed 002 protocol: ftp not in schemes',
    { followOffsite: true },
    'ftp://www.example.com/x',
    1,
    'scheme-not-allowed',
  ],
  [
    'schemes can be narrowed',
    { schemes: ['https'], followOffsite: true },
    'http://a.b/',
    1,
    'scheme-not-allowed',
  ],
  [
    'seed 002 address length',
    { maxUrlLength: 40 },
    `https://www.example.com/${'a'.repeat(20)}`,
    1,
    'url-too-long',
  ],
  [
    'address length at the limit passes',
    { maxUrlLength: 44 },
    `https://www.example.com/${'a'.repeat(20)}`,
    1,
    null,
  ],
  [
    'seed 002 Index Entire Site: same directory',
    { underStartPath: true },
    'https://www.example.com/docs/a.html',
    1,
    null,
  ],
  [
    'seed 002 Index Entire Site: subdirectory',
    { underStartPath: true },
    'https://www.example.com/docs/x/y/',
    1,
    null,
  ],
  [
    'seed 002 Index Entire Site: parent',
    { underStartPath: true },
    'https://www.example.com/blog/',
    1,
    'outside-start-path',
  ],
  [
    'seed 002 Index Entire Site: /docs is not /docs/',
    { underStartPath: true },
    'https://www.example.com/docsx/',
    1,
    'outside-start-path',
  ],
  [
    'underStartPath keeps the host',
    { underStartPath: true, followOffsite: true },
    'https://o.org/docs/a',
    1,
    'outside-start-path',
  ],
  [
    'seed 002 query strings ignored when not followed',
    { followQueryStrings: false },
    'https://www.example.com/a?x=1',
    1,
    'query-string',
  ],
  ['an empty query is no query', { followQueryStrings: false }, 'https://www.example.com/a?', 1, null],
  ['query strings followed by default', {}, 'https://www.example.com/a?x=1', 1, null],
  [
    'seed 004 must contain: one substring occurs',
    { mustContain: ['/news/', '/docs/'] },
    'https://www.example.com/docs/1',
    1,
    null,
  ],
  [
    'seed 004 must contain: none occurs',
    { mustContain: ['/news/'] },
    'https://www.example.com/docs/1',
    1,
    'must-contain',
  ],
  [
    'seed 004 must contain: not in the #fragment',
    { mustContain: ['news'] },
    'https://www.example.com/a#news',
    1,
    'must-contain',
  ],
  [
    'seed 004 must not contain',
    { mustNotContain: ['/print/'] },
    'https://www.example.com/print/1',
    1,
    'must-not-contain',
  ],
  [
    'seed 004 must not contain: fragment ignored',
    { mustNotContain: ['print'] },
    'https://www.example.com/a#print',
    1,
    null,
  ],
  [
    'seed 003 include: one pattern matches',
    { include: ['^https://www\\.example\\.com/docs/.*'] },
    'https://www.example.com/docs/a',
    1,
    null,
  ],
  [
    'seed 003 include: no pattern matches',
    { include: ['^https://www\\.example\\.com/docs/.*'] },
    'https://www.example.com/blog',
    1,
    'not-included',
  ],
  [
    'seed 003 include sees the normalized URL',
    { include: ['/docs/a$'] },
    'https://www.example.com/docs/x/../a#f',
    1,
    null,
  ],
  ['seed 003 exclude', { exclude: ['\\.pdf$'] }, 'https://www.example.com/docs/a.pdf', 1, 'excluded'],
  [
    'seed 003 exclude beats include',
    { include: ['docs'], exclude: ['secret'] },
    'https://www.example.com/docs/secret',
    1,
    'excluded',
  ],
  ['seed 004 ignored extension', {}, 'https://www.example.com/movie.mp4', 1, 'ignored-extension'],
  ['ignored extension is case-insensitive', {}, 'https://www.example.com/PHOTO.JPG', 1, 'ignored-extension'],
  ['ignored extension: path only, not the query', {}, 'https://www.example.com/view?file=a.jpg', 1, null],
  ['ignored extension: last segment only', {}, 'https://www.example.com/a.zip/page', 1, null],
  [
    'ignored extension list can be replaced',
    { ignoredExtensions: ['.log'] },
    'https://www.example.com/x.LOG',
    1,
    'ignored-extension',
  ],
  ['seed 003 maxCrawlDepth: at the limit', { maxDepth: 2 }, 'https://www.example.com/a', 2, null],
  ['seed 003 maxCrawlDepth: beyond it', { maxDepth: 2 }, 'https://www.example.com/a', 3, 'max-depth'],
  ['maxDepth 0: only start URLs', { maxDepth: 0 }, 'https://www.example.com/a', 1, 'max-depth'],
  ['maxDepth null is unlimited', {}, 'https://www.example.com/a', 99, null],
];

describe('scope filters', () => {
  for (const [label, scope, url, depth, expected] of CASES) {
    it(`${label}: ${url} -> ${expected ?? 'in scope'}`, () =>
      assert.equal(judge(scope, url, depth), expected));
  }
  it('any of several start URLs gives the host', () => {
    const starts = ['https://a.com/', 'http://b.com/x/'];
    assert.equal(judge({}, 'http://b.com/y', 1, starts), null);
    assert.equal(judge({}, 'https://b.com/y', 1, starts), 'offsite');
    assert.equal(judge({ underStartPath: true }, 'http://b.com/y', 1, starts), 'outside-start-path');
    assert.equal(judge({ underStartPath: true }, 'https://a.com/y', 1, starts), null);
  });
  it('a value written with non-ASCII characters matches the URL as it is read (Unicode host, decoded path)', () => {
    const starts = ['http://bücher.test/'];
    assert.equal(
      judge({ mustNotContain: ['geheim-ü'] }, 'http://bücher.test/geheim-ü/x', 1, starts),
      'must-not-contain',
    );
    assert.equal(judge({ exclude: ['/privé/'] }, 'http://bücher.test/privé/x', 1, starts), 'excluded');
    assert.equal(judge({ exclude: ['/privé/'] }, 'http://bücher.test/prive/x', 1, starts), null);
    assert.equal(
      judge({ mustContain: ['bücher.test/café'] }, 'http://bücher.test/café/menu', 1, starts),
      null,
    );
    assert.equal(
      judge({ mustContain: ['bücher.test/café'] }, 'http://bücher.test/tea/', 1, starts),
      'must-contain',
    );
    assert.equal(judge({ include: ['/café/'] }, 'http://xn--bcher-kva.test/caf%C3%A9/', 1, starts), null);
    // ASCII values still match the normalized form, escapes included.
    assert.equal(judge({ exclude: ['caf%C3%A9'] }, 'http://bücher.test/café/', 1, starts), 'excluded');
  });
  it('the first failing filter names the reason (offsite before query-string)', () => {
    assert.equal(judge({ followQueryStrings: false }, 'https://other.org/?a=1'), 'offsite');
  });
  it('an invalid include pattern is a ConfigError naming the path', () => {
    const config = parseConfig({ name: 't', startUrls: START });
    assert.throws(
      () => createScopeFilters({ ...config.scope, exclude: ['ok', '('] }, START),
      (e: unknown) =>
        e instanceof ConfigError && /^scope\.exclude\.1: invalid regular expression/.test(e.message),
    );
  });
});

describe('directoryOf and extensionOf', () => {
  const dirs: [string, string][] = [
    ['/a/b.html', '/a/'],
    ['/a/', '/a/'],
    ['/a', '/'],
    ['/', '/'],
  ];
  for (const [path, dir] of dirs)
    it(`directoryOf(${path}) = ${dir}`, () => assert.equal(directoryOf(path), dir));
  const exts: [string, string | null][] = [
    ['/a/B.JPG', 'jpg'],
    ['/a.b/c', null],
    ['/archive.tar.gz', 'gz'],
    ['/dir.', null],
    ['/', null],
  ];
  for (const [path, ext] of exts)
    it(`extensionOf(${path}) = ${ext}`, () => assert.equal(extensionOf(path), ext));
});
