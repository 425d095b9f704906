/**
 * A refresh task lost on its way (its frontier message purged, as a dead-lettered batch that is
 * never redriven is lost when SQS's retention ends) must not take its URL out of the schedule:
 * the line the cycle read is behind the cursor, so before the pending copy (refresh-stage.ts)
 * the page was never fetched again and a page that now fails stayed in the index. Real loopback
 * site, real emulator, real handlers; the loss is a real PurgeQueue of the frontier queues.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { scheduledEvent } from '../../cli/runner.ts';
import { type CrawlSession, crawl, documents, openSession, planRefresh, refresh } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { SOURCES } from '../../shared/types.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, links: string[] = []) =>
  `<!doctype html><title>${title}</title><p>${title}</p>${links.map((l) => `<a href="${l}">${l}</a>`).join('')}`;

describe('a refresh task lost on its way keeps its URL in the schedule', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let dir: string;
  before(async () => {
    emu = await startTestEmulator();
    dir = mkdtempSync(join(tmpdir(), 'trawl-lost-'));
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the next cycle refreshes the page, and deletes it once it answers 404', async () => {
    writeFileSync(join(dir, 'index.html'), page('Home', ['/a.html']));
    writeFileSync(join(dir, 'a.html'), page('A'));
    const config = parseConfig({
      name: uniqueCrawlName('lost'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d' },
    });
    const t0 = Date.now();
    await crawl(await openSession(config));
    const at = (days: number) => new Date(t0 + days * DAY + 5 * 60_000);
    const fetchesOfA = (since: number) =>
      site.requests.slice(since).filter((r) => r.path === '/a.html').length;

    // Day 1: the cycle queues a.html's refresh, and the task is lost before any fetcher runs.
    const day1 = await openSession(config, { now: at(1) });
    const since1 = site.requests.length;
    await day1.runner.invoke('refresh', scheduledEvent());
    await purgeFrontier(day1);
    await day1.runner.drain();
    assert.equal(fetchesOfA(since1), 0, 'the task was lost: a.html was not fetched on day 1');

    // Day 2: a.html answers 404 now. It is due again, and the cycle deletes its document.
    rmSync(join(dir, 'a.html'));
    const day2 = await openSession(config, { now: at(2) });
    const plan = await planRefresh(day2);
    assert.ok(
      plan.some((p) => p.url === `${site.url}/a.html` && p.action === 'refresh'),
      `a.html is due on day 2: ${JSON.stringify(plan)}`,
    );
    const since2 = site.requests.length;
    await refresh(day2);
    assert.equal(fetchesOfA(since2), 1, 'a.html was fetched once on day 2');
    const urls = (await collect(documents(day2))).map((d) => new URL(d.url as string).pathname);
    assert.deepEqual(urls, ['/'], 'the page that answers 404 left the index');
  });
});

/** Loses every queued frontier task for real: SQS PurgeQueue on each source queue. */
async function purgeFrontier(session: CrawlSession): Promise<void> {
  for (const source of SOURCES) {
    const url = session.resources.queueUrls.frontier[source];
    await session.clients.sqs.send(new PurgeQueueCommand({ QueueUrl: url }));
  }
}
