/**
 * One URL in two frontier messages of a fetch round is fetched once. A start URL the seed queued
 * again at each resumed run, while its first task waited out its host's Retry-After, reached the
 * host 4 times in 11 ms when the hold ended (helper-53). The real fetch stage on the emulator, a
 * real loopback site.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';
import { urlTask } from '../helpers/tasks.ts';

describe('copies of a URL in one fetch round', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    site.route('/robots.txt', { status: 404, body: '' });
    site.route('/', { body: '<html><head><title>Home</title></head><body><p>Home.</p></body></html>' });
    site.route('/b', { body: '<html><head><title>B</title></head><body><p>B.</p></body></html>' });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('are fetched once, and every message is done', async () => {
    await openSession(
      parseConfig({
        name: uniqueCrawlName('copies'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const deps = depsFromEnv();
    // Three messages: the start URL twice (as three resumed runs left it), and one with it and /b.
    await sendTasks(deps, [urlTask(`${site.url}/`)]);
    await sendTasks(deps, [urlTask(`${site.url}/`)]);
    await sendTasks(deps, [urlTask(`${site.url}/`), urlTask(`${site.url}/b`)]);
    const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    assert.equal(
      site.requests.filter((r) => r.path === '/').length,
      1,
      site.requests.map((r) => r.path).join(' '),
    );
    assert.equal(site.requests.filter((r) => r.path === '/b').length, 1);
    assert.equal(summary.fetched, 2);
    // Nothing left to fetch: a second invocation finds no message (all three were deleted).
    const again = await runFetchStage(deps, { deadline: Date.now() + 5_000 });
    assert.equal(again.fetched, 0);
    assert.equal(site.requests.filter((r) => r.path === '/').length, 1);
  });
});
