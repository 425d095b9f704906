/**
 * One worker fetches a host's robots.txt; the others wait for its answer in the hosts table. The
 * lease holder may be an invocation that crashed after taking the lease (its retry then waits on
 * its own dead lease), and a look at the table may fail while the waiter waits. A failed look is
 * "not yet", not the waiter's failure: the fault-injection test once failed a seed 20 times over
 * on exactly this. The real hosts table on the emulator; the lost reads are simulated (the one
 * mock here: moto cannot fail a GetItem on demand).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, refresh, urlStates } from '../../cli/session.ts';
import type { HostTable } from '../../shared/aws/host-table.ts';
import { parseConfig } from '../../shared/config.ts';
import { parseRobotsTxt, robotsUrlFor } from '../../shared/crawl/robots/robots.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { HostTurns } from '../../shared/stages/politeness/host-turns.ts';
import { createRobotsCache } from '../../shared/stages/politeness/robots-cache.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage } from '../helpers/crawl-env.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('robots.txt lease', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/robots.txt': {
          body: 'User-agent: trawl\nDisallow: /c.html\n\nUser-agent: *\nDisallow: /site/\nDisallow: /b.html\n',
        },
        '/': { body: linkPage('Home', ['/b.html', '/c.html']) },
        '/b.html': { body: linkPage('B') },
        '/c.html': { body: linkPage('C') },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('a worker waiting on another lease gets the stored answer though some of its looks fail', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('robots-lease'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    await openSession(config);
    const { hosts } = depsFromEnv();
    const robotsUrl = robotsUrlFor(`${site.url}/`);
    // A crashed worker took the lease and never stored anything.
    assert.equal(await hosts.lease(`robots#${robotsUrl}`, Date.now(), 20_000), true);

    let looks = 0;
    let failed = 0;
    const flaky: HostTable = {
      ...hosts,
      async getRobots(url, now) {
        looks++;
        // The first look (before the lease) answers; the next three are lost.
        if (looks >= 2 && looks <= 4) {
          failed++;
          throw new Error('simulated: GetItem response lost');
        }
        return hosts.getRobots(url, now);
      },
    };
    // The holder's answer arrives a second later (here: stored by the test, as a live holder would).
    const held = parseRobotsTxt('User-agent: *\nDisallow: /held/\n');
    const stored = JSON.stringify({ ...held, agent: 'trawl' });
    const storing = new Promise<void>((done) =>
      setTimeout(() => hosts.putRobots(robotsUrl, stored, Date.now() + 60_000).then(done), 1_000),
    );
    const robots = await createRobotsCache(flaky, config, Date.now, { proxy: null }).get(`${site.url}/page`);
    await storing;

    assert.equal(failed, 3, 'three looks failed while waiting');
    assert.deepEqual(robots, held, "the lease holder's answer, not a fetch of our own");
    assert.equal(site.requests.filter((r) => r.path === '/robots.txt').length, 0, 'robots.txt not fetched');
  });

  it('a host held past the turn wait (a long Crawl-delay, a back-off) is not asked for robots.txt: nothing sent, nothing cached', async () => {
    // Until 2026-11-28 the request went anyway after ROBOTS_TURN_WAIT_MS, inside the host's gap
    // (two robots.txt requests 9.95 s apart to a host asking for 20 s).
    const config = parseConfig({
      name: uniqueCrawlName('robots-held'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 1000 },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const turns = new HostTurns(deps, config, Date.now() + 60_000);
    const host = new URL(site.url).host;
    await turns.hold(host, Date.now(), Date.now() + 30_000);
    const before = site.requests.length;
    const cache = createRobotsCache(deps.hosts, config, Date.now, { proxy: null, turns, turnWaitMs: 300 });
    const robots = await cache.get(`${site.url}/page`);
    assert.ok((robots.notDueSeconds ?? 0) >= 25, `busy for the rest of the hold: ${robots.notDueSeconds}`);
    assert.equal(site.requests.length, before, 'nothing sent to the host');
    // Not cached: asked again, still not due, still nothing sent.
    assert.ok(((await cache.get(`${site.url}/page`)).notDueSeconds ?? 0) >= 25);
    assert.equal(site.requests.length, before);
  });

  it('a copy stored for another user agent is not used: fetch.userAgent changed reads robots.txt again, and its groups apply', async () => {
    const input = {
      name: uniqueCrawlName('robots-agent'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1h' },
    };
    const t0 = Date.now();
    const first = await openSession(parseConfig(input));
    await crawl(first);
    const stateOf = async (s: Awaited<ReturnType<typeof openSession>>) =>
      Object.fromEntries(
        (await collect(urlStates(s))).map((u) => [
          new URL(u.url as string).pathname,
          [u.state, u.note ?? null],
        ]),
      );
    assert.deepEqual(await stateOf(first), {
      '/': ['indexed', null],
      '/b.html': ['indexed', null],
      '/c.html': ['ignored', 'robots.txt: Disallow: /c.html'],
    });
    // Another agent, within robots.txt's 24 hours: the `*` group is its own, so b is out and c in.
    const mark = site.requests.length;
    const renamed = parseConfig({ ...input, fetch: { ...input.fetch, userAgent: 'mybot/2.0' } });
    const later = await openSession(renamed, { now: new Date(t0 + 2.5 * 3_600_000) });
    await refresh(later);
    const served = site.requests.slice(mark);
    assert.equal(served.filter((r) => r.path === '/robots.txt').length, 1, 'robots.txt read again, once');
    assert.ok(
      served.every((r) => r.path !== '/b.html'),
      'b.html not requested by mybot',
    );
    assert.deepEqual(await stateOf(later), {
      '/': ['indexed', null],
      '/b.html': ['ignored', 'robots.txt: Disallow: /b.html'],
      '/c.html': ['indexed', null],
    });
  });
});
