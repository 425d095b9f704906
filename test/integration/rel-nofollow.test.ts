/**
 * extract.honorRelNofollow end to end: a link whose rel says nofollow is not followed from its page
 * (the page it names is still crawled when another page links to it plainly), counted as rejected
 * `rel-nofollow`; with the option off every link is followed. A real loopback site, the real
 * pipeline on the emulator (cli/session.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../helpers/emulator.ts';
import { crawlSite, rejections, type ScopeSites, startSiteA } from '../helpers/scope-site.ts';

const html = (title: string, body: string) => ({
  headers: { 'content-type': 'text/html' },
  body: `<html><head><title>${title}</title></head><body>${body}</body></html>`,
});

describe('rel=nofollow links', () => {
  let emu: TestEmulator;
  let sites: ScopeSites;

  before(async () => {
    emu = await startTestEmulator();
    const routes = {
      '/': html(
        'home',
        '<a href="/plain">plain</a> <a href="/login" rel="nofollow">log in</a> ' +
          '<a href="/ad" rel="sponsored nofollow">ad</a> <a href="/shared" REL="NoFollow">shared</a>',
      ),
      '/plain': html('plain', '<a href="/shared">shared, plainly</a>'),
      '/login': html('login', 'a login form'),
      '/ad': html('ad', 'an advert'),
      '/shared': html('shared', 'linked plainly from /plain'),
    };
    sites = await startSiteA(routes);
  });
  after(async () => {
    await sites?.close();
    await emu?.stop();
  });

  it('are not followed from their page, and are counted; the pages they name stay reachable', async () => {
    const r = await crawlSite(sites, '/');
    assert.deepEqual([...r.seenA].sort(), ['/', '/plain', '/shared']);
    assert.deepEqual(rejections(r.stats), { 'rel-nofollow': 3 });
  });

  it('extract.honorRelNofollow: false follows them', async () => {
    const r = await crawlSite(sites, '/', { extract: { honorRelNofollow: false } });
    assert.deepEqual([...r.seenA].sort(), ['/', '/ad', '/login', '/plain', '/shared']);
    assert.deepEqual(rejections(r.stats), {});
  });
});
