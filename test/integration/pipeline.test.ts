import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('the pipeline end to end on the emulator', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let counts: ReturnType<typeof generateDemoSite>;

  before(async () => {
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-site-'));
    site = await startSiteServer({ root: dir });
    counts = generateDemoSite(dir, { pages: 60, seed: 7, baseUrl: site.url });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('crawls a generated site: every reachable page indexed once, broken links in error', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('pipe'),
      startUrls: [`${site.url}/`],
      scope: { keepQueryParams: [] },
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);
    await crawl(session);
    const docs = [];
    for await (const d of documents(session)) docs.push(d);
    const urls = [];
    for await (const u of urlStates(session)) urls.push(u);
    assert.equal(docs.length, counts.expectedIndexed);
    assert.equal(new Set(docs.map((d) => d.url)).size, docs.length);
    const errors = urls.filter((u) => u.state === 'error');
    assert.equal(errors.length, counts.brokenLinks);
    assert.ok(errors.every((u) => u.httpStatus === 404 && u.errorKind === 'permanent'));
    assert.equal(urls.filter((u) => u.state === 'pending').length, 0);
    // Each page was fetched once (robots.txt and the sitemap aside).
    const pageGets = site.requests.filter((r) => r.method === 'GET' && r.path.endsWith('.html'));
    assert.equal(new Set(pageGets.map((r) => r.path)).size, pageGets.length);
  });
});
