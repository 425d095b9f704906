/**
 * URLs too long to keep, from a hostile site, through the real pipeline on the emulator: a
 * robots.txt `Sitemap:` line, a sitemap index's child and an archive entry's name of thousands of
 * characters. Each skipped the `scope.maxUrlLength` check (a start URL's exemption, or no check at
 * all), and its write failed the whole batch: the seed failed at every run, or the batch was
 * retried and dead-lettered with the start page in it (helper-51). Now each is left out, said,
 * and the rest of the site is crawled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const LONG = 'R'.repeat(6000);

describe('URLs too long to keep', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('from robots.txt, a sitemap index and an archive entry: left out, the rest crawled', async () => {
    const base = site.url;
    site.route('/robots.txt', {
      body: `User-agent: *\nSitemap: ${base}/r/${LONG}.xml\nSitemap: ${base}/index.xml\n`,
    });
    site.route('/index.xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${base}/s/${LONG}.xml</loc></sitemap><sitemap><loc>${base}/ok.xml</loc></sitemap></sitemapindex>`,
    });
    site.route('/ok.xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${base}/listed</loc></url></urlset>`,
    });
    const zip = zipSync({
      [`d/${'N'.repeat(3000)}.txt`]: strToU8('long name'),
      'short.txt': strToU8('short one'),
    });
    site.route('/bundle', { headers: { 'content-type': 'application/zip' }, body: zip });
    const page = (title: string, body = '') => ({
      headers: { 'content-type': 'text/html' },
      body: `<html><head><title>${title}</title></head><body><p>${title}.</p>${body}</body></html>`,
    });
    site.route('/', page('Home', '<a href="/bundle">bundle</a> <a href="/a">a</a>'));
    site.route('/a', page('A'));
    site.route('/listed', page('Listed'));
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('longurls'),
        startUrls: [`${base}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const { rejected } = await crawl(session);
    const states = new Map<string, string>();
    for await (const u of urlStates(session)) states.set(String(u.url).slice(base.length), String(u.state));
    for (const p of ['/', '/a', '/listed', '/bundle/short.txt'])
      assert.equal(states.get(p), 'indexed', `${p}: ${JSON.stringify([...states])}`);
    assert.ok(
      [...states.keys()].every((k) => k.length < 2048),
      'no URL over the key size was recorded',
    );
    assert.ok(
      rejected.some((r) => r.includes('url-too-long')),
      `the seed said why: ${rejected.join('; ')}`,
    );
    assert.ok(!site.requests.some((r) => r.path.includes(LONG)), 'neither long sitemap was requested');
  });
});
