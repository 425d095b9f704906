import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { reindexCommand } from '../../cli/commands/search.ts';
import { engineInstalled, type SearchEngine, startSearchEngine } from '../../cli/search-engine.ts';
import { crawl, openSession, refresh } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { docId, search, searchClient, writeBulk } from '../../shared/search/opensearch-sink.ts';
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
});
