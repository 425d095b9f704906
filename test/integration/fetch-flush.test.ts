/**
 * The fetch stage holds finished pages until it writes them together (fetch-flush.ts). What it holds
 * is bounded by bytes as well as by pages and time: sixteen concurrent 10 MB bodies, held for the
 * 200 pages or 3 s of a batch, would take the fetch function past its memory — and so would
 * one frontier message of 50 such pages held until its last URL is read. The real flusher, the real
 * queues and bucket on the emulator; in the first test the pages are made up (their bodies are all
 * that counts), in the second the real fetch stage reads them off a loopback site.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { RoundFlusher } from '../../shared/stages/fetch-flush.ts';
import { Leases } from '../../shared/stages/fetch-leases.ts';
import { fetchMemoryMb, fetchMemoryPlan } from '../../shared/stages/fetch-memory.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import type { ExtractMessage, FetchedPage, UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { startSiteServer } from '../helpers/site-server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function bigPage(url: string, base64Chars: number): FetchedPage {
  const task: UrlTask = { url, depth: 1, queue: 'index', index: true, follow: false, priority: 0 };
  return {
    task,
    url,
    status: 200,
    headers: { 'content-type': 'text/plain' },
    fetchedAt: new Date().toISOString(),
    // Incompressible, as most big bodies are (a run of one letter would gzip into an inline message).
    body: randomBytes(Math.ceil((base64Chars * 3) / 4))
      .toString('base64')
      .slice(0, base64Chars),
    truncated: false,
    notModified: false,
  };
}

describe('fetch flush', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  it('writes held pages once they reach the flush size, before the page count or the time says so', async () => {
    const config = parseConfig({ name: uniqueCrawlName('flush'), startUrls: ['http://127.0.0.1:9/'] });
    await openSession(config);
    const deps = depsFromEnv();
    const frontier = deps.queueUrls.frontier.index;
    await deps.queues.send(
      frontier,
      [0, 1, 2, 3].map((i) => ({ body: { tasks: [] as UrlTask[], n: i } })),
    );
    const received = await deps.queues.receive<unknown>(frontier, 10, 0, 60);
    assert.equal(received.length, 4);
    const leases = new Leases(deps.queues, () => undefined);
    leases.hold(
      frontier,
      received.map((m) => m.receiptHandle),
    );
    const flushed: number[] = [];
    // The sizes the fetch stage gives it: the plan of the memory the config is deployed with.
    const sizes = fetchMemoryPlan(fetchMemoryMb(config.fetch), config.fetch);
    const flusher = new RoundFlusher(deps, leases, (results) => flushed.push(results.length), sizes);
    // Each page a third of the bound: the third one reaches it.
    const chars = Math.ceil(sizes.flushBytes / 3);
    for (const [i, m] of received.slice(0, 3).entries()) {
      flusher.page({ type: 'page', page: bigPage(`http://127.0.0.1:9/${i}`, chars) });
      flusher.complete({ queueUrl: frontier, receiptHandle: m.receiptHandle, requeued: [], pages: 1 });
    }
    // Written without flush() being called, long before FLUSH_MS would matter to a next complete().
    for (let i = 0; i < 200 && flushed.length === 0; i++) await sleep(50);
    assert.deepEqual(flushed, [3], 'the three pages were written as one extract message');

    flusher.page({ type: 'page', page: bigPage('http://127.0.0.1:9/3', 10) });
    flusher.complete({
      queueUrl: frontier,
      receiptHandle: received[3]?.receiptHandle ?? '',
      requeued: [],
      pages: 1,
    });
    await flusher.flush();
    assert.deepEqual(flushed, [3, 1]);

    const messages = await deps.queues.receive<ExtractMessage>(deps.queueUrls.extract, 10, 0, 60);
    const counts = messages.map((m) => m.body?.count).sort();
    assert.deepEqual(counts, [1, 3], 'two extract messages: the bundle of three, then the small one');
    const bundle = messages.find((m) => m.body?.count === 3)?.body;
    assert.ok(bundle && 'bundle' in bundle, 'the big pages went to a page bundle in S3');
    const pages = await deps.store.getLines<FetchedPage>(bundle.bundle);
    assert.equal(pages.length, 3);
    assert.equal(pages[0]?.body.length, chars, 'bodies kept whole');
    // Every frontier message was deleted: nothing comes back.
    assert.equal((await deps.queues.receive<unknown>(frontier, 10, 0, 1)).length, 0);
  });

  it('writes the pages of one frontier message as they come, not once its last URL is read', async () => {
    // Eight pages of 870 KB (incompressible; 1.16 MB in base64) in one message: under the spool
    // size, so held in memory until written, and two reach the flush size of the default memory
    // (fetch-memory.ts: 1.5 MB at 192 MB).
    const dir = mkdtempSync(join(tmpdir(), 'trawl-flush-'));
    const body = `<html><body>${randomBytes(650 * 1024).toString('base64')}</body></html>`;
    const PAGES = 8;
    for (let i = 0; i < PAGES; i++) writeFileSync(join(dir, `${i}.html`), body);
    const site = await startSiteServer({ root: dir });
    try {
      const config = parseConfig({
        name: uniqueCrawlName('flush-msg'),
        startUrls: [`${site.url}/0.html`],
        fetch: { allowPrivateNetworks: true, respectRobotsTxt: false },
      });
      await openSession(config);
      const deps = depsFromEnv();
      const tasks: UrlTask[] = Array.from({ length: PAGES }, (_, i) => ({
        url: `${site.url}/${i}.html`,
        depth: 0,
        queue: 'user' as const,
        index: true,
        follow: false,
        priority: 0,
      }));
      await sendTasks(deps, tasks);
      const summary = await runFetchStage(deps, { deadline: Date.now() + 60_000 });
      assert.equal(summary.fetched, PAGES);
      const messages = await deps.queues.receive<ExtractMessage>(deps.queueUrls.extract, 10, 0, 60);
      const counts = messages.map((m) => m.body?.count ?? 0);
      console.log(`extract messages: ${JSON.stringify(counts)}`);
      assert.ok(
        messages.length >= 3,
        `${messages.length} extract messages for ${PAGES} pages of one frontier message`,
      );
      assert.equal(
        counts.reduce((a, b) => a + b, 0),
        PAGES,
        'every page written once',
      );
      const urls = new Set<string>();
      for (const m of messages) {
        const b = m.body;
        if (b && 'bundle' in b)
          for (const p of await deps.store.getLines<FetchedPage>(b.bundle)) urls.add(p.url);
      }
      assert.equal(urls.size, PAGES);
      assert.equal(
        (await deps.queues.receive<unknown>(deps.queueUrls.frontier.user, 10, 0, 1)).length,
        0,
        'the frontier message was deleted',
      );
    } finally {
      await site.close();
    }
  });
});
