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
});
