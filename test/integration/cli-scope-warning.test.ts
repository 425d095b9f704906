// A crawl whose scope rejects every link of its start pages (an https-only scope for an http
// site, an include no link matches): the real CLI says so on stderr with the reasons, where it
// ended "finished", exit 0, one document and no word why. A crawl that found pages, and the same
// crawl run again (which claims nothing new), say nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trawlAsync } from '../helpers/cli.ts';
import { linkPage } from '../helpers/crawl-env.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = ['/a', '/b', '/c'];
const trawl = (cwd: string, ...args: string[]) => trawlAsync(cwd, {}, ...args);

describe('a crawl that follows no link', () => {
  let cwd: string;
  let site: SiteServer;
  before(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'trawl-scope-'));
    site = await startSiteServer({
      routes: Object.fromEntries([
        ['/', { body: linkPage('Home', PAGES) }],
        ['/robots.txt', { status: 404, body: '' }],
        ...PAGES.map((p) => [p, { body: linkPage(`Page ${p}`) }]),
      ]),
    });
  });
  after(async () => {
    await trawl(cwd, 'emulator', 'stop');
    await site?.close();
  });

  const config = (name: string, scope: Record<string, unknown> = {}) => {
    const file = join(cwd, `${name}.json`);
    writeFileSync(
      file,
      JSON.stringify({ name, startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true }, scope }),
    );
    return file;
  };

  it('says so when the scope rejected every link, with the reasons', async () => {
    const r = await trawl(cwd, 'crawl', '-c', config('https-only', { schemes: ['https'] }), '--no-progress');
    assert.equal(r.code, 0, r.err);
    assert.match(
      r.err,
      /trawl: warning: no link was followed: the 3 found were all rejected \(scheme-not-allowed 3\); the scope may be narrower than meant \("trawl explain -c .*https-only\.json URL" says why for one\)/,
    );
  });

  it('names a robots.txt Sitemap: line the seed left out (out of scope), which only a log line said', async () => {
    site.route('/robots.txt', { body: 'User-agent: *\nAllow: /\nSitemap: http://elsewhere.example/s.xml\n' });
    try {
      const r = await trawl(cwd, 'crawl', '-c', config('robots-sitemap'), '--no-progress');
      assert.equal(r.code, 0, r.err);
      assert.match(
        r.err,
        /trawl: warning: not seeded: http:\/\/elsewhere\.example\/s\.xml: robots\.txt Sitemap: out of scope \(offsite\)/,
      );
    } finally {
      site.route('/robots.txt', { status: 404, body: '' });
    }
  });

  it('says nothing of a crawl that found pages, nor when it is run again and claims nothing new', async () => {
    // One link rejected (an exclude), the others followed: the run again claims nothing new and
    // rejects that link again, and must still say nothing.
    const file = config('plain', { exclude: ['/c$'] });
    const first = await trawl(cwd, 'crawl', '-c', file, '--no-progress');
    assert.equal(first.code, 0, first.err);
    assert.doesNotMatch(first.err, /no link was followed/);
    const again = await trawl(cwd, 'crawl', '-c', file, '--no-progress');
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /excluded 1/, 'the run again rejected the excluded link');
    assert.doesNotMatch(again.err, /no link was followed/);
  });
});
