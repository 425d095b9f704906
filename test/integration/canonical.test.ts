// rel=canonical end to end (extract.honorCanonical): by default a page naming another URL its
// canonical is a document of its own (the canonical recorded); honored, the page is followed only
// and the canonical, linked from nowhere, is fetched and indexed in its place. A canonical the
// crawl rejects, or the one the page was redirected from, leaves the page a document. Turning the
// option off again brings the copies' documents back at the next refresh cycle. A PDF names its
// canonical in a Link header: honored the same way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { minimalPdf } from '../helpers/archive-builders.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, text: string, canonical?: string) => ({
  body:
    `<html><head><title>${title}</title>` +
    (canonical ? `<link rel="canonical" href="${canonical}">` : '') +
    `</head><body><p>${text}</p></body></html>`,
});

describe('rel=canonical', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    // `/p` itself is linked from nowhere: only its copy's canonical names it.
    const links = ['/p?utm_source=mail', '/q', '/r', '/x', '/d.pdf?v=2']
      .map((l) => `<a href="${l}">x</a>`)
      .join(' ');
    site.route('/', { body: `<html><head><title>Home</title></head><body>${links}</body></html>` });
    // The copy differs a little (a visit stamp): duplicate folding alone keeps both.
    site.route('/p?utm_source=mail', page('Pi', 'The pi article. You came from our mail.', '/p'));
    site.route('/p', page('Pi', 'The pi article.', '/p'));
    site.route('/q', page('Q', 'The q article.', '/q'));
    // `/r` answers 301 to `/r/`, which names `/r` its canonical: the site contradicts itself.
    site.route('/r', { status: 301, headers: { location: '/r/' } });
    site.route('/r/', page('R', 'The r article.', '/r'));
    // A canonical on a host the crawl does not fetch.
    site.route('/x', page('X', 'The x article.', 'https://elsewhere.example/x'));
    // A PDF's copy names the PDF its canonical in a Link header (RFC 8288, as Google reads it).
    const pdf = { 'content-type': 'application/pdf' };
    site.route('/d.pdf?v=2', {
      body: Buffer.from(minimalPdf('The d report, second print.', 'D')),
      headers: { ...pdf, link: '</d.pdf>; rel="canonical"' },
    });
    site.route('/d.pdf', { body: Buffer.from(minimalPdf('The d report.', 'D')), headers: pdf });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  const configFor = (name: string, honorCanonical: boolean) =>
    parseConfig({
      name,
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      extract: { honorCanonical },
    });
  const docPaths = async (s: Awaited<ReturnType<typeof openSession>>) => {
    const out: string[] = [];
    for await (const d of documents(s)) out.push(String(d.url).slice(site.url.length));
    return out.sort();
  };
  const stateOf = async (s: Awaited<ReturnType<typeof openSession>>, path: string) => {
    for await (const u of urlStates(s)) if (u.url === `${site.url}${path}`) return u;
    return undefined;
  };

  it('by default: the copy is a document, its canonical recorded and not fetched', async () => {
    const s = await openSession(configFor(uniqueCrawlName('canon-off'), false));
    const before = site.requests.length;
    await crawl(s);
    assert.deepEqual(await docPaths(s), ['/', '/d.pdf?v=2', '/p?utm_source=mail', '/q', '/r/', '/x']);
    const canonicals = new Map<string, unknown>();
    for await (const d of documents(s)) canonicals.set(String(d.url).slice(site.url.length), d.canonical);
    assert.equal(canonicals.get('/p?utm_source=mail'), `${site.url}/p`);
    assert.equal(canonicals.get('/d.pdf?v=2'), `${site.url}/d.pdf`);
    const asked = site.requests.slice(before).map((r) => r.path);
    assert.ok(!asked.includes('/p'), `the canonical was not requested: ${asked.join(' ')}`);
    assert.ok(!asked.includes('/d.pdf'), `the PDF's canonical was not requested: ${asked.join(' ')}`);
  });

  it('honored: the copy is followed only and the canonical indexed; then turned off, the copy comes back', async () => {
    const name = uniqueCrawlName('canon-on');
    const s = await openSession(configFor(name, true));
    await crawl(s);
    assert.deepEqual(await docPaths(s), ['/', '/d.pdf', '/p', '/q', '/r/', '/x']);
    const pdfCopy = await stateOf(s, '/d.pdf?v=2');
    assert.equal(pdfCopy?.state, 'followed');
    assert.match(
      String(pdfCopy?.note),
      /canonical is http:\/\/127\.0\.0\.1:\d+\/d\.pdf \(extract\.honorCanonical\)/,
    );
    const copy = await stateOf(s, '/p?utm_source=mail');
    assert.equal(copy?.state, 'followed');
    assert.match(String(copy?.note), /canonical is http:\/\/127\.0\.0\.1:\d+\/p \(extract\.honorCanonical\)/);
    assert.equal((await stateOf(s, '/p'))?.state, 'indexed');
    assert.equal((await stateOf(s, '/p'))?.depth, 1, 'the canonical stands where its copy stood');

    // Off again: the next cycle makes the documents again from whole fetches; the copy is one.
    const later = await openSession(configFor(name, false), { now: new Date(Date.now() + DAY) });
    await refresh(later);
    const docs = await docPaths(later);
    assert.ok(docs.includes('/p?utm_source=mail'), `the copy is a document again: ${docs.join(' ')}`);
    assert.ok(docs.includes('/p'), 'the canonical keeps its document');
    assert.ok(docs.includes('/d.pdf?v=2'), `the PDF's copy is a document again: ${docs.join(' ')}`);
  });

  it('honored, a canonical that is no document gives the page its document back, and its refresh keeps it', async () => {
    // Each page defers to a canonical that ends as no document: its content was in the index under
    // no URL (helper-59). `/a5` is the control: its canonical is a document.
    const other = await startSiteServer({
      routes: {
        '/robots.txt': {
          body: 'User-agent: *\nDisallow: /private/\n',
          headers: { 'content-type': 'text/plain' },
        },
        '/': {
          body: `<html><head><title>Home</title></head><body>${['/a1', '/a2', '/a3', '/cat', '/a5', '/m1']
            .map((l) => `<a href="${l}">x</a>`)
            .join(' ')}</body></html>`,
        },
        '/a1': page('A1', 'The a1 article.', '/gone'),
        '/a2': page('A2', 'The a2 article.', '/hidden'),
        '/hidden': {
          body: '<html><head><title>H</title><meta name="robots" content="noindex"></head><body><p>h</p></body></html>',
        },
        '/a3': page('A3', 'The a3 article.', '/private/a3'),
        '/private/a3': page('A3', 'The a3 article, private.'),
        // The trailing-slash contradiction the other way round: `/cat` names `/cat/`, which answers 301 to `/cat`.
        '/cat': page('Cat', 'The cat article.', '/cat/'),
        '/cat/': { status: 301, headers: { location: '/cat' } },
        '/a5': page('A5', 'The a5 article, with a visit stamp.', '/a5-main'),
        '/a5-main': page('A5', 'The a5 article.'),
        // Each names the other: the one named first keeps the content.
        '/m1': page('M', 'The m article, first copy.', '/m2'),
        '/m2': page('M', 'The m article.', '/m1'),
      },
    });
    try {
      const name = uniqueCrawlName('canon-none');
      const config = (now?: Date) =>
        openSession(
          parseConfig({
            name,
            startUrls: [`${other.url}/`],
            fetch: { allowPrivateNetworks: true },
            extract: { honorCanonical: true },
          }),
          now ? { now } : {},
        );
      const paths = async (s: Awaited<ReturnType<typeof openSession>>) => {
        const out: string[] = [];
        for await (const d of documents(s)) out.push(String(d.url).slice(other.url.length));
        return out.sort();
      };
      const s = await config();
      await crawl(s);
      assert.deepEqual(await paths(s), ['/', '/a1', '/a2', '/a3', '/a5-main', '/cat', '/m2']);
      const states = new Map<string, Record<string, unknown>>();
      for await (const u of urlStates(s)) states.set(String(u.url).slice(other.url.length), u);
      assert.equal(states.get('/a5')?.state, 'followed', 'a canonical that is a document is honored');
      assert.equal(states.get('/m1')?.state, 'followed', 'it deferred to /m2, which keeps the content');
      assert.match(
        String(states.get('/a1')?.note),
        /canonical http:\/\/127\.0\.0\.1:\d+\/gone is no document/,
      );
      assert.deepEqual(
        ['/gone', '/hidden', '/private/a3', '/cat/'].map((p) => states.get(p)?.state),
        ['error', 'followed', 'ignored', 'ignored'],
      );
      assert.ok(
        !other.requests.some((r) => r.path === '/private/a3'),
        'robots.txt holds for a canonical too',
      );

      // Two days on, the refresh fetches the pages whole (no Last-Modified, no 304): each names the
      // same canonical, still no document, and keeps its document instead of deferring again.
      const later = await config(new Date(Date.now() + 2 * DAY + 3_600_000));
      const before = other.requests.length;
      await refresh(later);
      const refetched = other.requests.slice(before).map((r) => r.path);
      assert.ok(refetched.includes('/a1'), `the refresh fetched the pages again: ${refetched.join(' ')}`);
      assert.deepEqual(await paths(later), ['/', '/a1', '/a2', '/a3', '/a5-main', '/cat', '/m2']);
    } finally {
      await other.close();
    }
  });
});
