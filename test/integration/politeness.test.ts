// Politeness across workers (issue #4 part 2): four fetch invocations run at once over the same
// hosts; the per-host slot in DynamoDB keeps every host's requests at least the delay apart
// (waitBetweenRequestsMs, or robots.txt Crawl-delay when larger).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scheduledEvent } from '../../cli/runner.ts';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { createWorkQueues } from '../../shared/aws/work-queues.ts';
import { parseConfig } from '../../shared/config.ts';
import type { UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type RequestLog, type SiteServer, startSiteServer } from '../helpers/site-server.ts';
import { type StaticRoute, startWorkerSite, type WorkerSite } from '../helpers/site-worker.ts';

const WAIT_MS = 250;
const CRAWL_DELAY_S = 0.5;
const PAGES_PER_HOST = 10;
const WORKERS = 4;

/**
 * Smallest gap between two requests, robots.txt's included: it takes the host's turn like a page
 * (the first page came 206-458 ms after it, whatever the delay, before it did).
 */
function minGap(log: RequestLog[]): number {
  const times = log.map((r) => r.at).sort((a, b) => a - b);
  let min = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) min = Math.min(min, times[i]! - times[i - 1]!);
  return min;
}

/** 503 with Retry-After once, then fine; 429 with Retry-After always; three calm pages on the same host. */
function busyRoutes(site: SiteServer): void {
  let busyOnce = 0;
  site.route('/busy-once', {
    handler: (_req, res) => {
      if (busyOnce++ === 0) res.writeHead(503, { 'retry-after': '2' }).end();
      else res.writeHead(200, { 'content-type': 'text/html' }).end('<title>back</title><p>back again</p>');
    },
  });
  for (const p of ['/calm-1', '/calm-2', '/calm-3'])
    site.route(p, { body: `<title>${p}</title><p>calm</p>` });
  site.route('/always-429', { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' });
}

// Each host's pages say which host they are on: the same text on two hosts would be one document
// (index.foldDuplicates), and every page here must be indexed.
function pageRoutes(host: number): Record<string, StaticRoute> {
  const routes: Record<string, StaticRoute> = {};
  for (let i = 0; i < PAGES_PER_HOST; i++)
    routes[`/p/${i}`] = { body: `<title>page ${i}</title><p>polite ${i} on host ${host}</p>` };
  return routes;
}

describe('politeness per host across concurrent fetch workers', () => {
  let emu: TestEmulator;
  let busy: SiteServer;
  /** The polite hosts: served from worker threads, so a request's time is when it came (site-worker.ts). */
  const sites: WorkerSite[] = [];
  const others: SiteServer[] = [];

  before(async () => {
    emu = await startTestEmulator();
    for (let i = 0; i < 4; i++) {
      const routes = pageRoutes(i);
      // The third host's robots.txt is a redirect: both of its requests take the host's turn.
      if (i === 2) {
        routes['/robots.txt'] = { status: 301, headers: { location: '/robots-real.txt' }, body: '' };
        routes['/robots-real.txt'] = {
          headers: { 'content-type': 'text/plain' },
          body: 'User-agent: *\nAllow: /\n',
        };
      }
      // The last host asks for more than waitBetweenRequestsMs: Crawl-delay wins (the larger delay).
      if (i === 3)
        routes['/robots.txt'] = {
          headers: { 'content-type': 'text/plain' },
          body: `User-agent: trawl\nCrawl-delay: ${CRAWL_DELAY_S}\nAllow: /\n`,
        };
      sites.push(await startWorkerSite(routes));
    }
    busy = await startSiteServer({});
    others.push(busy);
    busyRoutes(busy);
  });
  after(async () => {
    for (const s of [...sites, ...others]) await s?.close();
    await emu?.stop();
  });

  it(`${WORKERS} workers at once: min gap per host ≥ the configured delay`, async (t) => {
    const config = parseConfig({
      name: uniqueCrawlName('polite'),
      startUrls: sites.map((s) => `${s.url}/`),
      discovery: false,
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: WAIT_MS },
    });
    const session = await openSession(config, { fetchConcurrency: WORKERS });
    // One URL per message, host after host, so each worker's receive of ten mixes every host.
    const tasks: UrlTask[] = [];
    for (let i = 0; i < PAGES_PER_HOST; i++) {
      for (const s of sites)
        tasks.push({
          url: `${s.url}/p/${i}`,
          depth: 0,
          queue: 'user',
          index: true,
          follow: false,
          priority: 0,
          kind: 'page',
        });
    }
    await session.urls.claim(tasks, 'politeness-test', new Date().toISOString());
    const queues = createWorkQueues({ client: session.monitor.sqs });
    await queues.send(
      session.resources.queueUrls.frontier.user,
      tasks.map((task) => ({ body: { tasks: [task] } })),
    );

    const spans = await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        const start = Date.now();
        const res = (await session.runner.invoke('fetch', scheduledEvent('Fetch Kick'))) as {
          fetched: number;
        };
        return { start, end: Date.now(), fetched: res.fetched };
      }),
    );
    await crawl(session); // seeds the start URLs and drains what the workers left (extract, index, requeues)

    // The four invocations overlapped in time and each fetched part of the frontier.
    assert.ok(
      Math.max(...spans.map((s) => s.start)) < Math.min(...spans.map((s) => s.end)),
      'workers overlapped',
    );
    // A worker that finds a host not due hands its tasks back with a delay instead of waiting (issue
    // 13), so which worker fetches what is up to the slot races; the runner's drain does the rest.
    const byWorkers = spans.reduce((n, s) => n + s.fetched, 0);
    assert.ok(byWorkers >= 1, `the workers fetched ${spans.map((x) => x.fetched)}`);

    const delays = [WAIT_MS, WAIT_MS, WAIT_MS, CRAWL_DELAY_S * 1000];
    for (const [i, site] of sites.entries()) {
      const requests = await site.requests();
      const gap = minGap(requests);
      t.diagnostic(`host ${i}: ${requests.length} requests, min gap ${gap} ms (delay ${delays[i]} ms)`);
      const t0 = requests[0]?.at ?? 0;
      const timeline = requests.map((r) => `${r.at - t0}:${r.path}`).join(' ');
      assert.ok(gap >= delays[i]!, `host ${i}: min gap ${gap} ms < ${delays[i]} ms (${timeline})`);
      const pages = requests.filter((r) => r.path.startsWith('/p/'));
      assert.equal(new Set(pages.map((r) => r.path)).size, PAGES_PER_HOST, 'every page fetched');
      // One worker fetches robots.txt under a lease in the hosts table; the others read its answer.
      const robots = requests.filter((r) => r.path === '/robots.txt').length;
      assert.equal(robots, 1, `host ${i}: robots.txt fetched ${robots} times by ${WORKERS} workers`);
    }
    const states = [];
    for await (const u of urlStates(session)) states.push(u);
    const pageStates = states.filter((u) => (u.url as string).includes('/p/'));
    assert.equal(pageStates.length, sites.length * PAGES_PER_HOST);
    assert.ok(
      pageStates.every((u) => u.state === 'indexed'),
      'delayed URLs are requeued, never dropped',
    );
  });

  it('503 and 429 with Retry-After back the whole host off; 429 ends as a temporary error after retries', async () => {
    const paths = ['/busy-once', '/calm-1', '/calm-2', '/calm-3', '/always-429'];
    const config = parseConfig({
      name: uniqueCrawlName('backoff'),
      startUrls: paths.map((p) => `${busy.url}${p}`),
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxTemporaryErrors: 1 },
    });
    const session = await openSession(config);
    await crawl(session);
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(session)) states.set(new URL(u.url as string).pathname, u);

    // No waitBetweenRequestsMs here: only the back-off holds the host after the 503.
    const first503 = busy.requests.find((r) => r.status === 503);
    assert.ok(first503, 'the 503 was served');
    const later = busy.requests.filter((r) => r.at > first503.at && r.path !== '/robots.txt');
    assert.ok(later.length >= 4);
    const earliest = Math.min(...later.map((r) => r.at));
    assert.ok(earliest - first503.at >= 2000, `next request ${earliest - first503.at} ms after the 503`);
    for (const p of ['/busy-once', '/calm-1', '/calm-2', '/calm-3'])
      assert.equal(states.get(p)?.state, 'indexed', p);
    const rate = states.get('/always-429');
    assert.deepEqual(
      [rate?.state, rate?.errorKind, rate?.httpStatus, rate?.errorCode, rate?.temporaryErrors],
      ['error', 'temporary', 429, 'http-429', 1],
    );
    const tries = busy.requests.filter((r) => r.path === '/always-429').map((r) => r.at);
    assert.equal(tries.length, 2, 'first try + maxTemporaryErrors retries');
    assert.ok(tries[1]! - tries[0]! >= 1000, 'Retry-After: 1 honoured');
  });

  it('a Crawl-delay of a day and a Retry-After of a day are capped at limits.crawlDelayMs / retryAfterMs', async () => {
    const site = await startSiteServer({});
    others.push(site); // closed with the others
    site.route('/robots.txt', {
      headers: { 'content-type': 'text/plain' },
      body: 'User-agent: *\nCrawl-delay: 86400\n',
    });
    for (const p of ['/a', '/b']) site.route(p, { body: `<title>${p}</title><p>slow site</p>` });
    site.route('/day-503', { status: 503, headers: { 'retry-after': '86400' }, body: 'come back tomorrow' });
    const config = parseConfig({
      name: uniqueCrawlName('ceilings'),
      startUrls: ['/a', '/b', '/day-503'].map((p) => `${site.url}${p}`),
      discovery: false,
      fetch: { allowPrivateNetworks: true },
      refresh: { maxTemporaryErrors: 1 },
      limits: { crawlDelayMs: 1000, retryAfterMs: 1000 },
    });
    const session = await openSession(config);
    await crawl(session); // returns: nobody waits a day
    const states = new Map<string, Record<string, unknown>>();
    for await (const u of urlStates(session)) states.set(new URL(u.url as string).pathname, u);
    assert.equal(states.get('/a')?.state, 'indexed');
    assert.equal(states.get('/b')?.state, 'indexed');
    // Never silent: each page fetched under the cap says so (and the summary counts limit-crawl-delay).
    for (const p of ['/a', '/b'])
      assert.match(
        String(states.get(p)?.note),
        /Crawl-delay 86400 s capped at limits\.crawlDelayMs \(1000 ms\)/,
      );
    assert.ok(
      minGap(site.requests) >= 1000,
      `requests spaced by the capped Crawl-delay: ${minGap(site.requests)} ms`,
    );
    const day = states.get('/day-503');
    assert.deepEqual([day?.state, day?.errorKind, day?.temporaryErrors], ['error', 'temporary', 1]);
    assert.match(String(day?.note), /Retry-After 86400 s capped at limits\.retryAfterMs, 1000 ms/);
  });
});
