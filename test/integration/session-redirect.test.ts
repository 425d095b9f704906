/**
 * A redirect to the URL itself as the crawl writes it: a Java app answers a client without its
 * session cookie with `302 Location: /app/catalog;jsessionid=…`. The crawl strips session ids, so
 * the target normalized to the source and the page was recorded a redirect loop after one request:
 * the page and everything behind it were lost (helper-48). Now the URL is asked for once more as
 * the Location says, and its page is the document of the URL without the session id. A real
 * loopback site, the real pipeline on the emulator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../helpers/emulator.ts';
import { crawlSite, type ScopeSites, startSiteA } from '../helpers/scope-site.ts';
import type { Route } from '../helpers/site-server.ts';

const SID = ';jsessionid=A1B2C3D4E5F60718';
const html = (title: string, body: string): Route => ({
  headers: { 'content-type': 'text/html' },
  body: `<html><head><title>${title}</title></head><body>${body}</body></html>`,
});
const toSession = (path: string): Route => ({
  status: 302,
  headers: { location: `${path}${SID}`, 'set-cookie': 'JSESSIONID=A1B2C3D4E5F60718; Path=/' },
});

describe('a redirect that only adds a session id', () => {
  let emu: TestEmulator;
  let sites: ScopeSites;

  before(async () => {
    emu = await startTestEmulator();
    const routes: Record<string, Route> = {
      '/': html('home', '<a href="/app/catalog">catalog</a> <a href="/app/loop">loop</a>'),
      '/app/catalog': toSession('/app/catalog'),
      [`/app/catalog${SID}`]: html('Catalog', `<p>All items.</p><a href="/app/item${SID}">item</a>`),
      '/app/item': toSession('/app/item'),
      [`/app/item${SID}`]: html('Item', '<p>One item.</p>'),
      // Redirects to itself with a session id, and again with it: a loop indeed.
      '/app/loop': toSession('/app/loop'),
      [`/app/loop${SID}`]: toSession('/app/loop'),
    };
    sites = await startSiteA(routes);
  });
  after(async () => {
    await sites?.close();
    await emu?.stop();
  });

  it('is followed once, as the Location says; the page is indexed under its URL without the session id', async () => {
    const r = await crawlSite(sites, '/');
    const state = (path: string) => r.urls.find((u) => u.url === `${sites.a.url}${path}`);
    assert.equal(state('/app/catalog')?.state, 'indexed', JSON.stringify(state('/app/catalog')));
    assert.equal(state('/app/item')?.state, 'indexed', JSON.stringify(state('/app/item')));
    const titles = r.docs.map((d) => [String(d.url).replace(sites.a.url, ''), d.title]).sort();
    assert.deepEqual(titles, [
      ['/', 'home'],
      ['/app/catalog', 'Catalog'],
      ['/app/item', 'Item'],
    ]);
    assert.ok(
      r.seenA.includes(`/app/catalog${SID}`) && r.seenA.includes(`/app/item${SID}`),
      r.seenA.join(' '),
    );
    // The same answer to the URL with its session id is the loop it looks like: after two requests.
    assert.equal(state('/app/loop')?.errorCode, 'redirect-loop', JSON.stringify(state('/app/loop')));
    assert.deepEqual(
      r.seenA.filter((p) => p.startsWith('/app/loop')),
      ['/app/loop', `/app/loop${SID}`],
    );
    assert.equal(r.stats['requeued:session-redirect'], 3);
  });
});
