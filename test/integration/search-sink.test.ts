import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { prepareSearchSink, reindexCommand } from '../../cli/commands/search.ts';
import { type AnyHandler, LocalRunner, lambdaContext } from '../../cli/runner.ts';
import { engineInstalled, type SearchEngine, startSearchEngine } from '../../cli/search-engine.ts';
import {
  type CrawlSession,
  crawl,
  eachState,
  openSession,
  refresh,
  type SessionOptions,
} from '../../cli/session.ts';
import { handler as extractHandler } from '../../functions/extract/handler.ts';
import { handler as fetchHandler } from '../../functions/fetch/handler.ts';
import { handler as indexHandler } from '../../functions/index/handler.ts';
import { handler as refreshHandler } from '../../functions/refresh/handler.ts';
import { handler as seedHandler } from '../../functions/seed/handler.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { sinkChanges } from '../../shared/search/index-sink.ts';
import {
  docId,
  ensureIndex,
  indexName,
  search,
  searchClient,
  writeBulk,
} from '../../shared/search/opensearch-sink.ts';
import type { CrawlDocument } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, body: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${body}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;
const UNIQUE: Record<string, string> = { a: 'zanzibar', b: 'quokka', c: 'xylophone', d: 'marmalade' };

describe('search sink: the crawl into a real OpenSearch', { skip: !engineInstalled() && 'no engine' }, () => {
  let emu: TestEmulator;
  let engine: SearchEngine;
  let site: SiteServer;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trawl-search-'));
    mkdirSync(join(dir, 'site'));
    chmodSync(dir, 0o755); // the engine runs as an unprivileged user when we are root
    // One at a time: if one fails to start, after() still stops the ones that did.
    emu = await startTestEmulator();
    site = await startSiteServer({ root: join(dir, 'site') });
    engine = await startSearchEngine(join(dir, 'engine'));
    process.env.TRAWL_SEARCH_ENDPOINT = engine.endpoint;
  });
  after(async () => {
    delete process.env.TRAWL_SEARCH_ENDPOINT;
    await site?.close();
    await Promise.all([emu?.stop(), engine?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const paths = async (q: string, index: string) => {
    const client = searchClient(engine.endpoint);
    await client.indices.refresh({ index });
    return (await search(client, index, q, 10)).map((h) => new URL(h.url).pathname);
  };

  it('finds every document by its own word; a change updates the hit; a 404 leaves; reindex gives the same hits', async () => {
    const root = join(dir, 'site');
    const names = Object.keys(UNIQUE);
    writeFileSync(
      join(root, 'index.html'),
      page(
        'Home',
        'the home page',
        names.map((n) => `/${n}.html`),
      ),
    );
    for (const n of names) writeFileSync(join(root, `${n}.html`), page(n.toUpperCase(), `page ${UNIQUE[n]}`));
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('search'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink: 'opensearch' },
    };
    const index = `trawl-${input.name}`;
    await crawl(await openSession(parseConfig(input)));
    for (const n of names) assert.deepEqual(await paths(UNIQUE[n] as string, index), [`/${n}.html`]);
    // The document fields of trawl docs, not a subset (charset, size, hash and source were left out).
    const got = (await searchClient(engine.endpoint).get({ index, id: docId(`${site.url}/a.html`) })).body
      ._source as Record<string, unknown>;
    assert.equal(got.charset, 'utf-8');
    assert.ok(Number(got.size) > 0);
    assert.match(String(got.hash), /^sha256:[0-9a-f]{64}$/);
    assert.ok('source' in got && 'canonical' in got, 'every field, null or not');

    // b changes, c turns 404; the maintenance cycle three days later.
    writeFileSync(join(root, 'b.html'), page('B', 'page now about pelicans'));
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'b.html'), later, later);
    rmSync(join(root, 'c.html'));
    await refresh(await openSession(parseConfig(input), { now: new Date(Date.now() + 3 * DAY) }));
    assert.deepEqual(await paths('pelicans', index), ['/b.html']);
    assert.deepEqual(await paths('quokka', index), [], 'the old text of b is gone');
    assert.deepEqual(await paths('xylophone', index), [], 'the 404 page left the index');

    const hitsBefore = await paths('page', index);
    const file = join(dir, 'crawl.json');
    writeFileSync(file, JSON.stringify(input));
    await reindexCommand({ config: file });
    assert.deepEqual((await paths('page', index)).sort(), [...hitsBefore].sort());
    assert.deepEqual(await paths('xylophone', index), []);
    assert.deepEqual(await paths('pelicans', index), ['/b.html']);
  });

  it('finds other languages: ß as ss, accents folded, CJK words as bigrams (not only English stems)', async () => {
    // One english analyzer used to serve every language: "strasse" missed "Straße", "cafe" missed
    // "Café", and a Japanese word was its single characters wherever they stood in a page.
    const root = join(dir, 'site', 'intl');
    mkdirSync(root, { recursive: true });
    const pages: Record<string, string> = {
      'de.html': page('Anfahrt', 'Die Hauptstraße liegt am Fluss'),
      'fr.html': page('Menu', 'Le Café des Artistes ouvre à midi'),
      'ja.html': page('案内', '本社は東京にあります'),
      'kyoto.html': page('支社', '京都の支社は駅の東にあります'),
      'en.html': page('Guide', 'Redirects are followed'),
      // Text that reads as markup (escaped in the page): the snippet must be safe to show as HTML.
      'markup.html': page('Markup', 'Type &lt;img src=x onerror=alert(1)&gt; to see a kiwifruit; 3 &lt; 5'),
      // A word found only folded: its passage is still the snippet, highlighted.
      'city.html': page('Stadt', 'Willkommen in München, der Stadt an der Isar'),
      // Written decomposed (NFD: a + U+0308), as some editors and macOS file names are.
      'nfd.html': page('Zu\u0308rich', 'Die Ba\u0308ckerei am See'),
      // A word only its meta description has; and its declared language.
      'summary.html':
        '<html lang="en-gb"><head><title>Summary</title><meta name="description" content="All about the wombat burrow"></head><body><p>Nothing else here</p></body></html>',
    };
    writeFileSync(
      join(root, 'index.html'),
      page(
        'Intl',
        'start',
        Object.keys(pages).map((p) => `/intl/${p}`),
      ),
    );
    for (const [name, html] of Object.entries(pages)) writeFileSync(join(root, name), html);
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('intl'),
      startUrls: [`${site.url}/intl/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink: 'opensearch' },
    };
    const index = indexName(parseConfig(input));
    await crawl(await openSession(parseConfig(input)));
    assert.deepEqual(await paths('hauptstrasse', index), ['/intl/de.html']);
    assert.deepEqual(await paths('cafe', index), ['/intl/fr.html']);
    // Indexed composed (NFC): found by the folded word and by the composed one a user types.
    assert.deepEqual(await paths('backerei', index), ['/intl/nfd.html']);
    assert.deepEqual(await paths('B\u00e4ckerei', index), ['/intl/nfd.html']);
    assert.deepEqual(await paths('redirect', index), ['/intl/en.html'], 'English stems still match');
    // A phrase in quotes: its words in that order (folded too); a minus leaves pages out.
    assert.deepEqual(await paths('"liegt am fluss"', index), ['/intl/de.html']);
    assert.deepEqual(await paths('"fluss am liegt"', index), [], 'the same words in another order');
    assert.deepEqual(await paths('"cafe des artistes" midi', index), ['/intl/fr.html']);
    assert.deepEqual(await paths('hauptstrasse cafe -fluss', index), ['/intl/fr.html']);
    assert.deepEqual(await paths('hauptstrasse cafe -"des artistes"', index), ['/intl/de.html']);
    const client = searchClient(engine.endpoint);
    // The description is searched, and is the snippet of a hit on it alone.
    const [wombat, ...others] = await search(client, index, 'wombat', 10);
    assert.equal(others.length, 0);
    assert.equal(new URL(wombat?.url ?? 'http://x/').pathname, '/intl/summary.html');
    assert.match(wombat?.snippet ?? '', /<em>wombat<\/em> burrow/);
    const summary = (await client.get({ index, id: docId(wombat?.url ?? '') })).body._source as Record<
      string,
      unknown
    >;
    assert.deepEqual([summary.description, summary.language], ['All about the wombat burrow', 'en-GB']);
    const [kiwi] = await search(client, index, 'kiwifruit', 10);
    assert.equal(
      kiwi?.snippet,
      'Type &lt;img src=x onerror=alert(1)&gt; to see a <em>kiwifruit</em>; 3 &lt; 5',
      'the page text escaped around the marks',
    );
    // A pasted paragraph: 300 distinct words were 1,800 clauses, past OpenSearch's 1,024.
    const paragraph = ['wombat', ...Array.from({ length: 300 }, (_, i) => `filler${i}`)].join(' ');
    assert.equal((await search(client, index, paragraph, 10))[0]?.url, wombat?.url);
    // Typed decomposed (e and a combining accent), as pasted text can be.
    assert.ok((await search(client, index, 'Mu\u0308nchen', 10)).length > 0, 'a decomposed ü finds München');
    const [city] = await search(client, index, 'munchen', 10);
    assert.equal(new URL(city?.url ?? 'http://x/').pathname, '/intl/city.html');
    assert.match(city?.snippet ?? '', /<em>München<\/em>/);
    const hits = await search(client, index, '東京', 10);
    assert.equal(new URL(hits[0]?.url ?? 'http://x/').pathname, '/intl/ja.html');
    assert.match(hits[0]?.snippet ?? '', /<em>東京<\/em>/);
    const kyoto = hits.find((h) => h.url.endsWith('/kyoto.html'));
    assert.ok(!kyoto || kyoto.score < (hits[0]?.score ?? 0), '東 and 京 apart rank below 東京');
  });

  it('a redelivered bulk changes nothing; a late upsert never brings back a deleted document', async () => {
    const client = searchClient(engine.endpoint);
    const index = 'trawl-versions';
    const doc = (content: string): CrawlDocument =>
      ({
        url: 'http://x.test/p',
        title: 'P',
        content,
        meta: {},
        indexedAt: '2026-01-01T00:00:00.000Z',
      }) as CrawlDocument;
    await ensureIndex(client, index);
    await writeBulk(client, index, [{ doc: doc('first ocelot'), version: 1000 }], []);
    const get = async () => (await client.get({ index, id: docId('http://x.test/p') })).body;
    const once = await get();
    await writeBulk(client, index, [{ doc: doc('first ocelot'), version: 1000 }], []);
    const twice = await get();
    assert.equal(twice._version, once._version);
    assert.deepEqual(twice._source, once._source);
    await writeBulk(
      client,
      index,
      [],
      [{ url: 'http://x.test/p', version: 2000, reason: 'permanent-error: http-404' }],
    );
    const late = await writeBulk(client, index, [{ doc: doc('first ocelot'), version: 1000 }], []);
    assert.equal(late.stale, 1);
    assert.equal((await get())._source?.deleted, true);
    assert.deepEqual(await paths('ocelot', index), []);
  });
  it('an index deleted under a running container is made again with its mapping, not the engine default', async () => {
    // A deleted index was recreated by the next bulk with the default mapping (no analyzers,
    // no .intl): searches missed in silence until a reindex.
    const config = parseConfig({
      name: uniqueCrawlName('gone-index'),
      startUrls: ['http://x.test/'],
      index: { sink: 'opensearch', opensearch: { endpoint: engine.endpoint } },
    });
    const { store } = await openSession(config);
    const client = searchClient(engine.endpoint);
    const index = indexName(config);
    const gone = (url: string) => ({
      type: 'delete' as const,
      url,
      at: new Date().toISOString(),
      reason: 'test',
      version: 1,
    });
    await sinkChanges(store, config, [gone('http://x.test/a')]);
    await client.indices.delete({ index });
    // The same container, within its check interval: it believes the index is there.
    const r = await sinkChanges(store, config, [gone('http://x.test/b')]);
    assert.equal(r?.written, 1);
    const mapping = (await client.indices.getMapping({ index })).body as Record<
      string,
      { mappings: { properties: Record<string, { analyzer?: string; fields?: Record<string, unknown> }> } }
    >;
    const title = Object.values(mapping)[0]?.mappings.properties.title;
    assert.equal(title?.analyzer, 'english');
    assert.ok(title?.fields?.intl, 'with its .intl subfield');
  });

  /** A session whose index function keeps a copy of every SQS event it is given. */
  const recording = async (input: CrawlConfigInput, recorded: SQSEvent[], opts: SessionOptions = {}) => {
    const base = await openSession(parseConfig(input), opts);
    const index: AnyHandler = async (event: SQSEvent, ctx) => {
      recorded.push(structuredClone(event));
      return indexHandler(event, ctx);
    };
    const runner = new LocalRunner({
      handlers: {
        seed: seedHandler,
        fetch: fetchHandler,
        extract: extractHandler,
        index,
        refresh: refreshHandler,
      },
      queueUrls: base.resources.queueUrls,
      monitor: base.monitor,
      pollers: base.clients,
    });
    return { ...base, runner } as CrawlSession;
  };
  /** Every document the engine holds, tombstones included, with its version. */
  const snapshot = async (index: string) => {
    const client = searchClient(engine.endpoint);
    await client.indices.refresh({ index });
    const res = await client.search({ index, body: { size: 100, version: true, query: { match_all: {} } } });
    const hits = res.body.hits.hits as unknown as { _id: string; _version: number; _source: unknown }[];
    return Object.fromEntries(hits.map((h) => [h._id, { version: h._version, source: h._source }]));
  };
  const redeliver = async (events: SQSEvent[]) => {
    for (const event of events) {
      const res = (await indexHandler(event, lambdaContext('index'))) as SQSBatchResponse;
      assert.deepEqual(res.batchItemFailures, []);
    }
  };

  it('a redelivered index batch, through the real handler, changes nothing; after a deletion and a reindex it stays out', async () => {
    const root = join(dir, 'site', 'r');
    mkdirSync(root);
    writeFileSync(join(root, 'index.html'), page('R', 'start', ['/r/keep.html', '/r/gone.html']));
    writeFileSync(join(root, 'keep.html'), page('Keep', 'page narwhal'));
    writeFileSync(join(root, 'gone.html'), page('Gone', 'page okapi'));
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('redeliver'),
      startUrls: [`${site.url}/r/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink: 'opensearch' },
    };
    const index = indexName(parseConfig(input));
    const recorded: SQSEvent[] = [];
    await crawl(await recording(input, recorded));
    assert.ok(recorded.length > 0, 'the index function was invoked');
    const first = await snapshot(index);
    assert.equal(Object.keys(first).length, 3);
    await redeliver(recorded);
    assert.deepEqual(await snapshot(index), first, 'same documents, same versions');

    rmSync(join(root, 'gone.html'));
    await refresh(await recording(input, [], { now: new Date(Date.now() + 3 * DAY) }));
    assert.deepEqual(await paths('okapi', index), []);
    const file = join(dir, 'redeliver.json');
    writeFileSync(file, JSON.stringify(input));
    await reindexCommand({ config: file });
    assert.deepEqual(await paths('narwhal', index), ['/r/keep.html']);
    assert.deepEqual(await paths('okapi', index), [], 'reindex brings no deleted page back');
    // The crawl's batches again, late: the deletion's tombstone survived the reindex and wins.
    await redeliver(recorded);
    assert.deepEqual(await paths('okapi', index), [], 'a late upsert after the reindex stays out');
    const client = searchClient(engine.endpoint);
    const gone = await client.get({ index, id: docId(`${site.url}/r/gone.html`) });
    assert.equal(gone.body._source?.deleted, true);
  });

  it('metadata values of any shape and a page past 1 M characters: every document indexed and found', async () => {
    // A meta date of "2024-01-01" on one page made meta.date a date field (dynamic date detection),
    // then "last tuesday" on another was refused and failed the whole batch: its pages were lost.
    // A hit past 1 M characters failed every search it matched (the highlighter's limit).
    const root = join(dir, 'site', 'm');
    mkdirSync(root, { recursive: true });
    const withDate = (title: string, word: string, date: string) =>
      `<!doctype html><html><head><title>${title}</title><meta name="date" content="${date}"></head><body><p>${word}</p></body></html>`;
    writeFileSync(
      join(root, 'index.html'),
      page('M', 'meta start', ['/m/d1.html', '/m/d2.html', '/m/big.html']),
    );
    writeFileSync(join(root, 'd1.html'), withDate('D1', 'axolotl', '2024-01-01'));
    writeFileSync(join(root, 'd2.html'), withDate('D2', 'capybara', 'last tuesday'));
    writeFileSync(join(root, 'big.html'), page('Big', `${'lorem ipsum dolor '.repeat(70_000)} kangaroo`));
    const input = (name: string): CrawlConfigInput => ({
      name,
      startUrls: [`${site.url}/m/`],
      fetch: { allowPrivateNetworks: true },
      extract: { metadataMapping: { date: 'date' } },
      index: { sink: 'opensearch' },
    });
    const fresh = input(uniqueCrawlName('meta'));
    await crawl(await openSession(parseConfig(fresh)));
    const index = indexName(parseConfig(fresh));
    assert.deepEqual(await paths('axolotl', index), ['/m/d1.html']);
    assert.deepEqual(await paths('capybara', index), ['/m/d2.html']);
    assert.deepEqual(await paths('kangaroo', index), ['/m/big.html']);

    // An index made before (meta.date a date, the default highlight limit): the engine refuses d2
    // alone; the batch's other pages are written, d2 stays a document of the crawl, and a search
    // hitting the big page still answers (snippets without highlights).
    const old = input(uniqueCrawlName('metaold'));
    const oldIndex = indexName(parseConfig(old));
    const client = searchClient(engine.endpoint);
    await client.indices.create({
      index: oldIndex,
      body: { mappings: { properties: { meta: { properties: { date: { type: 'date' } } } } } },
    });
    const session = await openSession(parseConfig(old));
    await crawl(session);
    assert.deepEqual(await paths('axolotl', oldIndex), ['/m/d1.html']);
    assert.deepEqual(await paths('capybara', oldIndex), [], 'refused by the old mapping');
    assert.deepEqual(await paths('kangaroo', oldIndex), ['/m/big.html']);
    const states = new Map<string, string>();
    for await (const u of eachState(session)) states.set(new URL(u.url).pathname, u.state);
    assert.equal(states.get('/m/d2.html'), 'indexed');
  });

  it('a refresh whose search step failed, run again, still deletes the excluded page from the index', async () => {
    // The cycle used to forget the URL before the sink: its retry had nothing left to delete, and
    // the page stayed searchable for good.
    const root = join(dir, 'site', 'x');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'index.html'), page('X', 'exclusion start', ['/x/keep.html', '/x/drop.html']));
    writeFileSync(join(root, 'keep.html'), page('Keep', 'wombat'));
    writeFileSync(join(root, 'drop.html'), page('Drop', 'platypus'));
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('excl'),
      startUrls: [`${site.url}/x/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink: 'opensearch' },
    };
    const index = indexName(parseConfig(input));
    await crawl(await openSession(parseConfig(input)));
    assert.deepEqual(await paths('platypus', index), ['/x/drop.html']);
    const excluded = parseConfig({ ...input, scope: { exclude: ['/drop\\.html$'] } });
    const now = new Date(Date.now() + 3 * DAY);
    process.env.TRAWL_SEARCH_ENDPOINT = 'http://127.0.0.1:9';
    try {
      await assert.rejects(refresh(await openSession(excluded, { now })), /ECONNREFUSED|Connection/);
    } finally {
      process.env.TRAWL_SEARCH_ENDPOINT = engine.endpoint;
    }
    await refresh(await openSession(excluded, { now }));
    assert.deepEqual(await paths('platypus', index), [], 'the excluded page left the index');
    assert.deepEqual(await paths('wombat', index), ['/x/keep.html']);
  });

  it('reindex refuses an index another crawl writes to as well, and drops none of its documents', async () => {
    // The swap dropped the old index whole: the other crawl's documents went with it.
    for (const [sub, word] of [
      ['s1', 'ocelot'],
      ['s2', 'gecko'],
    ] as const) {
      mkdirSync(join(dir, 'site', sub), { recursive: true });
      writeFileSync(join(dir, 'site', sub, 'index.html'), page(sub, `shared index ${word}`));
    }
    const shared = uniqueCrawlName('shared').toLowerCase();
    const input = (sub: string): CrawlConfigInput => ({
      name: uniqueCrawlName(sub),
      startUrls: [`${site.url}/${sub}/`],
      fetch: { allowPrivateNetworks: true },
      index: { sink: 'opensearch', opensearch: { indexName: shared } },
    });
    const [one, two] = [input('s1'), input('s2')];
    await crawl(await openSession(parseConfig(one)));
    await crawl(await openSession(parseConfig(two)));
    const file = join(dir, 'shared-two.json');
    writeFileSync(file, JSON.stringify(two));
    await assert.rejects(reindexCommand({ config: file }), /also holds 1 document\(s\) of another crawl/);
    // `trawl crawl` and `refresh` refuse it before they write (they used to share it silently).
    await assert.rejects(
      prepareSearchSink(parseConfig(two), { file }),
      (err: Error) =>
        err instanceof ConfigError &&
        err.message ===
          `${file}: index.opensearch.indexName: ${shared} holds 1 document(s) of another crawl: give each crawl an index of its own`,
    );
    assert.deepEqual(await paths('ocelot', shared), ['/s1/']);
    assert.deepEqual(await paths('gecko', shared), ['/s2/']);
  });
});
