// Requests in flight to one host inside one fetch worker: `fetch.connectionsPerHost` when the host
// asks for no delay, one at a time when it does (waitBetweenRequestsMs or robots.txt Crawl-delay).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

/** A site of `pages` pages that answer after `answerMs`; it records the most requests in flight at once. */
async function slowSite(
  robots: string,
  pages: number,
  answerMs: number,
): Promise<SiteServer & { maxInFlight: () => number }> {
  const site = await startSiteServer({});
  let inFlight = 0;
  let max = 0;
  const links = Array.from({ length: pages }, (_, i) => `<a href="/p/${i}">${i}</a>`).join(' ');
  site.route('/robots.txt', { headers: { 'content-type': 'text/plain' }, body: robots });
  site.route('/', { headers: { 'content-type': 'text/html' }, body: `<title>home</title>${links}` });
  for (let i = 0; i < pages; i++) {
    site.route(`/p/${i}`, {
      handler: (_req, res) => {
        inFlight++;
        max = Math.max(max, inFlight);
        setTimeout(() => {
          inFlight--;
          res.writeHead(200, { 'content-type': 'text/html' }).end(`<title>p${i}</title><p>page ${i}</p>`);
        }, answerMs);
      },
    });
  }
  return Object.assign(site, { maxInFlight: () => max });
}

describe('requests in flight per host (fetch.connectionsPerHost)', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  async function crawlWith(robots: string, fetch: Record<string, unknown>, pages: number, answerMs: number) {
    const site = await slowSite(robots, pages, answerMs);
    try {
      const config = parseConfig({
        name: uniqueCrawlName('lanes'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true, connectionsPerHost: 3, ...fetch },
      });
      // One fetch worker: what is measured is the lane inside one invocation.
      const session = await openSession(config, { fetchConcurrency: 1 });
      await crawl(session);
      let docs = 0;
      for await (const _ of documents(session)) docs++;
      return { docs, max: site.maxInFlight() };
    } finally {
      await site.close();
    }
  }

  it('no delay: up to connectionsPerHost requests to the host at once, never more', async () => {
    const { docs, max } = await crawlWith('User-agent: *\nAllow: /\n', {}, 24, 80);
    assert.equal(docs, 24 + 1);
    assert.equal(max, 3);
  });

  it('a Crawl-delay or waitBetweenRequestsMs: one request at a time', async () => {
    // Answers (400 ms) outlast the spacing of request starts (delay + slot margin, ≈ 110 ms): more
    // than one in flight would show if the lane let them.
    const crawlDelay = await crawlWith('User-agent: *\nCrawl-delay: 0.01\n', {}, 6, 400);
    assert.equal(crawlDelay.docs, 6 + 1);
    assert.equal(crawlDelay.max, 1);
    const wait = await crawlWith('User-agent: *\nAllow: /\n', { waitBetweenRequestsMs: 10 }, 6, 400);
    assert.equal(wait.docs, 6 + 1);
    assert.equal(wait.max, 1);
  });
});
