/** The scope examples the seeds give (002 FDSE, 003 SMILA, 004 Smartsite), verbatim where they give URLs. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CrawlConfigInput, DEFAULT_IGNORED_EXTENSIONS } from '../../../shared/config.ts';
import type { ScopeReason } from '../../../shared/crawl/url/scope.ts';
import { judgeScope } from '../../helpers/judge-scope.ts';

const START = ['https://www.example.com/'];

/** The seeds' own examples, verbatim where they give URLs: [label, scope, URL, start URLs, expected]. */
// biome-ignore format: one seed example per line
const SEED_EXAMPLES: [string, CrawlConfigInput['scope'], string, string[], ScopeReason | null][] = [
  ['seed 002 protocol: only http:// (FDSE), https ignored', { schemes: ['http'], followOffsite: true }, 'https://www.xav.com/scripts/', ['http://www.xav.com/'], 'scheme-not-allowed'],
  ['seed 002 protocol: ftp:// ignored', { schemes: ['http'], followOffsite: true }, 'ftp://www.xav.com/file.txt', ['http://www.xav.com/'], 'scheme-not-allowed'],
  ['seed 002 protocol: gopher:// ignored', { schemes: ['http'], followOffsite: true }, 'gopher://www.xav.com/1', ['http://www.xav.com/'], 'scheme-not-allowed'],
  ['seed 002 protocol: http:// crawled', { schemes: ['http'] }, 'http://www.xav.com/scripts/search/help/1051.html', ['http://www.xav.com/'], null],
  ['seed 002 "Max Characters: URL" 128: 128 passes', { maxUrlLength: 128 }, `http://www.xav.com/${'a'.repeat(109)}`, ['http://www.xav.com/'], null],
  ['seed 002 "Max Characters: URL" 128: 129 is too long', { maxUrlLength: 128 }, `http://www.xav.com/${'a'.repeat(110)}`, ['http://www.xav.com/'], 'url-too-long'],
  ['seed 002 HREF="file.pl?test" has a query string', { followQueryStrings: false }, 'http://www.xav.com/file.pl?test', ['http://www.xav.com/'], 'query-string'],
  ['seed 002 ".log" extension ignored', { ignoredExtensions: ['log', 'old'] }, 'http://www.xav.com/search.log', ['http://www.xav.com/'], 'ignored-extension'],
  ['seed 002 ".old" extension ignored', { ignoredExtensions: ['log', 'old'] }, 'http://www.xav.com/search.pending.txt.old', ['http://www.xav.com/'], 'ignored-extension'],
  ['a two-part extension ("tar.gz") ignored: it never matched', { ignoredExtensions: ['tar.gz'] }, 'http://www.xav.com/dist/site.TAR.GZ', ['http://www.xav.com/'], 'ignored-extension'],
  ['a two-part extension: only at the end of the name', { ignoredExtensions: ['tar.gz'] }, 'http://www.xav.com/tar.gz/notes.html', ['http://www.xav.com/'], null],
  ['a segment\'s parameters are not its name: style.css;v=2 is a .css', {}, 'http://www.xav.com/s/style.CSS;v=2', ['http://www.xav.com/'], 'ignored-extension'],
  ['a segment\'s parameters: site.tar.gz;v=2 is a tar.gz', { ignoredExtensions: ['tar.gz'] }, 'http://www.xav.com/dist/site.tar.gz;v=2', ['http://www.xav.com/'], 'ignored-extension'],
  ['a segment\'s parameters: a page with a session is still a page', {}, 'http://www.xav.com/docs/page.html;jsessionid=A1.b2', ['http://www.xav.com/'], null],
  ['seed 003 include: below the SMILA start URL', { include: ['http://wiki\\.eclipse\\.org/SMILA/.*'] }, 'http://wiki.eclipse.org/SMILA/Documentation', ['http://wiki.eclipse.org/SMILA'], null],
  ['seed 003 include: not below it', { include: ['http://wiki\\.eclipse\\.org/SMILA/.*'] }, 'http://wiki.eclipse.org/Jetty', ['http://wiki.eclipse.org/SMILA'], 'not-included'],
  ['seed 004 host must match: doc.seneca.nl', {}, 'https://doc.seneca.nl/webcrawler', ['https://doc.seneca.nl/'], null],
  ['seed 004 host must match: www.seneca.nl is another host', {}, 'https://www.seneca.nl/', ['https://doc.seneca.nl/'], 'offsite'],
  ['seed 004 scheme must match: https', {}, 'http://doc.seneca.nl/webcrawler', ['https://doc.seneca.nl/'], 'offsite'],
  ['seed 004 .mp4 ignored without visiting', {}, 'https://doc.seneca.nl/media/intro.mp4', ['https://doc.seneca.nl/'], 'ignored-extension'],
  ['seed 004 extensionless URL is visited', {}, 'https://doc.seneca.nl/media/intro', ['https://doc.seneca.nl/'], null],
];

describe("scope filters: the seeds' examples", () => {
  for (const [label, scope, url, starts, expected] of SEED_EXAMPLES) {
    it(`${label}: ${url} -> ${expected ?? 'in scope'}`, () =>
      assert.equal(judgeScope(scope, url, starts), expected));
  }
  it('seed 004: every extension of the default list is ignored', () => {
    for (const ext of DEFAULT_IGNORED_EXTENSIONS) {
      assert.equal(judgeScope({}, `https://www.example.com/file.${ext}`, START), 'ignored-extension', ext);
      assert.equal(
        judgeScope({}, `https://www.example.com/FILE.${ext.toUpperCase()}`, START),
        'ignored-extension',
        ext,
      );
    }
  });
});
