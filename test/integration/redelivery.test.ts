/**
 * Issue 15 item 5: redelivery leaves no trace. Every extract and index batch is delivered twice by
 * the real queue (the handler really runs, then the runner sees it fail — a crash before the
 * delete — so the emulator's queue hands the batch out again after its lease), every fetch
 * round's first delete of its frontier messages is lost (the pages are written, the messages
 * come back and are fetched again), and copies of every extract message are sent to the queue. The
 * change feed still holds one upsert per document, and `trawl docs` one version per URL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { readChanges } from '../../cli/change-feed.ts';
import { type AnyHandler, LocalRunner, scheduledEvent } from '../../cli/runner.ts';
import { type CrawlSession, documents, openSession } from '../../cli/session.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import * as extract from '../../functions/extract/handler.ts';
import * as fetch from '../../functions/fetch/handler.ts';
import * as index from '../../functions/index/handler.ts';
import * as refresh from '../../functions/refresh/handler.ts';
import * as seed from '../../functions/seed/handler.ts';
import { createWorkQueues } from '../../shared/aws/work-queues.ts';
import { parseConfig } from '../../shared/config.ts';
import { containerDeps, resetContainerDeps } from '../../shared/stages/deps.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('redelivery', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let expected = 0;
  const lease = process.env.TRAWL_LEASE_SECONDS;

  before(async () => {
    process.env.TRAWL_LEASE_SECONDS = '2';
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-redeliver-'));
    site = await startSiteServer({ root: dir });
    expected = generateDemoSite(dir, { pages: 24, seed: 5, baseUrl: site.url }).expectedIndexed;
  });
  after(async () => {
    if (lease === undefined) delete process.env.TRAWL_LEASE_SECONDS;
    else process.env.TRAWL_LEASE_SECONDS = lease;
    await site?.close();
    await emu?.stop();
  });

  /** The handler, keeping every message body it was given (pages inline, or a bundle's key). */
  function keepBodies(handler: AnyHandler, bodies: Set<string>): AnyHandler {
    return async (event: SQSEvent, context) => {
      for (const r of event.Records) bodies.add(r.body);
      return handler(event, context);
    };
  }

  /** The real handler; on a batch's first delivery the runner is told it failed after it ran. */
  function twice(handler: AnyHandler, counter: { redelivered: number }): AnyHandler {
    return async (event: SQSEvent, context) => {
      const out = await handler(event, context);
      const counts = event.Records.map((r) => Number(r.attributes.ApproximateReceiveCount));
      if (counts.every((c) => c === 1)) throw new Error('crashed after its work, before the delete');
      counter.redelivered += counts.filter((c) => c > 1).length;
      return out;
    };
  }

  async function upserts(session: CrawlSession): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    // The feed as written: the index stage's own checks, not the fold of its readers.
    for (const c of await readChanges(session, { copies: true }))
      if (c.type === 'upsert') out.set(c.url, (out.get(c.url) ?? 0) + 1);
    return out;
  }

  it('gives one change record per document when every batch is delivered twice', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('redeliver'),
      startUrls: [`${site.url}/`],
      scope: { keepQueryParams: [] },
      fetch: { allowPrivateNetworks: true, maxInvocations: 2 },
      index: { foldDuplicates: false },
    });
    const session = await openSession(config, { logLevel: 'SILENT' });
    const seen = { redelivered: 0 };
    // The first delete of each fetch round's frontier messages is lost: written, not deleted.
    let lostDeletes = 0;
    const deleted = new Set<string>();
    containerDeps('fetch').clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { QueueUrl?: string };
        const frontier = Object.values(session.resources.queueUrls.frontier).includes(input.QueueUrl ?? '');
        if ((context as { commandName?: string }).commandName === 'DeleteMessageBatchCommand' && frontier) {
          const key = JSON.stringify(args.input);
          if (!deleted.has(key)) {
            deleted.add(key);
            lostDeletes++;
            throw new Error('delete lost');
          }
        }
        return next(args);
      },
      { step: 'initialize', name: 'loseFirstDelete' },
    );
    const extractBodies = new Set<string>();
    const runner = new LocalRunner({
      handlers: {
        seed: seed.handler as AnyHandler,
        fetch: fetch.handler as AnyHandler,
        extract: twice(keepBodies(extract.handler as AnyHandler, extractBodies), seen),
        index: twice(index.handler as AnyHandler, seen),
        refresh: refresh.handler as AnyHandler,
      },
      queueUrls: session.resources.queueUrls,
      monitor: session.monitor,
      pollers: session.clients,
      fetchConcurrency: 2,
    });
    await runner.invoke('seed', scheduledEvent('Start Crawl'));
    await runner.drain();

    assert.ok(seen.redelivered > 0 && lostDeletes > 0, 'batches were redelivered, deletes lost');
    const pageGets = site.requests.filter((r) => r.path.endsWith('.html'));
    // A message that comes back after its URLs' states were written skips them (the next test).
    assert.ok(
      new Set(pageGets.map((r) => r.path)).size < pageGets.length ||
        stageStats['skipped:fetched-since-queued'],
      'pages were fetched twice, or found done',
    );
    const docs: string[] = [];
    for await (const d of documents(session)) docs.push(d.url as string);
    assert.equal(docs.length, expected);
    assert.equal(new Set(docs).size, docs.length, 'one version per URL');
    const once = await upserts(session);
    assert.deepEqual([...once.keys()].sort(), [...docs].sort());
    assert.deepEqual(
      [...once].filter(([, n]) => n > 1),
      [],
      'one upsert per document',
    );

    // Copies of every extract message sent to the queue again (as a new container would see them).
    resetContainerDeps();
    assert.ok(extractBodies.size > 0);
    const queues = createWorkQueues({ client: session.monitor.sqs });
    await queues.send(
      session.resources.queueUrls.extract,
      [...extractBodies].map((body) => ({ body: JSON.parse(body) })),
    );
    await session.runner.drain();
    assert.deepEqual(await upserts(session), once, 'the copies changed nothing in the feed');
  });

  it('a frontier message delivered again skips the URLs fetched and recorded since it was queued', async () => {
    // A message holds up to 50 URLs; when the invocation holding it dies (kill -9, a crash), it
    // comes back whole, and the URLs the dead invocation had already fetched and recorded were
    // fetched again. Here the crawl before the message stands in for the dead invocation's work.
    resetContainerDeps();
    const config = parseConfig({
      name: uniqueCrawlName('skipdone'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config, { logLevel: 'SILENT' });
    const queuedBefore = new Date().toISOString();
    await session.runner.invoke('seed', scheduledEvent('Start Crawl'));
    await session.runner.drain();
    const queuedAfter = new Date().toISOString();
    const pages = [...new Set(site.requests.map((r) => r.path).filter((p) => p.endsWith('.html')))];
    assert.ok(pages.length >= 3);
    const [a, b, c] = pages.map((p) => `${site.url}${p}`);
    const task = (url: string) => ({
      url,
      depth: 1,
      queue: 'index_follow' as const,
      index: true,
      follow: true,
      priority: 0,
    });
    const queues = createWorkQueues({ client: session.monitor.sqs });
    const frontier = session.resources.queueUrls.frontier.index_follow;
    /** Sends a message as queued at `queuedAt`; delivered twice when `again` (taken once, given back). */
    const deliver = async (urls: string[], queuedAt: string, again: boolean) => {
      await queues.send(frontier, [{ body: { tasks: urls.map(task), queuedAt } }]);
      if (!again) return;
      const [m] = await queues.receive(frontier, 10, 1, 30);
      assert.ok(m, 'the message was received');
      await queues.changeVisibility(frontier, [{ receiptHandle: m.receiptHandle, seconds: 0 }]);
    };
    const fetchedSince = async (from: number) => {
      await session.runner.drain();
      return site.requests
        .slice(from)
        .map((r) => `${site.url}${r.path}`)
        .filter((u) => u !== `${site.url}/robots.txt`);
    };

    // Queued before the crawl fetched a and b, delivered again: both done, only the new URL is fetched.
    const fresh = `${site.url}/never-linked.html`;
    let from = site.requests.length;
    await deliver([a as string, b as string, fresh], queuedBefore, true);
    assert.deepEqual(await fetchedSince(from), [fresh]);
    // Queued after their fetch: fetched again (a refresh, a discovery cycle's start URL).
    from = site.requests.length;
    await deliver([c as string], queuedAfter, true);
    assert.deepEqual(await fetchedSince(from), [c]);
    // A first delivery is never checked: it costs nothing when nothing died.
    from = site.requests.length;
    await deliver([a as string], queuedBefore, false);
    assert.deepEqual(await fetchedSince(from), [a]);
    // Every URL of it fetched before: the message is done and deleted. It went back as it was,
    // untouched, at every receive, until its dead-letter queue took it.
    from = site.requests.length;
    await deliver([a as string, b as string], queuedBefore, true);
    assert.deepEqual(await fetchedSince(from), []);
    const depth = async (url: string) => {
      const attrs = await session.monitor.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
      );
      const a = attrs.Attributes ?? {};
      return (
        Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    };
    assert.equal(await depth(frontier), 0, 'deleted, not given back');
    assert.equal(
      await depth(session.resources.dlqUrls.frontier.index_follow as string),
      0,
      'not dead-lettered',
    );
  });
});
