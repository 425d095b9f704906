import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SQSEvent } from 'aws-lambda';
import { type CrawlSession, crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import { createWorkQueues } from '../../shared/aws/work-queues.ts';
import { parseConfig } from '../../shared/config.ts';
import { isTableKept } from '../../shared/crawl/state/url-state.ts';
import { resetContainerDeps } from '../../shared/stages/deps.ts';
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
  const siteConfig = (prefix: string) =>
    parseConfig({
      name: uniqueCrawlName(prefix),
      startUrls: [`${site.url}/`],
      scope: { keepQueryParams: [] },
      fetch: { allowPrivateNetworks: true },
    });

  it('crawls a generated site: every reachable page indexed once, broken links in error', async () => {
    const session = await openSession(siteConfig('pipe'));
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

  async function hashes(session: CrawlSession): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for await (const d of documents(session)) {
      assert.ok(!out.has(d.url as string), `${d.url} listed twice`);
      out.set(d.url as string, d.hash);
    }
    return out;
  }

  it('a page indexed normally costs its claim only; redelivered extract messages change no document', async () => {
    const session = await openSession(siteConfig('redeliver'));
    // Observes what the real extract handler is given (the messages as SQS delivered them, pages
    // inline or a bundle pointer), to deliver exactly those again below.
    const handlers = session.runner['opts'].handlers;
    const extract = handlers.extract;
    const delivered: string[] = [];
    handlers.extract = (event, context) => {
      for (const r of (event as SQSEvent).Records) delivered.push(r.body);
      return extract(event, context);
    };
    await crawl(session);
    handlers.extract = extract;
    const before = await hashes(session);
    assert.equal(before.size, counts.expectedIndexed);

    // The table holds a whole state only where it must answer by key: errors, start URLs, sitemaps.
    const states = [];
    for await (const u of urlStates(session)) states.push(u);
    const mustBeTable = states.filter((u) => u.state === 'error' || u.depth === 0).map((u) => u.url);
    const tableKept: string[] = [];
    let claimsOnly = 0;
    for await (const item of session.urls.scan()) {
      if (isTableKept(item)) tableKept.push(item.url);
      else claimsOnly++;
    }
    assert.deepEqual(tableKept.sort(), (mustBeTable as string[]).sort());
    assert.ok(claimsOnly >= counts.expectedIndexed - 1, `${claimsOnly} URLs kept in lines`);

    // Every extract message delivered twice more (SQS standard queues deliver at least once).
    assert.ok(delivered.length > 0);
    const fetchedBefore = site.requests.length;
    // As a fresh Lambda container would: no warm cache of known URLs, so the redelivered message's
    // claims win again (the claimer names its pages) and its links are fetched once more.
    resetContainerDeps();
    const queues = createWorkQueues({ client: session.monitor.sqs });
    const again = delivered.map((body) => ({ body: JSON.parse(body) as unknown }));
    await queues.send(session.resources.queueUrls.extract, [...again, ...again]);
    await session.runner.drain();
    assert.ok(site.requests.length > fetchedBefore, 'the redelivered claims were fetched again');
    assert.deepEqual(await hashes(session), before);
    const after = [];
    for await (const u of urlStates(session)) after.push(u);
    assert.equal(after.length, states.length);
    assert.equal(after.filter((u) => u.state === 'pending').length, 0);
    assert.deepEqual(
      after.map((u) => [u.url, u.state]),
      states.map((u) => [u.url, u.state]),
    );
  });
});
