// A refresh answered 304 whose headers now say noindex (a server config that adds
// `X-Robots-Tag: noindex` to a folder: nginx's add_header sends it on 304s too). RFC 9111 §4.3.4:
// a 304's header fields update the stored response, so the page is no document any more, as after
// a 200 with that header. Until 2026-11-28 the 304 kept the document.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const html = (title: string, links: string[] = []) =>
  `<html><head><title>${title}</title></head><body><p>${title} text</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join(' ')}</body></html>`;

describe('a refresh answered 304 with X-Robots-Tag: noindex', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const robotsTag: { value?: string } = {};

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/', { headers: { 'content-type': 'text/html' }, body: html('home', ['/h', '/k']) });
    // Validated pages: a request with the ETag gets a 304, with whatever X-Robots-Tag the site sends now.
    for (const path of ['/h', '/k'])
      site.route(path, {
        handler: (req, res) => {
          const tag = path === '/h' && robotsTag.value ? { 'x-robots-tag': robotsTag.value } : {};
          if (req.headers['if-none-match'] === '"v1"')
            return void res.writeHead(304, { etag: '"v1"', ...tag }).end();
          res.writeHead(200, { 'content-type': 'text/html', etag: '"v1"', ...tag }).end(html(path));
        },
      });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('deletes the document at the refresh; a page whose 304 says nothing keeps its own', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('304-robots'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    });
    await crawl(await openSession(config));
    robotsTag.value = 'noindex';
    const since = site.requests.length;
    const now = new Date(Date.now() + 3 * DAY);
    const later = await openSession(config, { now });
    await refresh(later);

    const answered = site.requests.slice(since).filter((r) => r.path === '/h' || r.path === '/k');
    assert.deepEqual(answered.map((r) => [r.path, r.status]).sort(), [
      ['/h', 304],
      ['/k', 304],
    ]);
    const docs = await collect(documents(later));
    assert.deepEqual(docs.map((d) => new URL(String(d.url)).pathname).sort(), ['/', '/k']);
    const h = (await collect(urlStates(later))).find((s) => String(s.url).endsWith('/h'));
    assert.equal(h?.state, 'followed');
    assert.match(String(h?.note), /^noindex \(X-Robots-Tag: noindex\) on a 304$/);
    const deletes = (await readChanges(later)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deletes.map((c) => new URL(c.url).pathname),
      ['/h'],
    );
    assert.match(deletes[0]?.reason ?? '', /noindex \(X-Robots-Tag: noindex\) on a 304$/);
  });
});
