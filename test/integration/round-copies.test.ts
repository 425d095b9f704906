/**
 * One URL in two frontier messages of a fetch round is fetched once. A start URL the seed queued
 * again at each resumed run, while its first task waited out its host's Retry-After, reached the
 * host 4 times in 11 ms when the hold ended (helper-53). The real fetch stage on the emulator, a
 * real loopback site.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv, type StageDeps } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { runSeedStage } from '../../shared/stages/seed-stage.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import { useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';
import { urlTask } from '../helpers/tasks.ts';

describe('copies of a URL in one fetch round', () => {
  const env = useEmulatorAndSite({
    routes: {
      '/robots.txt': { status: 404, body: '' },
      '/': { body: '<html><head><title>Home</title></head><body><p>Home.</p></body></html>' },
      '/b': { body: '<html><head><title>B</title></head><body><p>B.</p></body></html>' },
    },
  });

  it('are fetched once, and every message is done', async () => {
    await openSession(
      parseConfig({
        name: uniqueCrawlName('copies'),
        startUrls: [`${env.site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const deps = depsFromEnv();
    // Three messages: the start URL twice (as three resumed runs left it), and one with it and /b.
    await sendTasks(deps, [urlTask(`${env.site.url}/`)]);
    await sendTasks(deps, [urlTask(`${env.site.url}/`)]);
    await sendTasks(deps, [urlTask(`${env.site.url}/`), urlTask(`${env.site.url}/b`)]);
    const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    assert.equal(
      env.site.requests.filter((r) => r.path === '/').length,
      1,
      env.site.requests.map((r) => r.path).join(' '),
    );
    assert.equal(env.site.requests.filter((r) => r.path === '/b').length, 1);
    assert.equal(summary.fetched, 2);
    // Nothing left to fetch: a second invocation finds no message (all three were deleted).
    const again = await runFetchStage(deps, { deadline: Date.now() + 5_000 });
    assert.equal(again.fetched, 0);
    assert.equal(env.site.requests.filter((r) => r.path === '/').length, 1);
  });

  // A resumed `trawl crawl` seeds again. A start URL still pending then has its task in the
  // frontier: queued again, the copy reached the site a second time once the two were in
  // different rounds (behind a long frontier). Here the second seed's send is delayed 6 s (SQS
  // DelaySeconds) to put a copy in a later round, as a long frontier would.
  it('a start URL still pending when the seed runs again is not queued again', async () => {
    const path = '/resumed';
    const { deps, session, url } = await startCrawl(path);
    await runSeedStage(deps);
    await runSeedStage(withDelay(deps, 6));
    const queued = await deps.queues.depth(deps.queueUrls.frontier.user);
    assert.equal(queued.visible + queued.delayed, 1, JSON.stringify(queued));
    await session.runner.drain();
    assert.equal(env.site.requests.filter((r) => r.path === path).length, 1);
    assert.equal((await deps.urls.getMany([url])).get(url)?.state, 'indexed');
  });

  it('a seed that failed after its claims queues them when it runs again, and a day later once more', async () => {
    const path = '/seed-failed';
    const { deps, session, url } = await startCrawl(path);
    // The send fails (a fault SQS cannot be made to give here: a mock of that one call).
    const failing = Object.create(deps.queues) as StageDeps['queues'];
    failing.send = async () => {
      throw new Error('SQS unavailable (injected)');
    };
    await assert.rejects(runSeedStage({ ...deps, queues: failing }), /injected/);
    assert.equal((await deps.urls.getMany([url])).get(url)?.state, 'pending');
    await runSeedStage(deps);
    await runSeedStage(deps);
    const queued = await deps.queues.depth(deps.queueUrls.frontier.user);
    assert.equal(queued.visible + queued.delayed, 1, JSON.stringify(queued));
    // A day after it was queued, a seed queues it again (in case that task was lost).
    await runSeedStage({ ...deps, now: () => Date.now() + 25 * 3600_000 });
    const again = await deps.queues.depth(deps.queueUrls.frontier.user);
    assert.equal(again.visible + again.delayed, 2, JSON.stringify(again));
    await session.runner.drain();
    assert.equal((await deps.urls.getMany([url])).get(url)?.state, 'indexed');
  });

  async function startCrawl(path: string) {
    env.site.route(path, {
      body: `<html><head><title>S</title></head><body><p>Start ${path}.</p></body></html>`,
    });
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('seed-copies'),
        startUrls: [`${env.site.url}${path}`],
        discovery: false,
        fetch: { allowPrivateNetworks: true },
      }),
    );
    return { deps: depsFromEnv(), session, url: `${env.site.url}${path}` };
  }
});

/** The stage's deps with every message it sends delayed by `seconds`. */
function withDelay(deps: StageDeps, seconds: number): StageDeps {
  const queues = Object.create(deps.queues) as StageDeps['queues'];
  queues.send = (url, messages) =>
    deps.queues.send(
      url,
      messages.map((m) => ({ ...m, delaySeconds: seconds })),
    );
  return { ...deps, queues };
}
