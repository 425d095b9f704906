// Duplicate content end to end (issue 17 item 2): the same page under several URLs is one document,
// kept by its canonical URL, else the shortest; the others are `duplicate` with the URL they
// duplicate; when the kept page goes away, a duplicate takes its place on the next refresh.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { recordedState } from '../../cli/commands/listing.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, text: string, extra = '') => ({
  body: `<html><head><title>${title}</title>${extra}</head><body><p>${text}</p></body></html>`,
});

const collectDocs = async (s: Awaited<ReturnType<typeof openSession>>) => {
  const out: Record<string, unknown>[] = [];
  for await (const d of documents(s)) out.push(d as Record<string, unknown>);
  return out;
};

describe('duplicate content', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    const links = ['/a', '/articles/a-long-copy', '/b', '/b?ref=mail', '/p?session=1', '/p-canonical-page']
      .map((l) => `<a href="${l}">x</a>`)
      .join(' ');
    site.route('/', { body: `<html><head><title>Home</title></head><body>${links}</body></html>` });
    const a = page('Alpha', 'The alpha article.');
    site.route('/a', a);
    // Same words, other markup and spacing: the same content.
    site.route('/articles/a-long-copy', {
      body: '<html><head><title>Alpha</title></head><body><div>The   alpha\n article.</div></body></html>',
    });
    site.route('/b', page('Beta', 'The beta article.'));
    site.route('/b?ref=mail', page('Beta', 'The beta article.'));
    const canonical = '<link rel="canonical" href="/p-canonical-page">';
    site.route('/p', page('Pi', 'The pi article.', canonical));
    site.route('/p-canonical-page', page('Pi', 'The pi article.', canonical));
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  /** A crawl of the site from its home page. */
  const inputFor = (prefix: string) => ({
    name: uniqueCrawlName(prefix),
    startUrls: [`${site.url}/`],
    fetch: { allowPrivateNetworks: true },
  });

  it('yields one document per distinct content; a duplicate replaces a kept page that went away', async () => {
    // What its rules add reaches the document of a duplicate that takes over (its fetch again
    // was a bare task: no source, no addMeta).
    const rules = [
      {
        match: { path: '/articles/' },
        actions: ['index', { source: 'articles' }, { addMeta: { name: 'section', value: 'articles' } }],
      },
    ];
    const input = { ...inputFor('dups'), rules };
    const session = await openSession(parseConfig(input));
    await crawl(session);
    const paths = async (s: typeof session) => {
      const out: string[] = [];
      for await (const d of documents(s)) out.push(String(d.url).slice(site.url.length));
      return out.sort();
    };
    assert.deepEqual(await paths(session), ['/', '/a', '/b', '/p-canonical-page']);
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(session)) states.set(String(u.url).slice(site.url.length), u);
    const dup = (p: string) => [states.get(p)?.state, String(states.get(p)?.duplicateOf ?? '')];
    assert.deepEqual(dup('/articles/a-long-copy'), ['duplicate', `${site.url}/a`]);
    assert.deepEqual(dup('/b?ref=mail'), ['duplicate', `${site.url}/b`]);
    assert.deepEqual(dup('/p?session=1'), ['duplicate', `${site.url}/p-canonical-page`]);
    // `trawl explain --state` shows the same record.
    const file = join(mkdtempSync(join(tmpdir(), 'trawl-dups-')), 'crawl.json');
    writeFileSync(file, JSON.stringify(input));
    const recorded = await recordedState(file, `${site.url}/b?ref=mail`);
    assert.equal(recorded?.duplicateOf, `${site.url}/b`);

    // The kept page goes away: the refresh deletes it and the duplicate is indexed in its place.
    site.route('/a', { status: 404, body: 'gone' });
    const later = await openSession(parseConfig(input), { now: new Date(Date.now() + 3 * DAY) });
    await refresh(later);
    const docs = await paths(later);
    assert.ok(docs.includes('/articles/a-long-copy'), `the duplicate took over: ${docs.join(' ')}`);
    assert.ok(!docs.includes('/a'));
    assert.equal(docs.length, 4, 'still one document per distinct content');
    const taken = (await collectDocs(later)).find((d) => String(d.url).endsWith('/articles/a-long-copy'));
    assert.equal(taken?.source, 'articles');
    assert.deepEqual(taken?.meta, { section: 'articles' });
    const upserts = (await readChanges(later)).filter(
      (c) => c.type === 'upsert' && c.url === `${site.url}/articles/a-long-copy`,
    );
    assert.equal(upserts.length, 1, `one record of the takeover: ${JSON.stringify(upserts)}`);
  });

  it('folding turned off: the next cycle indexes the duplicates (fetched again at once), none keeps a duplicateOf', async () => {
    site.route('/a', page('Alpha', 'The alpha article.')); // back, after the test above
    const input = inputFor('unfold');
    await crawl(await openSession(parseConfig(input)));
    const off = parseConfig({ ...input, index: { foldDuplicates: false } });
    // An hour on: nothing is due for 48 hours, but the documents are made again at once.
    const later = await openSession(off, { now: new Date(Date.now() + 3_600_000) });
    await refresh(later);
    const docs: string[] = [];
    for await (const d of documents(later)) docs.push(String(d.url).slice(site.url.length));
    assert.deepEqual(docs.sort(), [
      '/',
      '/a',
      '/articles/a-long-copy',
      '/b',
      '/b?ref=mail',
      '/p-canonical-page',
      '/p?session=1',
    ]);
    for await (const u of urlStates(later)) {
      assert.equal(u.state, 'indexed', String(u.url));
      assert.equal(u.duplicateOf ?? null, null, String(u.url));
    }
  });

  it('a kept page the refresh forgets (now excluded) hands its content to a duplicate, fetched and indexed in that cycle', async () => {
    site.route('/a', page('Alpha', 'The alpha article.')); // back, after the first test
    const input = inputFor('dups-gone');
    await crawl(await openSession(parseConfig(input)));
    // An hour on, /a is out of scope: deleted without a fetch, and nothing else is due for days.
    const narrowed = parseConfig({ ...input, scope: { exclude: ['/a$'] } });
    const later = await openSession(narrowed, { now: new Date(Date.now() + 3_600_000) });
    const mark = site.requests.length;
    await refresh(later);
    assert.deepEqual(
      site.requests.slice(mark).map((r) => r.path),
      ['/articles/a-long-copy'],
      'the duplicate in line is fetched again',
    );
    const docs: string[] = [];
    for await (const d of documents(later)) docs.push(String(d.url).slice(site.url.length));
    // Before, the registry kept naming /a: its duplicate stayed folded into a URL gone from the index.
    assert.deepEqual(docs.sort(), ['/', '/articles/a-long-copy', '/b', '/p-canonical-page']);
  });

  it("a keeper's temporary error keeps its document and its content: no duplicate takes it over meanwhile", async () => {
    // Until 2026-11-28 the 503 handed the content to the duplicate, fetched again and indexed: the
    // same content was in the index twice while the keeper's outage lasted.
    const input = { ...inputFor('dups-outage'), refresh: { maxAge: '48h', maxTemporaryErrors: 2 } };
    await crawl(await openSession(parseConfig(input)));
    site.route('/b', { status: 503, headers: { 'Retry-After': '1' }, body: 'busy' });
    try {
      const later = await openSession(parseConfig(input), { now: new Date(Date.now() + 3 * DAY) });
      await refresh(later);
      const docs: string[] = [];
      for await (const d of documents(later)) docs.push(String(d.url).slice(site.url.length));
      assert.ok(docs.includes('/b'), `the keeper keeps its document through the outage: ${docs.join(' ')}`);
      assert.ok(!docs.includes('/b?ref=mail'), `its duplicate is no second document: ${docs.join(' ')}`);
      const states = new Map<string, Record<string, unknown>>();
      for await (const u of urlStates(later)) states.set(String(u.url).slice(site.url.length), u);
      assert.deepEqual([states.get('/b')?.state, states.get('/b')?.errorKind], ['error', 'temporary']);
      assert.deepEqual(
        [states.get('/b?ref=mail')?.state, states.get('/b?ref=mail')?.duplicateOf],
        ['duplicate', `${site.url}/b`],
      );
    } finally {
      site.route('/b', page('Beta', 'The beta article.'));
    }
  });

  it('a keeper demoted by a URL that names itself canonical: one delete record, one document', async () => {
    // Until 2026-11-28 the demoted keeper got two delete records (the demotion's, and its own
    // when it was fetched again to record it), with different versions: the feed kept both.
    site.route('/m', page('Mu', 'The mu article.'));
    site.route('/m-long-copy', page('Mu', 'The mu article.'));
    const home = site.url;
    site.route('/', {
      body: `<html><head><title>Home</title></head><body><a href="/m">m</a> <a href="/m-long-copy">m</a></body></html>`,
    });
    try {
      const input = { ...inputFor('dups-demoted'), refresh: { maxAge: '1h' } };
      const first = await openSession(parseConfig(input));
      await crawl(first);
      const kept = (await collectDocs(first)).map((d) => String(d.url).slice(home.length));
      assert.deepEqual(kept.sort(), ['/', '/m']);
      site.route(
        '/m-long-copy',
        page('Mu', 'The mu article.', `<link rel="canonical" href="${home}/m-long-copy">`),
      );
      const later = await openSession(parseConfig(input), { now: new Date(Date.now() + 2 * 3_600_000) });
      await refresh(later);
      const docs = (await collectDocs(later)).map((d) => String(d.url).slice(home.length));
      assert.deepEqual(docs.sort(), ['/', '/m-long-copy']);
      const deletes = (await readChanges(later)).filter((c) => c.type === 'delete');
      assert.deepEqual(
        deletes.map((c) => [c.url.slice(home.length), c.reason]),
        [['/m', `duplicate: of ${home}/m-long-copy`]],
      );
    } finally {
      const links = ['/a', '/articles/a-long-copy', '/b', '/b?ref=mail', '/p?session=1', '/p-canonical-page']
        .map((l) => `<a href="${l}">x</a>`)
        .join(' ');
      site.route('/', { body: `<html><head><title>Home</title></head><body>${links}</body></html>` });
    }
  });

  it('a duplicate that is no longer indexed (a noIndex rule, an error) keeps no duplicateOf', async () => {
    const input = inputFor('dups-followed');
    await crawl(await openSession(parseConfig(input)));
    const ruled = parseConfig({ ...input, rules: [{ match: { path: '/b' }, actions: ['noIndex'] }] });
    site.route('/p?session=1', { status: 404, body: 'gone' });
    const later = await openSession(ruled, { now: new Date(Date.now() + 3 * DAY) });
    await refresh(later);
    site.route(
      '/p?session=1',
      page('Pi', 'The pi article.', '<link rel="canonical" href="/p-canonical-page">'),
    );
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(later)) states.set(String(u.url).slice(site.url.length), u);
    const of = (p: string) => [states.get(p)?.state, states.get(p)?.duplicateOf ?? null];
    // It named the URL that kept the document while it was folded; it is not folded now.
    assert.deepEqual(of('/b?ref=mail'), ['followed', null]);
    assert.deepEqual(of('/p?session=1'), ['error', null]);
    assert.deepEqual(of('/articles/a-long-copy'), ['duplicate', `${site.url}/a`], 'a duplicate still is one');
  });
  it("pages with no text (a JavaScript app's shells) are documents of their own, not duplicates of each other", async () => {
    // One title, an empty body, the text in scripts: every route was folded into the first (helper-52).
    const app = await startSiteServer({});
    try {
      const shell = (n: number) => ({
        body: `<html><head><title>Acme Portal</title><meta name="description" content="Route ${n}"></head><body><div id="root"></div><script>render(${n})</script></body></html>`,
      });
      app.route('/', {
        body: `<html><head><title>Home</title></head><body><p>Home text.</p>${[1, 2, 3].map((n) => `<a href="/r${n}">r</a>`).join('')}</body></html>`,
      });
      for (const n of [1, 2, 3]) app.route(`/r${n}`, shell(n));
      const session = await openSession(
        parseConfig({
          name: uniqueCrawlName('shells'),
          startUrls: [`${app.url}/`],
          fetch: { allowPrivateNetworks: true },
        }),
      );
      await crawl(session);
      const states: Record<string, unknown[]> = {};
      for await (const u of urlStates(session))
        states[String(u.url).slice(app.url.length)] = [u.state, u.duplicateOf ?? null];
      assert.deepEqual(states, {
        '/': ['indexed', null],
        '/r1': ['indexed', null],
        '/r2': ['indexed', null],
        '/r3': ['indexed', null],
      });
      const descriptions = (await collectDocs(session))
        .map((d) => d.description)
        .filter(Boolean)
        .sort();
      assert.deepEqual(descriptions, ['Route 1', 'Route 2', 'Route 3']);
    } finally {
      await app.close();
    }
  });
  it('content folds within a site (www and apex), never across sites: another site cannot take a page over', async () => {
    // a.io's page with an intranet page's text, naming itself canonical, took the intranet page's
    // document: a search hit led to a.io (helper-51).
    const text = page('Payroll procedure', 'Quarterly payroll steps for HR.');
    const self = (url: string) =>
      page('Payroll procedure', 'Quarterly payroll steps for HR.', `<link rel="canonical" href="${url}">`);
    site.route('/hr/payroll-quarterly-procedure.html', text);
    site.route('/p', self(`http://a.io:${site.port}/p`));
    site.route('/mirror', {
      body: '<html><head><title>M</title></head><body><p>Mirrored text.</p></body></html>',
    });
    const start = (host: string, path: string) => `http://${host}:${site.port}${path}`;
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('crosssite'),
        startUrls: [
          start('intranet.corp', '/hr/payroll-quarterly-procedure.html'),
          start('a.io', '/p'),
          start('www.mirror.test', '/mirror'),
          start('mirror.test', '/mirror'),
        ],
        discovery: false,
        fetch: {
          allowPrivateNetworks: true,
          resolve: {
            'intranet.corp': '127.0.0.1',
            'a.io': '127.0.0.1',
            'www.mirror.test': '127.0.0.1',
            'mirror.test': '127.0.0.1',
          },
        },
      }),
    );
    await crawl(session);
    const states: Record<string, string> = {};
    for await (const u of urlStates(session))
      states[new URL(String(u.url)).host.split(':')[0]!] = String(u.state);
    assert.deepEqual(states, {
      'intranet.corp': 'indexed',
      'a.io': 'indexed',
      'mirror.test': 'indexed',
      'www.mirror.test': 'duplicate',
    });
  });
});
