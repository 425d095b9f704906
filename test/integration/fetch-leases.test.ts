// Issue 15 items 1–2 for the fetch function's own polling: frontier messages are leased briefly,
// written and deleted message by message, and a clean stop (an abort signal) gives back at once
// what is held: nothing waits out a lease, nothing is lost, nothing finished is fetched again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv, type StageDeps } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import type { FrontierMessage, UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const MESSAGES = 3;
const PER_MESSAGE = 20;
const SLOW_MS = 300;

function task(url: string): UrlTask {
  return { url, depth: 1, queue: 'index', index: true, follow: false, priority: 0 };
}

/** Receives everything visible in the queue (leases of 60 s, so nothing comes round twice). */
async function drainTasks(deps: StageDeps, queueUrl: string): Promise<string[]> {
  const urls: string[] = [];
  for (;;) {
    const got = await deps.queues.receive<FrontierMessage>(queueUrl, 10, 0, 60);
    if (got.length === 0) return urls;
    for (const m of got) urls.push(...(m.body?.tasks ?? []).map((t) => t.url));
  }
}

describe('fetch leases: a clean stop gives the frontier back at once', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { status: 404 });
    for (let i = 0; i < MESSAGES * PER_MESSAGE; i++)
      site.route(`/p/${i}`, {
        handler: (_req, res) => {
          setTimeout(
            () => res.writeHead(200, { 'content-type': 'text/html' }).end(`<title>${i}</title>`),
            SLOW_MS,
          );
        },
      });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('aborted mid-round: fetched pages are written and their tasks gone; every other task is visible again now', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('lease'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true, concurrency: 2, connectionsPerHost: 2 },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const queueUrl = deps.queueUrls.frontier.index;
    const all = Array.from({ length: MESSAGES * PER_MESSAGE }, (_, i) => task(`${site.url}/p/${i}`));
    await deps.queues.send(
      queueUrl,
      Array.from({ length: MESSAGES }, (_, m) => ({
        body: { tasks: all.slice(m * PER_MESSAGE, (m + 1) * PER_MESSAGE) } satisfies FrontierMessage,
      })),
    );
    const stop = new AbortController();
    // Stop once a few pages have been requested: well inside the first message.
    const watcher = setInterval(() => {
      if (site.requests.filter((r) => r.path.startsWith('/p/')).length >= 4) stop.abort();
    }, 20);
    const summary = await runFetchStage(deps, { deadline: Date.now() + 60_000, signal: stop.signal });
    clearInterval(watcher);

    assert.ok(summary.fetched >= 4, `fetched ${summary.fetched} before the stop`);
    assert.ok(summary.fetched < all.length, 'stopped before the end');
    const depth = await deps.queues.depth(queueUrl);
    assert.equal(depth.inFlight, 0, 'no message is left leased');
    assert.equal(depth.delayed, 0, 'nothing handed back with a delay');
    // What is in the queue now is exactly what was not fetched: nothing lost, nothing twice.
    const left = await drainTasks(deps, queueUrl);
    const fetched = summary.order.map((o) => o.url);
    assert.equal(new Set([...left, ...fetched]).size, all.length, 'every task either fetched or back');
    assert.equal(left.length + fetched.length, all.length, 'no task both fetched and handed back');
    const extract = await deps.queues.depth(deps.queueUrls.extract);
    assert.ok(extract.visible >= 1, 'the fetched pages went on to extract');
  });
});
