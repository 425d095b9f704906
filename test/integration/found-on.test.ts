/**
 * Where a URL was found (`foundOn` in its state): the page that linked it, the sitemap that listed
 * it, the URL that redirected to it. "Why is this page in the index?" had no answer, and a broken
 * link's state did not say which page holds it (helper-46). Kept through a refresh cycle. A real
 * loopback site, the real pipeline on the emulator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const html = (title: string, body = '') => ({
  headers: { 'content-type': 'text/html' },
  body: `<html><head><title>${title}</title></head><body><p>${title} text.</p>${body}</body></html>`,
});

describe('foundOn: where each URL was found', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { body: `User-agent: *\nSitemap: ${'SITE'}/sitemap.xml\n` });
    site.route('/', html('Home', '<a href="/a">a</a> <a href="/old">old</a>'));
    site.route('/a', html('A', '<a href="/broken">broken</a>'));
    site.route('/broken', { status: 404, body: 'gone' });
    site.route('/old', { status: 301, headers: { location: '/new' } });
    site.route('/new', html('New'));
    site.route('/listed', html('Listed'));
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('names the linking page, the sitemap, the redirecting URL; a start URL has none; kept by a refresh', async () => {
    const base = site.url;
    site.route('/robots.txt', { body: `User-agent: *\nSitemap: ${base}/sitemap.xml\n` });
    site.route('/sitemap.xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${base}/listed</loc></url></urlset>`,
    });
    const config = parseConfig({
      name: uniqueCrawlName('foundon'),
      startUrls: [`${base}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1h' },
    });
    const states = async (s: Awaited<ReturnType<typeof openSession>>) => {
      const out: Record<string, [unknown, unknown]> = {};
      for await (const u of urlStates(s))
        out[String(u.url).slice(base.length)] = [
          u.state,
          u.foundOn ? String(u.foundOn).slice(base.length) : null,
        ];
      return out;
    };
    const session = await openSession(config);
    await crawl(session);
    const expected = {
      '/': ['indexed', null],
      '/a': ['indexed', '/'],
      '/broken': ['error', '/a'],
      '/old': ['ignored', '/'],
      '/new': ['indexed', '/old'],
      '/sitemap.xml': ['followed', null],
      '/listed': ['indexed', '/sitemap.xml'],
    };
    assert.deepEqual(await states(session), expected);
    const later = await openSession(config, { now: new Date(Date.now() + 2 * 3_600_000) });
    await refresh(later);
    // The refresh forgets the broken link's URL (a permanent error fetched again); the rest keep theirs.
    const { '/broken': _gone, ...kept } = expected;
    assert.deepEqual(await states(later), kept, 'the same after a refresh cycle');
  });
});
