/**
 * Politeness by scheduling leaves a wake-up call: a fetcher that put a host's URLs back with a
 * delay and found nothing else due ends, and one delayed message on the wake queue (whose event
 * source mapping starts a fetcher on AWS) becomes visible when they are due. Real fetch stage,
 * real site on loopback, real emulator queues.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lambdaContext, sqsEvent } from '../../cli/runner.ts';
import { openSession } from '../../cli/session.ts';
import * as fetchHandler from '../../functions/fetch/handler.ts';
import { watchAwsCalls } from '../../shared/aws/request-counter.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { decidedUnder, sendTasks } from '../../shared/stages/send-tasks.ts';
import type { WakeMessage } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';
import { urlTask } from '../helpers/tasks.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('wake-up calls for URLs put back by politeness', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-wake-'));
    for (const i of [0, 1, 2]) writeFileSync(join(dir, `${i}.html`), `<html><title>p${i}</title></html>`);
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('robots.txt takes the first turn, the pages go back, and one wake-up message is delayed until they are due', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('wake'),
      startUrls: [`${site.url}/0.html`],
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 3000 },
    });
    await openSession(config);
    const deps = depsFromEnv();
    // Decided under this config, as the seed and extract stages send them.
    await sendTasks(
      deps,
      decidedUnder(
        config,
        [0, 1, 2].map((i) => urlTask(`${site.url}/${i}.html`)),
      ),
    );
    const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    assert.equal(summary.drained, true);
    // One request per 3 s: the host's robots.txt was its first (it takes a turn as a page does).
    assert.equal(summary.fetched, 0, 'no page: robots.txt had the turn');
    assert.deepEqual(
      site.requests.map((r) => r.path),
      ['/robots.txt'],
    );
    assert.equal(summary.requeued, 3);
    assert.ok(summary.wakeAt !== undefined && summary.wakeAt > Date.now(), 'the put-back URLs are due later');

    const wake = deps.queueUrls.wake;
    const now = await deps.queues.depth(wake);
    assert.equal(now.visible + now.delayed, 1, 'exactly one wake-up call for the whole round');
    assert.equal(now.visible, 0, 'not before the URLs are due');
    const frontier = await deps.queues.depth(deps.queueUrls.frontier.user);
    assert.equal(frontier.visible, 0);
    await sleep(Math.max(0, (summary.wakeAt ?? 0) - Date.now()) + 1500);
    const later = await deps.queues.depth(wake);
    assert.equal(later.visible, 1, 'the wake-up call arrives when the URLs are due');
    assert.equal((await deps.queues.depth(deps.queueUrls.frontier.user)).visible > 0, true);

    // The wake-up call names the source put back; the fetcher it starts (the real handler, given the
    // SQS event the wake queue's mapping would give it) polls that source only. A URL of another
    // host waiting in another source is left to the fetchers its own sender starts.
    const other = `${site.url.replace('127.0.0.1', 'localhost')}/0.html`;
    await sendTasks(deps, decidedUnder(config, [urlTask(other, { depth: 1, queue: 'follow' })]));
    const calls = await deps.queues.receive<WakeMessage>(wake, 10, 0, 30);
    assert.deepEqual(
      calls.map((c) => c.body?.sources),
      [['user']],
    );
    const receives: string[] = [];
    const unwatch = watchAwsCalls((c) => {
      if (c.operation === 'ReceiveMessage') receives.push(String(c.input.QueueUrl));
    });
    const result = (await fetchHandler
      .handler(sqsEvent(wake, calls), lambdaContext('fetch'))
      .finally(unwatch)) as {
      fetched: number;
      drained: boolean;
    };
    assert.deepEqual({ fetched: result.fetched, drained: result.drained }, { fetched: 1, drained: true });
    // Its one receive got a partial batch (the host's URLs put back): no second, empty receive.
    assert.deepEqual(receives, [deps.queueUrls.frontier.user]);
    assert.equal(
      (await deps.queues.depth(deps.queueUrls.frontier.follow)).visible,
      1,
      'the other source untouched',
    );
    // A fetcher started by the tick (no wake-up call) polls every source. (The other host's first
    // turn is its robots.txt's, so its URL goes back to its queue with a delay: polled, not fetched.)
    const all = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    const follow = await deps.queues.depth(deps.queueUrls.frontier.follow);
    assert.deepEqual([follow.visible, follow.delayed], [0, 1], 'the follow source was polled');
    assert.ok(all.requeued >= 1);
  });

  it('a fetcher with nothing put back leaves no wake-up call', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('nowake'),
      startUrls: [`${site.url}/0.html`],
      fetch: { allowPrivateNetworks: true },
    });
    await openSession(config);
    const deps = depsFromEnv();
    // Decided under this config, as the seed and extract stages send them.
    await sendTasks(
      deps,
      decidedUnder(
        config,
        [0, 1, 2].map((i) => urlTask(`${site.url}/${i}.html`)),
      ),
    );
    const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    assert.equal(summary.fetched, 3);
    assert.equal(summary.wakeAt, undefined);
    const d = await deps.queues.depth(deps.queueUrls.wake);
    assert.equal(d.visible + d.delayed, 0);
  });
});
