// Large pages through the whole local pipeline: a body past the fetch stage's spool size
// (shared/stages/fetch-memory.ts SPOOL_BYTES, 1 MB) is read to a file, written to S3 as an object
// of its own and read back by the extract stage, so a 3 MB page and a gzip page inflating to
// 4 MB are indexed whole (text and links at their very end) while the fetch invocation holds
// 1 MB of each; a body object that is gone makes its page a temporary error, not a lost message.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { packLines } from '../../shared/aws/page-store.ts';
import { parseConfig } from '../../shared/config.ts';
import { PREFIXES } from '../../shared/layout.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { SPOOL_BYTES } from '../../shared/stages/fetch-memory.ts';
import type { FetchedPage } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const MB = 1024 * 1024;

/** An HTML page of about `bytes`, with `tail` (text and a link) after all its filler. */
function bigPage(title: string, bytes: number, tail: string): string {
  const para = `<p>${'filler words about nothing in particular '.repeat(20)}</p>\n`;
  return `<html><head><title>${title}</title></head><body>${para.repeat(Math.ceil(bytes / para.length))}${tail}</body></html>`;
}

describe('large pages (past the spool size) through the pipeline', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const big = bigPage('Big', 3 * MB, '<p>zanzibar marks the end</p><a href="/after-big">after</a>');
  const inflated = bigPage(
    'Packed',
    4 * MB,
    '<p>kilimanjaro marks the end</p><a href="/after-gzip">after</a>',
  );
  const packed = zlib.gzipSync(inflated);

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/', {
      body: '<html><head><title>Home</title></head><body><a href="/big">big</a> <a href="/packed">packed</a></body></html>',
    });
    site.route('/big', { headers: { 'content-type': 'text/html; charset=utf-8' }, body: big });
    site.route('/packed', {
      headers: { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' },
      body: packed,
    });
    for (const p of ['/after-big', '/after-gzip'])
      site.route(p, { body: `<html><head><title>${p}</title></head><body><p>small</p></body></html>` });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('indexes them whole: the text and the link at their end, each body an object of its own', async () => {
    assert.ok(big.length > 2 * SPOOL_BYTES && packed.length < SPOOL_BYTES);
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('large'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    await crawl(session);
    const docs = new Map<string, Record<string, unknown>>();
    for await (const d of documents(session)) docs.set(String(d.url).slice(site.url.length), d);
    assert.deepEqual([...docs.keys()].sort(), ['/', '/after-big', '/after-gzip', '/big', '/packed']);
    const text = (p: string) => JSON.stringify(docs.get(p));
    assert.match(text('/big'), /zanzibar marks the end/);
    assert.match(text('/packed'), /kilimanjaro marks the end/);
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(session)) states.set(String(u.url).slice(site.url.length), u);
    assert.equal(states.get('/big')?.state, 'indexed');
    assert.equal(states.get('/packed')?.state, 'indexed');
    // The two large bodies, as they were read (the gzip one decoded), each an object under pages/.
    const bodies: string[] = [];
    for await (const key of session.store.list(PREFIXES.pages))
      if (key.includes('/bodies/')) bodies.push(key);
    assert.equal(bodies.length, 2, bodies.join(' '));
    const sizes = await Promise.all(bodies.map(async (k) => (await session.store.getBytes(k))?.length));
    assert.deepEqual(sizes.sort(), [Buffer.byteLength(big), Buffer.byteLength(inflated)].sort());
  });

  it('a page whose body object is gone becomes a temporary error; the message is not lost', async () => {
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('lostbody'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const url = `${site.url}/gone`;
    const page: FetchedPage = {
      task: { url, depth: 1, queue: 'follow', index: true, follow: true, priority: 0 },
      url,
      status: 200,
      headers: { 'content-type': 'text/html' },
      fetchedAt: new Date().toISOString(),
      body: '',
      bodyKey: `${PREFIXES.pages}2026-01-01/bodies/never-written`,
      bodyBytes: 5 * MB,
      truncated: false,
      notModified: false,
    };
    // As the fetch stage sends it: the extract stage finds the body gone, the index stage records why.
    const deps = depsFromEnv();
    await deps.queues.send(deps.queueUrls.extract, [
      { body: { inline: packLines([page]), id: 'lost-body-test', count: 1 } },
    ]);
    await session.runner.drain();
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(session)) states.set(String(u.url), u);
    const gone = states.get(url);
    assert.equal(gone?.state, 'error', JSON.stringify([...states.values()]));
    assert.equal(gone?.errorKind, 'temporary');
    assert.match(JSON.stringify(gone), /body-lost|not in the crawl bucket/);
  });
});
