/**
 * What a fetched page becomes: `processPage`, the one pure decision the extract stage calls per
 * page, driven by a table with a row for every kind of page (fetch error, each redirect case,
 * skipped, 304, sitemap, HTML with and without robots directives, soft 404, plain text, PDF,
 * archive, unsupported type) and the limits that cut one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import iconv from 'iconv-lite';
import { type CrawlConfigInput, parseConfig } from '../../../shared/config.ts';
import { OFFICE_MIME } from '../../../shared/crawl/extract/office-zip.ts';
import { processPage } from '../../../shared/crawl/page/page-outcome.ts';
import { createUrlDecider } from '../../../shared/crawl/rules/decide.ts';
import { soft404Fingerprint } from '../../../shared/crawl/url/traps.ts';
import type { FetchedPage, PageOutcome, UrlTask } from '../../../shared/types.ts';
import { minimalPdf, tarFiles } from '../../helpers/archive-builders.ts';
import { minimalDocx, minimalPptx, minimalXlsx, oleFile } from '../../helpers/office-builders.ts';

const SITE = 'http://site.test';
const DOCX_PROPS = {
  title: 'Travel policy',
  creator: 'Ada Lovelace',
  subject: 'Expenses',
  modified: '2026-10-01T08:30:00Z',
};
const AT = '2026-11-23T00:00:00.000Z';
const HTML = (body: string, head = '') =>
  `<!doctype html><html><head><title>T</title>${head}</head><body>${body}</body></html>`;
const LINKS =
  '<p>Some text.</p><a href="/a">a</a> <a href="/b">b</a> <a href="https://elsewhere.test/x">x</a>';

interface Row {
  kind: string;
  page: Partial<Omit<FetchedPage, 'body' | 'task'>> & {
    body?: string | Uint8Array;
    type?: string | null;
    task?: Partial<UrlTask>;
  };
  config?: Partial<CrawlConfigInput>;
  /** the outcomes' states, in order */
  states: PageOutcome['state'][];
  /** the tasks' URLs (paths on the site) and sources */
  tasks?: string[];
  queue?: string;
  /** the tasks' depths, when not the usual (a redirect's the page's, links one deeper) */
  depths?: number[];
  note?: RegExp;
  error?: string;
  rejected?: Record<string, number>;
  /** of `rejected`, those a URL state records too (the report counts them once) */
  recorded?: Record<string, number>;
  check?: (outcomes: PageOutcome[]) => void;
}

function fetched(row: Row): FetchedPage {
  const path = row.page.url ?? '/page';
  const url = `${SITE}${path}`;
  const task: UrlTask = {
    url,
    depth: 0,
    queue: 'user',
    index: true,
    follow: true,
    priority: 0,
    kind: 'page',
    ...row.page.task,
  };
  const { body = '', type = 'text/html; charset=utf-8', ...rest } = row.page;
  const headers: Record<string, string> = type === null ? {} : { 'content-type': type };
  return {
    status: 200,
    fetchedAt: AT,
    truncated: false,
    notModified: false,
    headers,
    ...rest,
    task,
    url,
    body: Buffer.from(body).toString('base64'),
  };
}

const SOFT_404_HTML = HTML("<p>Sorry, we couldn't find that page.</p>").replace(
  '<title>T</title>',
  '<title>Oops</title>',
);

/** What the host answered for a random path (the soft-404 probe), as the fetch stage records it. */
const PROBE_FINGERPRINT = soft404Fingerprint(
  'Oops',
  "Sorry, we couldn't find that page.",
  `${SITE}/q7x2-probe`,
);

const ROWS: Row[] = [
  {
    kind: 'a fetch error: its class and code kept',
    page: { status: 503, error: { kind: 'temporary', code: 'http-503', message: 'Service Unavailable' } },
    states: ['error'],
    error: 'http-503',
  },
  {
    kind: 'a redirect in scope: a redir task with the chain',
    page: { status: 301, redirectTo: `${SITE}/moved` },
    states: ['ignored'],
    note: /redirected to http:\/\/site\.test\/moved/,
    tasks: ['/moved'],
    queue: 'redir',
  },
  {
    kind: 'a redirect with fetch.followRedirects off',
    page: { status: 301, redirectTo: `${SITE}/moved` },
    config: { fetch: { followRedirects: false } },
    states: ['ignored'],
    note: /redirect not followed/,
    tasks: [],
  },
  {
    kind: 'a redirect loop',
    page: { status: 302, redirectTo: `${SITE}/page`, task: { redirectChain: [`${SITE}/start`] } },
    states: ['error'],
    error: 'redirect-loop',
  },
  {
    kind: 'a chain longer than fetch.maxRedirects',
    page: {
      status: 302,
      redirectTo: `${SITE}/next`,
      task: { redirectChain: [`${SITE}/r1`, `${SITE}/r2`, `${SITE}/r3`] },
    },
    config: { fetch: { maxRedirects: 3 } },
    states: ['error'],
    error: 'too-many-redirects',
  },
  {
    kind: 'a malformed Location',
    page: { status: 301, redirectTo: 'http://[oops' },
    states: ['error'],
    error: 'malformed-redirect',
  },
  {
    kind: 'a redirect out of scope',
    page: { status: 301, redirectTo: 'https://elsewhere.test/x' },
    states: ['ignored'],
    note: /redirect target rejected/,
    tasks: [],
    rejected: { offsite: 1 },
    recorded: { offsite: 1 },
  },
  {
    kind: 'a redirect to a 900 KB URL: the note shows scope.maxUrlLength characters of it',
    page: { status: 301, redirectTo: `${SITE}/${'x'.repeat(900_000)}` },
    states: ['ignored'],
    note: /^redirect target rejected \(url-too-long\): http:\/\/site\.test\/x{2031}… \(900017 characters\)$/,
    tasks: [],
  },
  {
    kind: 'a redirect to a long URL, not followed: cut in the note too',
    page: { status: 301, redirectTo: `${SITE}/${'x'.repeat(900_000)}` },
    config: { fetch: { followRedirects: false } },
    states: ['ignored'],
    note: /^redirect not followed: http:\/\/site\.test\/x{2031}… \(900017 characters\)$/,
    tasks: [],
  },
  {
    kind: 'a page not read (robots.txt, ignored type…)',
    page: { skipped: 'disallowed by robots.txt' },
    states: ['ignored'],
    note: /disallowed by robots\.txt/,
  },
  {
    kind: '304 Not Modified: indexed, the document kept',
    page: { status: 304, notModified: true },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.notModified, true);
      assert.equal(o?.doc, undefined);
    },
  },
  {
    kind: '304 with X-Robots-Tag: noindex (a header added since): no document any more, links followed as after a 200',
    page: { status: 304, notModified: true, headers: { 'x-robots-tag': 'noindex' } },
    states: ['followed'],
    note: /^noindex \(X-Robots-Tag: noindex\) on a 304$/,
  },
  {
    kind: '304 with X-Robots-Tag: none: ignored',
    page: { status: 304, notModified: true, headers: { 'x-robots-tag': 'none' } },
    states: ['ignored'],
  },
  {
    kind: "304 with another crawler's X-Robots-Tag: the document kept",
    page: { status: 304, notModified: true, headers: { 'x-robots-tag': 'otherbot: noindex' } },
    states: ['indexed'],
  },
  {
    kind: 'no media type, a body starting <head><title> (a legacy CGI page): HTML (MIME Sniffing)',
    page: { type: null, body: '  \n<head><title>CGI page</title></head><a href="/a">a</a>' },
    states: ['indexed'],
    tasks: ['/a'],
    check: ([o]) => {
      assert.equal(o?.doc?.title, 'CGI page');
      // Read as HTML, it is text/html (it was null); the header it was sent with stays null.
      assert.deepEqual([o?.doc?.mimeType, o?.doc?.contentType], ['text/html', null]);
    },
  },
  {
    kind: 'no media type, a body starting <p>: HTML',
    page: { type: null, body: '<p>Hello <a href="/b">b</a></p>' },
    states: ['indexed'],
    tasks: ['/b'],
  },
  {
    kind: 'no media type, a body starting <pre-release>: no HTML pattern (a tag-terminating byte must follow)',
    page: { type: null, body: '<pre-release>1.0</pre-release>' },
    states: ['ignored'],
  },
  {
    kind: 'XHTML served as application/xhtml+xml: its XML declaration gives the charset, not a <meta>',
    page: {
      type: 'application/xhtml+xml',
      body: Buffer.concat([
        Buffer.from(
          '<?xml version="1.0" encoding="ISO-8859-15"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>',
        ),
        Buffer.from([0xc9, 0x74, 0xe9, 0x20, 0xa4, 0x20, 0xbc]),
        Buffer.from('uvre</title></head><body><p>x</p></body></html>'),
      ]),
    },
    states: ['indexed'],
    check: ([o]) => assert.deepEqual([o?.doc?.title, o?.doc?.charset], ['Été € Œuvre', 'iso-8859-15']),
  },
  {
    kind: 'XHTML served as text/xml: read as the page browsers render, not as XML',
    page: {
      type: 'text/xml',
      body: '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>XHTML page</title><style>.STYLEWORD{color:red}</style><script>var SCRIPTWORD=1;</script></head><body><header>HDR</header><p>Body text <a href="/x">x</a></p></body></html>',
    },
    states: ['indexed'],
    tasks: ['/x'],
    check: ([o]) =>
      assert.deepEqual(
        [o?.doc?.title, o?.doc?.content, o?.doc?.mimeType],
        ['XHTML page', 'Body text x', 'text/xml'],
      ),
  },
  {
    kind: 'other XML served as text/xml stays XML (an element named html elsewhere is no page)',
    page: {
      type: 'text/xml',
      body: '<?xml version="1.0"?><catalog><html>not a page</html><item>Widget</item></catalog>',
    },
    states: ['indexed'],
    check: ([o]) => assert.equal(o?.doc?.content, 'not a page Widget'),
  },
  {
    kind: 'a sitemap task: its entries become tasks, the sitemap no document',
    page: {
      url: '/sitemap.xml',
      type: 'application/xml',
      task: { kind: 'sitemap', index: false },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${SITE}/s1</loc></url><url><loc>${SITE}/s2</loc></url><url><loc>https://elsewhere.test/s3</loc></url></urlset>`,
    },
    states: ['followed'],
    note: /urlset: 3 URLs/,
    tasks: ['/s1', '/s2'],
    rejected: { offsite: 1 },
    recorded: {},
  },
  {
    kind: 'a gzipped sitemap is a sitemap, not an archive',
    page: {
      url: '/sitemap.xml.gz',
      type: 'application/gzip',
      task: { kind: 'sitemap', index: false },
      body: gzipSync(
        `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${SITE}/z</loc></url></urlset>`,
      ),
    },
    states: ['followed'],
    tasks: ['/z'],
  },
  {
    kind: 'HTML: a document, its in-scope links followed',
    page: { body: HTML(LINKS) },
    states: ['indexed'],
    tasks: ['/a', '/b'],
    rejected: { offsite: 1 },
    check: ([o]) => {
      assert.equal(o?.doc?.title, 'T');
      assert.match(o?.doc?.content ?? '', /Some text\./);
      assert.match(o?.doc?.hash ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.ok(o?.dup?.digest);
    },
  },
  {
    kind: 'HTML without a content type, recognised by its start',
    page: { body: HTML(LINKS), type: null },
    states: ['indexed'],
    tasks: ['/a', '/b'],
  },
  {
    kind: 'HTML with meta robots noindex: followed, no document',
    page: { body: HTML(LINKS, '<meta name="robots" content="noindex">') },
    states: ['followed'],
    note: /noindex/,
    tasks: ['/a', '/b'],
  },
  {
    kind: 'HTML with a meta for this crawler (fetch.userAgent "Acme-Bot/2.0"): noindex applies',
    page: { body: HTML(LINKS, '<meta name="acme-bot" content="noindex">') },
    config: { fetch: { userAgent: 'Acme-Bot/2.0 (+https://acme.example/bot)' } },
    states: ['followed'],
    note: /noindex \(meta acme-bot: noindex\)/,
    tasks: ['/a', '/b'],
  },
  {
    // A redirect without a 3xx (intranets above all): the stub was indexed beside its target.
    kind: 'HTML with an instant meta refresh to another page: a redirect, no document, the target followed',
    page: { body: HTML('<p>Moved, redirecting…</p>', '<meta http-equiv="refresh" content="0; url=/new">') },
    states: ['followed'],
    note: /^redirected to http:\/\/site\.test\/new \(meta refresh\)$/,
    tasks: ['/new'],
    // As an HTTP redirect's target: at the page's depth, through the redir source.
    queue: 'redir',
  },
  {
    // Browsers follow the header as they follow the element: its stub was indexed, its target never found.
    kind: 'HTML with an instant Refresh header: a redirect as the meta element is',
    page: {
      body: HTML('<p>Redirecting…</p>'),
      headers: { 'content-type': 'text/html', refresh: '0; url=refresh-target' },
    },
    states: ['followed'],
    note: /^redirected to http:\/\/site\.test\/refresh-target \(Refresh header\)$/,
    tasks: ['/refresh-target'],
    queue: 'redir',
  },
  {
    kind: 'HTML with a delayed Refresh header: a document, the target a link',
    page: {
      body: HTML('<p>Read this.</p>'),
      headers: { 'content-type': 'text/html', refresh: '10;url=/later' },
    },
    states: ['indexed'],
    tasks: ['/later'],
  },
  {
    kind: 'HTML with a delayed meta refresh: a document of its own, the target a link',
    page: { body: HTML('<p>Read this first.</p>', '<meta http-equiv="refresh" content="5; url=/new">') },
    states: ['indexed'],
    tasks: ['/new'],
  },
  {
    kind: 'HTML with an instant meta refresh and meta robots nofollow: the document is kept',
    page: {
      body: HTML(
        '<p>Moved.</p>',
        '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/new">',
      ),
    },
    states: ['indexed'],
    tasks: [],
  },
  {
    kind: 'HTML naming another URL its canonical (default): a document, the canonical recorded, not fetched',
    page: { url: '/p?utm_source=mail', body: HTML(LINKS, '<link rel="canonical" href="/p">') },
    states: ['indexed'],
    tasks: ['/a', '/b'],
    check: ([o]) => assert.equal(o?.doc?.canonical, `${SITE}/p`),
  },
  {
    kind: 'extract.honorCanonical: a page naming another URL is followed, not indexed; the canonical is fetched',
    page: {
      url: '/p?utm_source=mail',
      body: HTML(LINKS, '<link rel="canonical" href="/p">'),
      task: { depth: 2 },
    },
    config: { extract: { honorCanonical: true } },
    states: ['followed'],
    note: /^canonical is http:\/\/site\.test\/p \(extract\.honorCanonical\): that URL is indexed instead$/,
    tasks: ['/a', '/b', '/p'],
    // The canonical stands where its copy stood; the links are one deeper.
    depths: [3, 3, 2],
    queue: 'index_follow',
    check: (outcomes) => assert.equal(outcomes[0]?.doc, undefined),
  },
  {
    kind: 'extract.honorCanonical with meta robots nofollow: not indexed, only the canonical fetched',
    page: {
      url: '/p?utm_source=mail',
      body: HTML(LINKS, '<meta name="robots" content="nofollow"><link rel="canonical" href="/p">'),
    },
    config: { extract: { honorCanonical: true } },
    states: ['ignored'],
    tasks: ['/p'],
    depths: [0],
  },
  {
    kind: 'extract.honorCanonical: a page naming itself is a document',
    page: { url: '/p', body: HTML(LINKS, '<link rel="canonical" href="http://site.test/p">') },
    config: { extract: { honorCanonical: true } },
    states: ['indexed'],
    tasks: ['/a', '/b'],
  },
  {
    kind: 'extract.honorCanonical: a canonical the crawl rejects (another host) leaves the page a document',
    page: { url: '/p', body: HTML('<p>text</p>', '<link rel="canonical" href="https://elsewhere.test/p">') },
    config: { extract: { honorCanonical: true } },
    states: ['indexed'],
    tasks: [],
  },
  {
    // `/p` answered 301 to `/p/`, which names `/p`: the site contradicts itself; the content is kept.
    kind: 'extract.honorCanonical: a canonical the page was redirected from leaves the page a document',
    page: {
      url: '/p/',
      body: HTML('<p>text</p>', '<link rel="canonical" href="/p">'),
      task: { redirectChain: [`${SITE}/p`] },
    },
    config: { extract: { honorCanonical: true } },
    states: ['indexed'],
    tasks: [],
  },
  {
    kind: 'extract.honorCanonical with discovery off: nothing would fetch the canonical, the page stays a document',
    page: { url: '/p?utm_source=mail', body: HTML('<p>text</p>', '<link rel="canonical" href="/p">') },
    config: { extract: { honorCanonical: true }, discovery: false },
    states: ['indexed'],
    tasks: [],
  },
  {
    kind: 'HTML with meta robots nofollow: a document, no links; they are counted and said on its state',
    page: { body: HTML(LINKS, '<meta name="robots" content="nofollow">') },
    states: ['indexed'],
    tasks: [],
    note: /^3 links not followed: nofollow \(meta robots: nofollow\)$/,
    rejected: { 'page-nofollow': 3 },
  },
  {
    kind: 'an X-Robots-Tag nofollow says so too',
    page: { body: HTML(LINKS), headers: { 'content-type': 'text/html', 'x-robots-tag': 'nofollow' } },
    states: ['indexed'],
    tasks: [],
    note: /nofollow \(X-Robots-Tag: nofollow\)/,
  },
  {
    kind: 'HTML a rule marks noIndex: followed, no document',
    page: { body: HTML(LINKS), task: { index: false } },
    states: ['followed'],
    note: /rule: noIndex/,
    tasks: ['/a', '/b'],
  },
  {
    kind: 'HTML with discovery off: a document, no links',
    page: { body: HTML(LINKS) },
    config: { discovery: false },
    states: ['indexed'],
    tasks: [],
  },
  {
    kind: 'HTML cut at fetch.maxBytes: a document with a note',
    page: { body: HTML('<p>Half a page</p>'), truncated: true },
    states: ['indexed'],
    note: /truncated at fetch\.maxBytes/,
  },
  {
    kind: "a PDF's Author, Subject and Keywords: mapped as a page's <meta> tags, its Subject the description",
    page: {
      url: '/paper.pdf',
      type: 'application/pdf',
      body: minimalPdf('Findings', 'Paper', {
        Author: 'Ada Lovelace',
        Subject: 'On engines',
        Keywords: 'math, engines',
      }),
    },
    config: { extract: { metadataMapping: { Author: 'author', keywords: 'tags' } } },
    states: ['indexed'],
    check: ([o]) => {
      assert.deepEqual(o?.doc?.meta, { author: 'Ada Lovelace', tags: 'math, engines' });
      assert.equal(o?.doc?.description, 'On engines');
      assert.equal(o?.doc?.title, 'Paper');
    },
  },
  {
    kind: 'a PDF that needs a password: not read, and the note says so',
    page: {
      url: '/locked.pdf',
      type: 'application/pdf',
      body: readFileSync(join(import.meta.dirname, '../../fixtures/pdf/user-password.pdf')),
    },
    states: ['ignored'],
    note: /^encrypted PDF: a password is needed to open it$/,
  },
  {
    kind: 'a PDF cut at fetch.maxBytes: not read, and the note says why (its table is at its end)',
    page: {
      url: '/report.pdf',
      type: 'application/pdf',
      body: minimalPdf('Quarterly report').subarray(0, 200),
      truncated: true,
    },
    states: ['ignored'],
    note: /^unreadable PDF: truncated at fetch\.maxBytes \(10485760 bytes\)$/,
    rejected: { 'limit-fetch-max-bytes': 1 },
  },
  {
    kind: 'a zip cut at fetch.maxBytes: no element, and the note says why (its directory is at its end)',
    page: {
      url: '/files/docs.zip',
      type: 'application/zip',
      body: zipSync({ 'a.txt': strToU8('a'.repeat(500)) }).subarray(0, 100),
      truncated: true,
    },
    config: { scope: { ignoredExtensions: [] } },
    states: ['followed'],
    note: /^archive with 0 element\(s\), truncated at fetch\.maxBytes \(10485760 bytes\), not read: .*corrupt zip archive/,
    rejected: { 'limit-fetch-max-bytes': 1 },
  },
  {
    kind: 'HTML over limits.linksPerPage: the first links, the rest counted',
    page: { body: HTML(['/a', '/b', '/c', '/d'].map((p) => `<a href="${p}">${p}</a>`).join(' ')) },
    config: { limits: { linksPerPage: 2 } },
    states: ['indexed'],
    tasks: ['/a', '/b'],
    note: /2 links dropped at limits\.linksPerPage/,
    rejected: { 'limit-links-per-page': 2 },
  },
  {
    kind: 'a title and metadata past limits.titleChars / metaValueChars: cut, counted, noted',
    page: {
      body: `<html><head><title>${'T'.repeat(50)}</title><meta name="description" content="${'d'.repeat(30)}"><meta name="author" content="ok"></head><body>text</body></html>`,
    },
    config: {
      limits: { titleChars: 20, metaValueChars: 10 },
      extract: { metadataMapping: { description: 'description', author: 'author' } },
    },
    states: ['indexed'],
    // The description field is one of the metadata values cut.
    note: /title of 50 characters cut at limits\.titleChars \(20\); 2 metadata values cut/,
    rejected: { 'limit-title': 1, 'limit-meta-value': 1 },
    check: ([o]) => {
      assert.equal(o?.doc?.title, 'T'.repeat(20));
      assert.deepEqual(o?.doc?.meta, { description: 'd'.repeat(10), author: 'ok' });
      assert.equal(o?.doc?.description, 'd'.repeat(10));
    },
  },
  {
    kind: "a soft 404: the host's answer to a random path",
    page: { url: '/docs/old-item', body: SOFT_404_HTML, soft404: PROBE_FINGERPRINT, task: { depth: 1 } },
    states: ['error'],
    error: 'soft-404',
    tasks: [],
  },
  {
    // A host that answers unknown paths with its home page: the home page is no soft 404.
    kind: "a start URL with the probe's answer: a document (the host serves it for unknown paths)",
    page: { url: '/docs/old-item', body: SOFT_404_HTML, soft404: PROBE_FINGERPRINT },
    states: ['indexed'],
  },
  {
    kind: "a host's root with the probe's answer, at any depth: a document",
    page: { url: '/', body: SOFT_404_HTML, soft404: PROBE_FINGERPRINT, task: { depth: 2 } },
    states: ['indexed'],
  },
  {
    kind: 'a page of a soft-404 host that is not its not-found answer',
    page: { body: HTML(LINKS), soft404: PROBE_FINGERPRINT },
    states: ['indexed'],
    tasks: ['/a', '/b'],
  },
  {
    kind: 'text/xml served as a page: its text and CDATA, not its markup',
    page: {
      url: '/data/items',
      type: 'text/xml',
      body: '<?xml version="1.0"?><items><item>first</item><item><![CDATA[second <b>]]></item>&amp;<x>last</x></items>',
    },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.content, 'first second <b> & last');
      assert.equal(o?.doc?.title, 'items');
    },
  },
  {
    kind: 'plain text: a document named after its last path segment',
    page: { url: '/notes/readme.txt', type: 'text/plain', body: 'Plain   words\nhere' },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.content, 'Plain words here');
      assert.equal(o?.doc?.title, 'readme');
      assert.equal(o?.doc?.charset, 'utf-8', 'none declared: the charset the text was decoded with');
    },
  },
  {
    // The document's charset is the one the text was decoded with: it was the header's label, null
    // for a charset from <meta>, and the header's even where a BOM or <meta> overruled it.
    kind: 'HTML whose charset is declared in <meta> only: decoded with it, and says so',
    page: {
      type: 'text/html',
      body: new Uint8Array(Buffer.from(HTML('<p>caf\u00e9</p>', '<meta charset="windows-1252">'), 'latin1')),
    },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.content, 'café');
      assert.equal(o?.doc?.charset, 'windows-1252');
      assert.equal(o?.doc?.contentType, 'text/html');
    },
  },
  {
    // What a browser asks for: the query in the page's encoding, the path in UTF-8 (URL standard).
    kind: "a Shift_JIS page's links: queries encoded in Shift_JIS, paths in UTF-8",
    page: {
      type: 'text/html; charset=shift_jis',
      body: new Uint8Array(
        iconv.encode(
          HTML('<a href="/find?q=日本&amp;p=2">f</a><a href="/日本/">d</a><a href="/x?t=&#8364;">e</a>'),
          'shift_jis',
        ),
      ),
    },
    states: ['indexed'],
    tasks: ['/find?q=%93%FA%96%7B&p=2', '/%E6%97%A5%E6%9C%AC/', '/x?t=%26%238364%3B'],
  },
  {
    kind: 'HTML with a UTF-8 BOM under a latin-1 header: decoded as UTF-8, and says so',
    page: {
      type: 'text/html; charset=iso-8859-1',
      body: new Uint8Array(
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(HTML('<p>über</p>'))]),
      ),
    },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.content, 'über');
      assert.equal(o?.doc?.charset, 'utf-8');
    },
  },
  {
    kind: 'a PDF: a document with its text and title',
    page: {
      url: '/report.pdf',
      type: 'application/pdf',
      body: minimalPdf('Quarterly figures', 'The Report'),
    },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.title, 'The Report');
      assert.match(o?.doc?.content ?? '', /Quarterly figures/);
      assert.equal(o?.doc?.charset, null);
      assert.equal(o?.doc?.canonical, undefined, 'no Link header: no canonical');
    },
  },
  {
    // The only way a PDF says noindex; until 2026-11-28 only HTML heeded it (a leak of what sites hide).
    kind: 'a PDF with X-Robots-Tag: noindex: fetched, no document',
    page: {
      url: '/salaries.pdf',
      headers: { 'content-type': 'application/pdf', 'x-robots-tag': 'noindex' },
      body: minimalPdf('Confidential salary bands'),
    },
    states: ['followed'],
    note: /^noindex \(X-Robots-Tag: noindex\)$/,
    check: ([o]) => assert.equal(o?.doc, undefined),
  },
  {
    kind: 'a text file with X-Robots-Tag naming the crawler: none',
    page: {
      url: '/notes.txt',
      body: 'Notes.',
      headers: { 'content-type': 'text/plain', 'x-robots-tag': 'trawl: none' },
    },
    states: ['ignored'],
    note: /noindex \(X-Robots-Tag: trawl: none\)/,
  },
  {
    kind: "a text file with X-Robots-Tag for another crawler's token: a document",
    page: {
      url: '/notes.txt',
      body: 'Notes.',
      headers: { 'content-type': 'text/plain', 'x-robots-tag': 'otherbot: noindex' },
    },
    states: ['indexed'],
  },
  {
    kind: 'a PDF with X-Robots-Tag: noindex in Rogue mode: a document',
    page: {
      url: '/salaries.pdf',
      headers: { 'content-type': 'application/pdf', 'x-robots-tag': 'noindex' },
      body: minimalPdf('Confidential salary bands'),
    },
    config: { fetch: { respectRobotsTxt: false } },
    states: ['indexed'],
  },
  {
    kind: 'a PDF a rule marks noIndex: fetched, no document',
    page: {
      url: '/report.pdf',
      type: 'application/pdf',
      body: minimalPdf('Quarterly figures'),
      task: { index: false },
    },
    states: ['followed'],
    note: /^rule: noIndex$/,
  },
  {
    kind: 'an archive with X-Robots-Tag: noindex: none of its elements is a document',
    page: {
      url: '/files/docs.tar.gz',
      headers: { 'content-type': 'application/gzip', 'x-robots-tag': 'noindex' },
      body: gzipSync(tarFiles({ 'a.html': HTML('<p>Element A</p>'), 'b.txt': 'Element B' })),
    },
    states: ['followed'],
  },
  {
    // Sites mark their sitemaps noindex for search engines; the crawler still reads them.
    kind: 'a sitemap with X-Robots-Tag: noindex is still read',
    page: {
      url: '/sitemap.xml',
      headers: { 'content-type': 'application/xml', 'x-robots-tag': 'noindex' },
      body: '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://site.test/a</loc></url></urlset>',
      task: { kind: 'sitemap', index: false },
    },
    states: ['followed'],
    tasks: ['/a'],
  },
  {
    // A download link's PDF: until 2026-11-28 `ignored` as an unsupported type.
    kind: 'a PDF served as application/octet-stream: known by its bytes, a PDF document',
    page: { url: '/download?id=7', type: 'application/octet-stream', body: minimalPdf('Quarterly figures') },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.mimeType, 'application/pdf');
      assert.match(o?.doc?.content ?? '', /Quarterly figures/);
    },
  },
  {
    // Until 2026-11-29 Office documents were `ignored` as an unsupported type.
    kind: 'a .docx: one document of its text, its title, author and date from its core properties',
    page: {
      url: '/files/policy.docx',
      type: OFFICE_MIME.docx,
      body: minimalDocx([['Travel rules']], DOCX_PROPS),
    },
    config: { extract: { metadataMapping: { author: 'author' } } },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.mimeType, OFFICE_MIME.docx);
      assert.equal(o?.doc?.title, 'Travel policy');
      assert.equal(o?.doc?.content, 'Travel rules');
      assert.equal(o?.doc?.description, 'Expenses');
      assert.deepEqual(o?.doc?.meta, { author: 'Ada Lovelace' });
      assert.equal(o?.doc?.lastModified, '2026-10-01T08:30:00.000Z');
      assert.equal(o?.doc?.charset, null);
    },
  },
  {
    kind: "a .docx whose text is past fetch.maxBytes: cut there and noted, as an HTML page's",
    page: { url: '/files/long.docx', type: OFFICE_MIME.docx, body: minimalDocx([['word '.repeat(400)]]) },
    config: { fetch: { maxBytes: 1000 } },
    states: ['indexed'],
    rejected: { 'limit-fetch-max-bytes': 1 },
    check: ([o]) => {
      assert.equal(o?.doc?.content.length, 1000, 'cut at 1000 characters');
      assert.match(o?.note ?? '', /Office text cut at fetch\.maxBytes \(1000 characters of \d+\)/);
    },
  },
  {
    kind: 'a .docx served as application/octet-stream: known by its parts, a document of its type',
    page: { url: '/download?id=9', type: 'application/octet-stream', body: minimalDocx([['Travel rules']]) },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.mimeType, OFFICE_MIME.docx);
      assert.equal(o?.doc?.content, 'Travel rules');
      assert.equal(o?.doc?.title, 'download');
    },
  },
  {
    kind: 'a .pptx served as application/zip is one document, not an archive of its parts',
    page: { url: '/get/deck', type: 'application/zip', body: minimalPptx([['One'], ['Two']]) },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.mimeType, OFFICE_MIME.pptx);
      assert.equal(o?.doc?.content, 'One Two');
      assert.equal(o?.element, undefined);
    },
  },
  {
    kind: 'a password-protected .docx (an OLE file): ignored with a note',
    page: { url: '/secret.docx', type: OFFICE_MIME.docx, body: oleFile() },
    states: ['ignored'],
    note: /^encrypted Office document: a password is needed to open it$/,
  },
  {
    kind: 'a .docx whose document.xml inflates past limits.archiveBytes: not inflated, counted and noted',
    page: { url: '/bomb.docx', type: OFFICE_MIME.docx, body: minimalDocx([['x'.repeat(3 * 1024 * 1024)]]) },
    config: { limits: { archiveBytes: 1024 * 1024 } },
    states: ['ignored'],
    note: /Office document not read: word\/document\.xml declares \d+ bytes, over .* limits\.archiveBytes/,
    rejected: { 'limit-archive': 1 },
  },
  {
    kind: 'a legacy binary .doc stays unsupported',
    page: { url: '/old.doc', type: 'application/msword', body: oleFile() },
    states: ['ignored'],
    note: /unsupported mime type application\/msword/,
  },
  {
    kind: 'an .xlsx in a zip archive is an element document of its type',
    page: {
      url: '/bundle?format=zip',
      type: 'application/zip',
      body: zipSync({ 'budget.xlsx': minimalXlsx([['Budget', [['Flights', 1250]]]]) }),
    },
    states: ['indexed', 'followed'],
    check: ([el]) => {
      assert.equal(el?.doc?.mimeType, OFFICE_MIME.xlsx);
      assert.equal(el?.doc?.content, 'Budget Flights 1250');
    },
  },
  {
    // The element's URL is `<archive url>/<entry>`, so with a query the entry lands in the query:
    // every element was titled "download", after the archive's path.
    kind: 'elements of an archive whose URL has a query: untitled ones named after their entry',
    page: {
      url: '/download?id=7',
      type: 'application/zip',
      body: zipSync({
        'guide_intro.txt': strToU8('Intro'),
        'sub/release-notes.html': strToU8('<p>Notes</p>'),
        'titled.html': strToU8(HTML('<p>x</p>')),
        'pct%41.txt': strToU8('Percent'),
      }),
    },
    states: ['indexed', 'indexed', 'indexed', 'indexed', 'followed'],
    check: (outcomes) => {
      const titles = Object.fromEntries(
        outcomes.map((o) => [o.url.replace(/^.*\?id=7\//, ''), o.doc?.title]),
      );
      assert.deepEqual(titles, {
        'guide_intro.txt': 'guide intro',
        'sub/release-notes.html': 'release notes',
        'titled.html': 'T',
        // The entry's name as the archive wrote it (its URL escapes the %), not decoded again.
        'pct%2541.txt': 'pct%41',
        [`${SITE}/download?id=7`]: undefined,
      });
    },
  },
  {
    kind: 'a 204, or a body of white space only: nothing to index',
    page: { status: 204, body: '' },
    states: ['ignored'],
    note: /^no content \(HTTP 204\)$/,
  },
  {
    kind: 'a 200 of white space: an empty body',
    page: { body: ' \r\n\t ' },
    states: ['ignored'],
    note: /^empty body$/,
  },
  {
    kind: 'other bytes served as application/octet-stream: unsupported',
    page: { url: '/download?id=8', type: 'application/octet-stream', body: '\u0000\u0001 not a pdf' },
    states: ['ignored'],
    note: /unsupported mime type application\/octet-stream/,
  },
  {
    kind: 'a PDF whose Link header names its canonical: recorded, and folding keeps that URL',
    page: {
      url: '/report-print.pdf',
      type: 'application/pdf',
      headers: { 'content-type': 'application/pdf', link: '</report.pdf>; rel="canonical"' },
      body: minimalPdf('Quarterly figures', 'The Report'),
    },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.canonical, `${SITE}/report.pdf`);
      assert.equal(o?.dup?.canonical, `${SITE}/report.pdf`);
    },
  },
  {
    kind: 'a canonical longer than scope.maxUrlLength is left out, and the note says so',
    page: { body: HTML(`<link rel="canonical" href="/${'c'.repeat(3000)}"><p>text</p>`) },
    states: ['indexed'],
    check: ([o]) => {
      assert.equal(o?.doc?.canonical, null);
      assert.equal(o?.dup?.canonical, null);
      assert.match(o?.note ?? '', /canonical of 30\d\d characters left out \(scope\.maxUrlLength 2048\)/);
    },
  },
  {
    kind: 'a PDF over limits.pdfBytes: not parsed',
    page: { url: '/big.pdf', type: 'application/pdf', body: minimalPdf('x'.repeat(2000)) },
    config: { limits: { pdfBytes: 1000 } },
    states: ['ignored'],
    note: /over limits\.pdfBytes/,
    rejected: { 'limit-pdf-bytes': 1 },
  },
  {
    kind: 'an unreadable PDF',
    page: { url: '/broken.pdf', type: 'application/pdf', body: '%PDF-1.4 nothing else' },
    states: ['ignored'],
    note: /unreadable PDF/,
  },
  {
    kind: 'an archive: one document per readable element, the archive followed',
    page: {
      url: '/files/docs.tar.gz',
      type: 'application/gzip',
      body: gzipSync(
        tarFiles({ 'a.html': HTML('<p>Element A</p>'), 'b.txt': 'Element B', 'c.bin': '\u0000\u0001' }),
      ),
    },
    states: ['indexed', 'indexed', 'followed'],
    note: /archive with 3 element\(s\), 1 not indexable/,
    check: (outcomes) => {
      const elements = outcomes.filter((o) => o.element);
      assert.deepEqual(
        elements.map((o) => o.url),
        [`${SITE}/files/docs.tar.gz/a.html`, `${SITE}/files/docs.tar.gz/b.txt`],
      );
      assert.deepEqual(elements[1]?.doc?.compoundPath, [`${SITE}/files/docs.tar.gz`]);
    },
  },
  {
    kind: 'a page fetched under a capped Crawl-delay: counted and noted',
    page: {
      body: HTML('<p>Slow host</p>'),
      capped: [
        { limit: 'limit-crawl-delay', note: 'Crawl-delay 86400 s capped at limits.crawlDelayMs (60000 ms)' },
      ],
    },
    states: ['indexed'],
    note: /Crawl-delay 86400 s capped at limits\.crawlDelayMs/,
    rejected: { 'limit-crawl-delay': 1 },
  },
  {
    kind: 'a task the fetch stage found out of scope under a changed config: ignored, its reason counted',
    page: { url: '/private/p', status: 0, type: null, outOfScope: 'excluded', task: { depth: 1 } },
    // The fetch stage's decision stands (nothing was fetched to judge again), whatever this config says.
    states: ['ignored'],
    note: /^out-of-scope: excluded$/,
    tasks: [],
    rejected: { excluded: 1 },
    recorded: { excluded: 1 },
  },
  {
    kind: 'a fetched page that a config changed since rejects: ignored, its reason counted',
    page: { url: '/private/p', body: HTML(LINKS), task: { depth: 1 } },
    config: { scope: { exclude: ['/private/'] } },
    states: ['ignored'],
    note: /^out-of-scope: excluded$/,
    tasks: [],
    rejected: { excluded: 1 },
    recorded: { excluded: 1 },
  },
  {
    kind: 'a depth-0 page the config no longer names as a start URL: judged as any URL, out of scope',
    // A start URL removed from the config (or a start URL's redirect target, which keeps depth 0):
    // the fetch stage and the refresh cycle judge it as any URL at its depth; so does extraction.
    page: { url: '/private/old-start', body: HTML(LINKS), task: { depth: 0 } },
    config: { scope: { exclude: ['/private/'] } },
    states: ['ignored'],
    note: /^out-of-scope: excluded$/,
    tasks: [],
    rejected: { excluded: 1 },
    recorded: { excluded: 1 },
  },
  {
    kind: 'a start URL the config names, which its scope would exclude: crawled, as when seeded',
    page: { url: '/private/start', body: HTML(LINKS), task: { depth: 0 } },
    config: { startUrls: [`${SITE}/private/start`], scope: { exclude: ['/private/'] } },
    states: ['indexed'],
  },
  {
    kind: 'an unsupported type',
    page: { url: '/logo', type: 'image/png', body: '\u0089PNG' },
    states: ['ignored'],
    note: /unsupported mime type image\/png/,
  },
];

describe('processPage: what a fetched page becomes', () => {
  for (const row of ROWS) {
    it(row.kind, async () => {
      const config = parseConfig({ name: 'pages', startUrls: [`${SITE}/`], ...row.config });
      const page = fetched(row);
      const r = await processPage(page, { config, decider: createUrlDecider(config), now: AT });
      assert.deepEqual(
        r.outcomes.map((o) => o.state),
        row.states,
      );
      const own = r.outcomes.at(-1) as PageOutcome;
      assert.equal(own.url, page.url, 'the last outcome is the page itself');
      assert.equal(own.fetchedAt, AT);
      if (row.note) assert.match(own.note ?? '', row.note);
      if (row.error) assert.equal(own.error?.code, row.error);
      if (row.tasks)
        assert.deepEqual(
          r.tasks.map((t) => t.url.replace(SITE, '')),
          row.tasks,
        );
      if (row.queue) for (const t of r.tasks) assert.equal(t.queue, row.queue);
      if (row.rejected)
        for (const [reason, n] of Object.entries(row.rejected)) assert.equal(r.rejected[reason], n, reason);
      if (row.recorded) assert.deepEqual(r.recorded ?? {}, row.recorded);
      // A redirect target stands where its page stood; links and sitemap entries are one deeper.
      if (row.depths)
        assert.deepEqual(
          r.tasks.map((t) => t.depth),
          row.depths,
        );
      else for (const t of r.tasks) assert.equal(t.depth, row.queue === 'redir' ? 0 : 1);
      row.check?.(r.outcomes);
    });
  }

  it('a redirect task carries the chain and the page kind', async () => {
    const config = parseConfig({ name: 'pages', startUrls: [`${SITE}/`] });
    const page = fetched({
      kind: '',
      page: { redirectTo: `${SITE}/moved`, task: { kind: 'sitemap' } },
      states: [],
    });
    const r = await processPage(page, { config, decider: createUrlDecider(config), now: AT });
    assert.deepEqual(r.tasks[0]?.redirectChain, [`${SITE}/page`]);
    assert.equal(r.tasks[0]?.kind, 'sitemap');
  });

  it('an instant meta refresh is a redirect: in the chain, at its depth, and within maxRedirects', async () => {
    const config = parseConfig({ name: 'pages', startUrls: [`${SITE}/`], fetch: { maxRedirects: 2 } });
    const ctx = { config, decider: createUrlDecider(config), now: AT };
    const refresh = HTML('<p>Moved.</p>', '<meta http-equiv="refresh" content="0; url=/new">');
    const r = await processPage(
      fetched({ kind: '', page: { body: refresh, task: { depth: 3 } }, states: [] }),
      ctx,
    );
    assert.deepEqual(
      r.tasks.map((t) => [t.url, t.depth, t.queue, t.redirectChain]),
      [[`${SITE}/new`, 3, 'redir', [`${SITE}/page`]]],
    );
    // One hop past maxRedirects, and a loop: permanent errors, as for HTTP redirects; no task.
    const chain = [`${SITE}/r1`, `${SITE}/r2`];
    const full = await processPage(
      fetched({ kind: '', page: { body: refresh, task: { redirectChain: chain } }, states: [] }),
      ctx,
    );
    assert.deepEqual(
      full.outcomes.map((o) => [o.state, o.error?.code]),
      [['error', 'too-many-redirects']],
    );
    assert.deepEqual(full.tasks, []);
    const loop = await processPage(
      fetched({ kind: '', page: { body: refresh, task: { redirectChain: [`${SITE}/new`] } }, states: [] }),
      ctx,
    );
    assert.deepEqual(
      loop.outcomes.map((o) => [o.state, o.error?.code]),
      [['error', 'redirect-loop']],
    );
  });

  it('the same page gives the same document hash; changed text a different one', async () => {
    const config = parseConfig({ name: 'pages', startUrls: [`${SITE}/`] });
    const ctx = { config, decider: createUrlDecider(config), now: AT };
    const hash = async (body: string) =>
      (await processPage(fetched({ kind: '', page: { body }, states: [] }), ctx)).outcomes[0]?.doc?.hash;
    assert.equal(await hash(HTML('<p>one</p>')), await hash(HTML('<p>one</p>')));
    assert.notEqual(await hash(HTML('<p>one</p>')), await hash(HTML('<p>two</p>')));
  });
  it('rejected links: counted by reason, and a few of each kept with where they were found', async () => {
    const config = parseConfig({ name: 'pages', startUrls: [`${SITE}/`], scope: { maxDepth: 1 } });
    const ctx = { config, decider: createUrlDecider(config), now: AT };
    const nofollow = [1, 2, 3, 4, 5].map((i) => `<a rel="nofollow" href="/nf${i}">n</a>`).join('');
    const body = HTML(`${LINKS}${nofollow}<a href="https://elsewhere.test/y">y</a>`);
    const top = await processPage(fetched({ kind: '', page: { url: '/', body }, states: [] }), ctx);
    assert.deepEqual(top.rejected, { offsite: 2, 'rel-nofollow': 5 });
    assert.deepEqual(top.examples, {
      offsite: [
        `https://elsewhere.test/x (depth 1, linked from ${SITE}/)`,
        `https://elsewhere.test/y (depth 1, linked from ${SITE}/)`,
      ],
      'rel-nofollow': [1, 2, 3].map((i) => `${SITE}/nf${i} (linked from ${SITE}/)`),
    });
    // One deeper than scope.maxDepth: the depth the link would have had is in its example.
    const deep = await processPage(
      fetched({
        kind: '',
        page: { url: '/a', body: HTML('<a href="/deeper">d</a>'), task: { depth: 1 } },
        states: [],
      }),
      ctx,
    );
    assert.deepEqual(deep.examples, { 'max-depth': [`${SITE}/deeper (depth 2, linked from ${SITE}/a)`] });
    const moved = await processPage(
      fetched({
        kind: '',
        page: { url: '/m', status: 301, redirectTo: 'https://elsewhere.test/z' },
        states: [],
      }),
      ctx,
    );
    assert.deepEqual(moved.examples, { offsite: [`https://elsewhere.test/z (redirect from ${SITE}/m)`] });
  });
});
