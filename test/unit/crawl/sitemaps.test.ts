import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { isSitemapOrFeed, MAX_SITEMAP_BYTES, parseSitemap } from '../../../shared/crawl/sitemaps/sitemaps.ts';

// crawler-commons sitemap fixtures and expected.json, copied into the repository (see SOURCE.txt
// beside them); TRAWL_SITEMAPS_CORPUS may point at another copy.
const CORPUS_DIRS = [
  process.env['TRAWL_SITEMAPS_CORPUS'],
  join(import.meta.dirname, '../../fixtures/sitemaps'),
];
const corpusDir = CORPUS_DIRS.find((d): d is string => !!d && existsSync(join(d, 'expected.json')));
if (corpusDir === undefined) throw new Error(`sitemap corpus not found in ${CORPUS_DIRS.join(', ')}`);
const corpus = (file: string) => join(corpusDir!, file);

interface ExpectedFixture {
  file: string;
  kind: string;
  test_base_url: string;
  expected_url_count: number;
  urls: string[];
}

const fixtures = JSON.parse(readFileSync(corpus('expected.json'), 'utf8')) as ExpectedFixture[];
/** expected.json's kinds are prose ("gzip-compressed urlset"); the parser's kind for each file. */
const KINDS: Record<string, string> = {
  'sitemapindex-inline.xml': 'sitemapindex',
  'sitemap.index.xml': 'sitemapindex',
  'sitemap.txt.gz': 'text',
  'sitemap.txt': 'text',
  'sitemap-with-bom.txt': 'text',
  'atom.xml': 'atom',
  'rss/feed.rss': 'rss',
  'rss/xmlRss_pubDate.xml': 'rss',
};

const urlset = (body: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${body}</urlset>`;

describe('parseSitemap: crawler-commons corpus (expected.json)', () => {
  it('covers all 18 fixtures and 138 URLs', () => {
    assert.equal(fixtures.length, 18);
    assert.equal(
      fixtures.reduce((n, f) => n + f.expected_url_count, 0),
      138,
    );
  });

  for (const fixture of fixtures) {
    it(`${fixture.file}: ${fixture.expected_url_count} URLs`, () => {
      const content = readFileSync(corpus(fixture.file));

      const result = parseSitemap(content, fixture.test_base_url);

      const found = (result.kind === 'sitemapindex' ? result.sitemaps : result.urls).map((u) => u.loc);
      assert.equal(found.length, fixture.expected_url_count);
      assert.deepEqual(found, fixture.urls);
      assert.equal(result.kind, KINDS[fixture.file] ?? 'urlset');
    });
  }
});

describe('parseSitemap: details', () => {
  it('reads lastmod from urlset entries and leaves it out when absent', () => {
    const result = parseSitemap(readFileSync(corpus('xmlSitemap.gz')), 'http://www.example.com/s.xml.gz');

    assert.deepEqual(result.urls[0], { loc: 'http://www.example.com/', lastmod: '2005-01-01' });
    assert.deepEqual(result.urls[1], { loc: 'http://www.example.com/catalog?item=12&desc=vacation_hawaii' });
  });

  it('a sitemap cut inside a tag gives the entries before the cut (crawler-commons lenient)', () => {
    const xml = urlset('<url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc></url>');
    const cut = xml.slice(0, xml.lastIndexOf('<url>') + 3);
    assert.deepEqual(
      parseSitemap(cut, 'http://a.test/s.xml').urls.map((u) => u.loc),
      ['http://a.test/1'],
    );
  });

  it("reads a sitemap index's lastmod of each child sitemap", () => {
    const xml =
      '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' +
      '<sitemap><loc>/s1.xml</loc><lastmod>2026-11-28T10:00:00+01:00</lastmod></sitemap>' +
      '<sitemap><loc>/s2.xml</loc></sitemap><sitemap><loc>/s3.xml</loc><lastmod>yesterday</lastmod></sitemap></sitemapindex>';

    assert.deepEqual(parseSitemap(xml, 'https://a.example/index.xml').sitemaps, [
      { loc: 'https://a.example/s1.xml', lastmod: '2026-11-28T10:00:00+01:00' },
      { loc: 'https://a.example/s2.xml' },
      { loc: 'https://a.example/s3.xml' },
    ]);
  });

  it('resolves relative locs against the sitemap URL and drops invalid ones', () => {
    const xml = urlset(
      '<url><loc>/a</loc></url><url><loc>b/c?x=1</loc></url><url><loc>https://other.example/d</loc></url>' +
        '<url><loc>javascript:alert(1)</loc></url><url><loc>http://[bad</loc></url><url><loc> </loc></url>',
    );

    const result = parseSitemap(xml, 'https://www.example.com/dir/sitemap.xml');

    assert.deepEqual(
      result.urls.map((u) => u.loc),
      ['https://www.example.com/a', 'https://www.example.com/dir/b/c?x=1', 'https://other.example/d'],
    );
  });

  it('keeps the first of duplicate locs', () => {
    const xml = urlset('<url><loc>http://a.example/1</loc></url><url><loc>http://a.example/1</loc></url>');

    assert.equal(parseSitemap(xml, 'http://a.example/sitemap.xml').urls.length, 1);
  });

  it('detects gzip by magic bytes, whatever the URL says', () => {
    const gz = gzipSync(Buffer.from(urlset('<url><loc>http://a.example/1</loc></url>')));

    const result = parseSitemap(gz, 'http://a.example/sitemap.xml');

    assert.equal(result.kind, 'urlset');
    assert.deepEqual(result.urls, [{ loc: 'http://a.example/1' }]);
  });

  it('rejects a gzip that inflates beyond the 50 MB sitemap limit', () => {
    const bomb = gzipSync(Buffer.alloc(MAX_SITEMAP_BYTES + 1, 0x20), { level: 1 });

    assert.deepEqual(parseSitemap(bomb, 'http://a.example/sitemap.xml.gz'), {
      kind: 'unknown',
      urls: [],
      sitemaps: [],
      tooLarge: true,
    });
  });

  it('returns unknown for corrupt gzip and for XML that is no sitemap or feed', () => {
    const corrupt = new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff]);

    assert.equal(parseSitemap(corrupt, 'http://a.example/s.gz').kind, 'unknown');
    assert.equal(
      parseSitemap('<!DOCTYPE html><html><a href="/x">x</a></html>', 'http://a.example/').kind,
      'unknown',
    );
    assert.equal(parseSitemap('', 'http://a.example/').kind, 'unknown');
  });

  it('reads plain-text sitemaps given as a string, skipping lines that are not absolute URLs', () => {
    const text =
      '\uFEFFhttp://a.example/1\r\n\r\n  https://a.example/2  \n/relative\nnot a url\nftp://a.example/f\n';

    const result = parseSitemap(text, 'http://a.example/sitemap.txt');

    assert.equal(result.kind, 'text');
    assert.deepEqual(
      result.urls.map((u) => u.loc),
      ['http://a.example/1', 'https://a.example/2'],
    );
  });

  it('honours a non-UTF-8 encoding in the XML declaration', () => {
    const latin1 = Buffer.from(
      '<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>http://a.example/caf\xe9</loc></url></urlset>',
      'latin1',
    );

    assert.equal(parseSitemap(latin1, 'http://a.example/s.xml').urls[0]?.loc, 'http://a.example/caf%C3%A9');
  });
});

describe('parseSitemap: feeds', () => {
  it('RSS: item links (not the channel link), a guid when there is no link, entity and CDATA decoded', () => {
    const result = parseSitemap(readFileSync(corpus('rss/feed.rss')), 'https://www.example.com/feed');

    assert.equal(result.kind, 'rss');
    assert.equal(result.urls[1]?.loc, 'https://www.example.com/guid.html');
    assert.equal(result.urls[3]?.loc, 'https://www.example.com/foo?q=a&l=fr');
    assert.equal(result.urls[0]?.lastmod, '2009-09-06T16:20:00.000Z');
  });

  it('RSS: pubDate in RFC 822 forms becomes ISO 8601; without a time zone there is none', () => {
    const content = readFileSync(corpus('rss/xmlRss_pubDate.xml'));

    const result = parseSitemap(content, 'http://www.example.com/rss.xml');

    assert.deepEqual(
      result.urls.map((u) => u.lastmod),
      [
        '2017-01-05T12:34:51.000Z',
        '2017-01-05T12:34:52.000Z',
        '2017-01-05T12:34:53.000Z',
        '2017-01-05T12:34:54.000Z',
        undefined,
        undefined,
        undefined,
      ],
    );
  });

  it('RSS: relative item links resolve, guids that are not URLs are skipped, RSS 1.0 items are read', () => {
    const rss =
      '<rss><channel><link>http://a.example/</link><item><link>post/1</link></item>' +
      '<item><guid>7bd204c6-1655</guid></item></channel></rss>';
    const rdf =
      '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">' +
      '<channel><link>http://a.example/</link></channel><item><link>http://a.example/r1</link></item></rdf:RDF>';

    assert.deepEqual(parseSitemap(rss, 'http://a.example/blog/feed').urls, [
      { loc: 'http://a.example/blog/post/1' },
    ]);
    assert.deepEqual(parseSitemap(rdf, 'http://a.example/rdf').urls, [{ loc: 'http://a.example/r1' }]);
  });

  it('Atom: the entry alternate link (not the feed links), updated as lastmod', () => {
    const result = parseSitemap(readFileSync(corpus('atom.xml')), 'http://example.org/atom.xml');

    assert.equal(result.kind, 'atom');
    assert.deepEqual(result.urls, [
      { loc: 'http://example.org/2003/12/13/atom03', lastmod: '2003-12-13T18:30:02Z' },
    ]);
  });

  it("Atom: a relative link resolves against xml:base — the feed's, the entry's, the link's own (RFC 4287 §2)", () => {
    const atom = Buffer.from(
      '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://a.test/blog/">' +
        '<entry xml:base="2024/"><link href="post.html"/></entry>' +
        '<entry><link href="other.html"/></entry>' +
        '<entry><link xml:base="/x/" href="y.html"/></entry>' +
        '<entry xml:base="javascript:alert(1)"><link href="z.html"/></entry>' +
        '</feed>',
    );
    assert.deepEqual(parseSitemap(atom, 'https://a.test/feed.xml').urls, [
      { loc: 'https://a.test/blog/2024/post.html' },
      { loc: 'https://a.test/blog/other.html' },
      { loc: 'https://a.test/x/y.html' },
      // A base that makes no http(s) URL is not one: the enclosing base holds.
      { loc: 'https://a.test/blog/z.html' },
    ]);
  });

  it("RSS: a relative link resolves against xml:base — the feed's, the channel's, the item's", () => {
    const rss =
      '<rss version="2.0" xml:base="http://a.test/news/"><channel><item><link>story1</link></item>' +
      '<item xml:base="2024/"><link>story2</link></item></channel></rss>';
    assert.deepEqual(
      parseSitemap(rss, 'http://a.test/feed.rss').urls.map((u) => u.loc),
      ['http://a.test/news/story1', 'http://a.test/news/2024/story2'],
    );
  });

  it('Atom: rel="alternate" wins over an earlier rel="edit", hrefs resolve against the feed URL', () => {
    const atom =
      '<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="edit" href="/e/1/edit"/>' +
      '<link rel="alternate" href="/e/1"/><published>2024-01-02T03:04:05+01:00</published></entry></feed>';

    const result = parseSitemap(atom, 'https://b.example/feed.atom');

    assert.deepEqual(result.urls, [{ loc: 'https://b.example/e/1', lastmod: '2024-01-02T03:04:05+01:00' }]);
  });
});

describe('isSitemapOrFeed: a page that turns out to be a sitemap or feed', () => {
  const bytes = (s: string) => new TextEncoder().encode(s);
  const yes: [string, string, string][] = [
    [
      'RSS with a declaration',
      'application/rss+xml',
      '<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>',
    ],
    [
      'Atom after a comment and a BOM',
      'application/atom+xml',
      '\uFEFF<!-- feed -->\n<feed xmlns="http://www.w3.org/2005/Atom"/>',
    ],
    ['RSS 1.0 (RDF) with a prefix', 'application/rdf+xml', '<rdf:RDF xmlns:rdf="x"></rdf:RDF>'],
    [
      'a urlset served as text/xml',
      'text/xml',
      '<?xml-stylesheet href="s.xsl"?><urlset xmlns="x"><url/></urlset>',
    ],
    ['a sitemap index as application/xml with a doctype', 'application/xml', '<!DOCTYPE x><sitemapindex>'],
    [
      'RSS whose doctype has an internal subset (its first ">" ended the doctype)',
      'application/rss+xml',
      '<?xml version="1.0"?>\n<!DOCTYPE rss [ <!ENTITY a "b"> <!ENTITY c "d"> ]>\n<rss version="2.0"><channel/></rss>',
    ],
  ];
  for (const [label, type, body] of yes)
    it(label, () => assert.equal(isSitemapOrFeed(type, bytes(body)), true));
  const no: [string, string | null, string][] = [
    ['other XML', 'application/xml', '<?xml version="1.0"?><catalog><book/></catalog>'],
    ['a root that only starts like one', 'application/xml', '<feedback/>'],
    ['a feed served as HTML', 'text/html', '<rss></rss>'],
    ['no type at all', null, '<urlset></urlset>'],
    ['a feed element that is not the root', 'text/xml', '<doc><rss/></doc>'],
  ];
  for (const [label, type, body] of no)
    it(label, () => assert.equal(isSitemapOrFeed(type, bytes(body)), false));
  it('UTF-16 with its byte order mark', () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<rss version="2.0"/>', 'utf16le')]);
    assert.equal(isSitemapOrFeed('application/rss+xml', utf16), true);
  });
});
