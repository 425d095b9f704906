/**
 * A fetch invocation that fails (an AWS failure in one task) leaves no request running behind it:
 * no task starts after the failure, and the invocation rejects only once the requests under way
 * are done. Before, the round's Promise.all rejected at the first failure while the other tasks
 * went on fetching (and writing) after the invocation had ended: a Lambda sandbox resumes such
 * work, frozen, in a later invocation. Nothing is lost: the next invocation fetches every page.
 * Real fetch stage, a real slow site on loopback (8 virtual hosts through fetch.resolve), the real
 * emulator. The failure is injected (a DynamoDB outage for one host's read cannot be caused on
 * cue): the hosts table's back-off read throws for one host.
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

const HOSTS = Array.from({ length: 8 }, (_, i) => `h${i}.round.test`);
const FAILING = 'h2.round.test';
const PAGES = 3;
const RESPONSE_MS = 300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a fetch round that fails', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer();
    site.route('/robots.txt', { status: 404, body: '' });
    for (let i = 0; i < PAGES; i++)
      site.route(`/p${i}`, {
        handler: (req, res) => {
          setTimeout(() => {
            res.writeHead(200, { 'content-type': 'text/html' });
            res.end(
              `<html><title>${req.headers.host} ${i}</title><p>page ${i} of ${req.headers.host}</p></html>`,
            );
          }, RESPONSE_MS);
        },
      });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('starts no task after the failure, rejects once the requests under way are done, and loses nothing', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('round-failure'),
      startUrls: HOSTS.map((h) => `http://${h}:${site.port}/p0`),
      fetch: {
        allowPrivateNetworks: true,
        concurrency: 2,
        resolve: Object.fromEntries(HOSTS.map((h) => [h, '127.0.0.1'])),
      },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const urls = HOSTS.flatMap((h) =>
      Array.from({ length: PAGES }, (_, i) => `http://${h}:${site.port}/p${i}`),
    );
    await sendTasks(
      deps,
      urls.map((url) => urlTask(url)),
    );
    const pages = () => site.requests.filter((r) => r.path.startsWith('/p'));

    const read = deps.hosts.slotHold;
    deps.hosts.slotHold = async (host) => {
      if (host.startsWith(FAILING)) throw new Error('injected: the hosts table is unavailable');
      return read(host);
    };
    await assert.rejects(runFetchStage(deps, { deadline: Date.now() + 60_000 }), /injected/);
    const atFailure = pages().length;
    await sleep(3 * RESPONSE_MS);
    assert.equal(
      pages().length,
      atFailure,
      `requests after the invocation failed: ${pages()
        .slice(atFailure)
        .map((r) => `${r.headers.host}${r.path}`)
        .join(' ')}`,
    );
    // At most the places of fetch.concurrency were fetching when the task failed: the rest never started.
    assert.ok(atFailure < urls.length, `${atFailure} of ${urls.length} fetched before the failure`);

    // The next invocation, the table back: every page is fetched; none was lost with the failure.
    deps.hosts.slotHold = read;
    const summary = await runFetchStage(deps, { deadline: Date.now() + 60_000 });
    assert.ok(summary.drained);
    const fetched = new Set(pages().map((r) => `http://${r.headers.host}${r.path}`));
    assert.deepEqual(
      urls.filter((u) => !fetched.has(u)),
      [],
      'every page fetched',
    );
  });
});
