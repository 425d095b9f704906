// Many hosts at once (issue 13: concurrency that follows the work). In one fetch invocation a task
// waiting for its host's turn holds no place in fetch.concurrency, so due requests to other hosts go
// out meanwhile, and a round gathers hosts beyond one receive of ten messages; the seed reads the
// start sites' robots.txt side by side.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scheduledEvent } from '../../cli/runner.ts';
import { crawl, openSession } from '../../cli/session.ts';
import { createWorkQueues } from '../../shared/aws/work-queues.ts';
import { parseConfig } from '../../shared/config.ts';
import { decidedUnder } from '../../shared/stages/send-tasks.ts';
import type { UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type RequestLog, type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const task = (url: string): UrlTask => ({
  url,
  depth: 1,
  queue: 'user',
  index: true,
  follow: false,
  priority: 0,
  kind: 'page',
});

/** A host with `pages` pages answering after `answerMs`, counted in `counter` while in flight. */
async function host(
  pages: number,
  answerMs: number,
  counter: { now: number; max: number },
  robots = 'User-agent: *\nAllow: /\n',
): Promise<SiteServer> {
  const site = await startSiteServer({});
  site.route('/robots.txt', { headers: { 'content-type': 'text/plain' }, body: robots });
  for (let i = 0; i < pages; i++)
    site.route(`/p/${i}`, {
      handler: (_req, res) => {
        counter.now++;
        counter.max = Math.max(counter.max, counter.now);
        setTimeout(() => {
          counter.now--;
          res
            .writeHead(200, { 'content-type': 'text/html' })
            .end(`<title>p${i}</title><p>page ${i} on ${site.url}</p>`);
        }, answerMs);
      },
    });
  return site;
}

const pageRequests = (site: SiteServer): RequestLog[] =>
  site.requests.filter((r) => r.path.startsWith('/p/'));

describe('one fetch invocation over many polite hosts', () => {
  let emu: TestEmulator;
  const sites: SiteServer[] = [];
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    for (const s of sites) await s.close();
    await emu?.stop();
  });

  /** Claims the tasks, sends them to the `user` source as `perMessage` chunks, runs one fetch invocation. */
  async function fetchOnce(
    config: ReturnType<typeof parseConfig>,
    messages: UrlTask[][],
    raw: unknown[] = [],
  ): Promise<void> {
    const session = await openSession(config, { fetchConcurrency: 1 });
    await session.urls.claim(messages.flat(), 'rounds-test', new Date().toISOString());
    const queues = createWorkQueues({ client: session.monitor.sqs });
    // Decided under this config, as the seed and extract stages send them: tasks marked with
    // another version (or none) are decided again, and these hosts are not the start URL's.
    await queues.send(session.resources.queueUrls.frontier.user, [
      ...raw.map((body) => ({ body })),
      ...messages.map((tasks) => ({ body: { tasks: decidedUnder(config, tasks) } })),
    ]);
    await session.runner.invoke('fetch', scheduledEvent('Fetch Kick'));
  }

  it('hosts waiting out a Crawl-delay do not hold the request places: a fast host is fetched meanwhile', async () => {
    const inFlight = { now: 0, max: 0 };
    const polite = await Promise.all(
      Array.from({ length: 4 }, () => host(3, 20, inFlight, 'User-agent: *\nCrawl-delay: 2\n')),
    );
    const fast = await host(12, 20, inFlight);
    sites.push(...polite, fast);
    const config = parseConfig({
      name: uniqueCrawlName('rounds'),
      startUrls: [`${fast.url}/`],
      discovery: false,
      // One request place: before, the one worker slept through each polite host's turn with it.
      fetch: { allowPrivateNetworks: true, concurrency: 1 },
    });
    const tasks = [...polite, fast].flatMap((s, h) =>
      Array.from({ length: h === 4 ? 12 : 3 }, (_, i) => task(`${s.url}/p/${i}`)),
    );
    await fetchOnce(config, [tasks]);

    // One request at a time (fetch.concurrency), robots.txt included; the fast host's pages all went.
    assert.equal(inFlight.max, 1, 'requests in flight beyond fetch.concurrency');
    assert.equal(pageRequests(fast).length, 12);
    // The polite hosts' turns were waited for in the invocation (five hosts share the wait), not
    // all handed back: their second pages came 2 s after their first. (Once fewer than four hosts
    // have tasks left, the rest go back to the queue: a host's third page may not come here.)
    const secondPolite = Math.min(...polite.map((s) => pageRequests(s)[1]?.at ?? Infinity));
    assert.ok(Number.isFinite(secondPolite), 'no polite host had its second turn in the invocation');
    // The fast host's twelve pages went out while the polite hosts waited for their second turn.
    const lastFast = Math.max(...pageRequests(fast).map((r) => r.at));
    assert.ok(
      lastFast < secondPolite,
      `the fast host's last page came ${lastFast - secondPolite} ms after a polite host's second page`,
    );
  });

  it('a round gathers the hosts of more than one receive (ten messages of one host each)', async () => {
    const inFlight = { now: 0, max: 0 };
    const hosts = await Promise.all(Array.from({ length: 12 }, () => host(3, 20, inFlight)));
    sites.push(...hosts);
    const config = parseConfig({
      name: uniqueCrawlName('rounds'),
      startUrls: [`${hosts[0]?.url}/`],
      discovery: false,
      // A host's third page comes two waits after its first: long enough that a loaded machine
      // (12 hosts' first requests, load 8 once) does not put a first page behind it.
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 3000 },
    });
    // One message per host: a receive takes ten, so before, two hosts waited for the first ten's round.
    // A malformed message first: its tasks are skipped, not counted as hosts (that threw once).
    await fetchOnce(
      config,
      hosts.map((s) => Array.from({ length: 3 }, (_, i) => task(`${s.url}/p/${i}`))),
      [{ tasks: [null, { url: 42 }, 'x'] }],
    );

    // Every host's first page came in this invocation, before any host's third: before, the two
    // hosts of the second receive started once the first ten had all their pages. (Not "before
    // any second page": a host whose slot write came back after the slot's start skips that slot,
    // 3 s. Hosts whose last pages went back to the queue, fewer than four hosts being left, have
    // no third page here.)
    const firsts = hosts.map((s) => pageRequests(s)[0]?.at ?? Infinity);
    const thirds = hosts.map((s) => pageRequests(s)[2]?.at ?? Infinity);
    assert.ok(thirds.some(Number.isFinite), 'no host had its third turn in the invocation');
    assert.ok(
      Math.max(...firsts) < Math.min(...thirds),
      `a host's first page came ${Math.max(...firsts) - Math.min(...thirds)} ms after another's third`,
    );
  });

  it("the seed reads the start sites' robots.txt side by side, fetch.concurrency at a time", async () => {
    const robots = { now: 0, max: 0 };
    const starts = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const site = await startSiteServer({});
        site.route('/robots.txt', {
          handler: (_req, res) => {
            robots.now++;
            robots.max = Math.max(robots.max, robots.now);
            setTimeout(() => {
              robots.now--;
              res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
            }, 300);
          },
        });
        site.route('/', { headers: { 'content-type': 'text/html' }, body: `<title>${site.url}</title>` });
        return site;
      }),
    );
    sites.push(...starts);
    const config = parseConfig({
      name: uniqueCrawlName('seeds'),
      startUrls: starts.map((s) => `${s.url}/`),
      fetch: { allowPrivateNetworks: true, concurrency: 4 },
    });
    await crawl(await openSession(config));
    // Before, one after another: 64 sites 200 ms away kept the seed 18 s.
    assert.equal(robots.max, 4);
    for (const s of starts) assert.equal(s.requests.filter((r) => r.path === '/robots.txt').length, 1);
  });
});
