// Seed 001's source weights between the URLs waiting for one polite host. A task put back for its
// host's turn comes back on its own SQS delay, so the first one back used to take the turn,
// whatever its source: a redirect target (redir, weight 2000) waited 8-10 s while 6-8 lighter
// pages of its host went first (an audit's crawl, 4 hosts, 1 s wait). Now a task that loses the
// turn to a lighter source's says so on the host item, and the lighter ones leave it the host.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scheduledEvent } from '../../cli/runner.ts';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { HostTurns } from '../../shared/stages/politeness/host-turns.ts';
import { decidedUnder, sendTasks } from '../../shared/stages/send-tasks.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type StaticRoute, startWorkerSite, type WorkerSite } from '../helpers/site-worker.ts';
import { urlTask } from '../helpers/tasks.ts';

const WAIT_MS = 1000;
const PAGES = 12;
const REDIRECTS = 3;

function routes(host: number): Record<string, StaticRoute> {
  const out: Record<string, StaticRoute> = {};
  const links = Array.from({ length: PAGES }, (_, i) => `<a href="/p/${i}">p${i}</a>`);
  out['/'] = { body: `<title>home</title>${links.join(' ')}` };
  for (let i = 0; i < PAGES; i++)
    out[`/p/${i}`] = { body: `<title>page ${i}</title><p>page number ${i} of host ${host}</p>` };
  for (let i = 0; i < REDIRECTS; i++)
    out[`/t/${i}`] = { body: `<title>target ${i}</title><p>redirect target ${i} of host ${host}</p>` };
  return out;
}

describe('source weights under politeness: a heavier task waiting for a host goes first', () => {
  let emu: TestEmulator;
  let site: WorkerSite;
  const sites: WorkerSite[] = [];

  before(async () => {
    emu = await startTestEmulator();
    site = await startWorkerSite(routes(0));
    for (let h = 0; h < 4; h++) sites.push(await startWorkerSite(routes(h)));
  });
  after(async () => {
    for (const x of [site, ...sites]) await x?.close();
    await emu?.stop();
  });

  it('the host item: a redirect target that lost the turn to a follow page gets the next one', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('waiter'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: WAIT_MS },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const host = 'waiter.test';
    const invocation = () => new HostTurns(deps, config, Date.now() + 60_000);
    // Each call is another invocation (another fetcher), as the tasks of two chains are.
    const first = await invocation().turn(host, WAIT_MS, 'follow');
    assert.ok('sendBy' in first, 'the follow page books the free host');
    const lost = await invocation().turn(host, WAIT_MS, 'redir');
    assert.ok(
      'requeueSeconds' in lost,
      'the redirect target finds the host taken, a second off: back to its queue',
    );
    await new Promise((r) => setTimeout(r, WAIT_MS + 200));
    // The host is free again; the follow chain is back first, the redirect target not yet.
    const lighter = await invocation().turn(host, WAIT_MS, 'follow');
    assert.ok('requeueSeconds' in lighter, 'the follow page leaves the host to the waiting redirect target');
    const heavier = await invocation().turn(host, WAIT_MS, 'redir');
    assert.ok('sendBy' in heavier, 'the redirect target, back, takes the host');
    await new Promise((r) => setTimeout(r, WAIT_MS + 200));
    const after = await invocation().turn(host, WAIT_MS, 'follow');
    assert.ok('sendBy' in after, 'its booking cleared the wait: the follow page goes next');
  });

  it('a crawl of four polite hosts: a redirect target queued mid-crawl takes the next turns of its host', async (t) => {
    const config = parseConfig({
      name: uniqueCrawlName('redir-turns'),
      startUrls: sites.map((x) => `${x.url}/`),
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: WAIT_MS },
    });
    const session = await openSession(config);
    const crawling = crawl(session);
    // Each home page's links are an index_follow chain, put back a second after each page.
    let third: number | undefined;
    while (third === undefined) {
      await new Promise((r) => setTimeout(r, 20));
      third = (await sites[0]!.requests()).find((r) => r.path === '/p/2')?.at;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, (third ?? 0) + 300 - Date.now())));
    // A redirect target on each host, as the extract stage queues them (hand-sent: its batching
    // window would hold real ones up to 10 s, which is not what this test is about).
    const targets = sites.map((x) => urlTask(`${x.url}/t/0`, { depth: 1, queue: 'redir', follow: false }));
    await session.urls.claim(targets, 'priority-test', new Date().toISOString());
    const sentAt = Date.now();
    await sendTasks(depsFromEnv(), decidedUnder(config, targets));
    // A kick, as the extract stage gives: a fetcher that polls every source.
    await session.runner.invoke('fetch', scheduledEvent('Fetch Kick'));
    await crawling;

    const lighter: number[] = [];
    for (const [h, x] of sites.entries()) {
      const log = (await x.requests()).filter((r) => r.path !== '/robots.txt').sort((a, b) => a.at - b.at);
      const target = log.find((r) => r.path === '/t/0')?.at;
      assert.ok(target !== undefined, `host ${h}: /t/0 fetched`);
      t.diagnostic(`host ${h}: ${log.map((r) => `${r.path}@${r.at - sentAt}`).join(' ')}`);
      lighter.push(log.filter((r) => r.path.startsWith('/p/') && r.at > sentAt && r.at < target).length);
    }
    // The page whose turn was booked when the target came may go first, and one more while the
    // target's fetcher finds the host taken and says it waits; then the target.
    assert.ok(Math.max(...lighter) <= 2, `index_follow pages before each host's redirect target: ${lighter}`);
    for (const x of sites) {
      const states = new Map<string, Record<string, unknown>>();
      for await (const u of urlStates(session))
        if ((u.url as string).startsWith(x.url)) states.set(new URL(u.url as string).pathname, u);
      assert.equal(states.get('/t/0')?.state, 'indexed');
      for (let i = 0; i < PAGES; i++) assert.equal(states.get(`/p/${i}`)?.state, 'indexed', `/p/${i}`);
    }
  });
});
