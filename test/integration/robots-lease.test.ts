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
import { openSession } from '../../cli/session.ts';
import type { HostTable } from '../../shared/aws/host-table.ts';
import { parseConfig } from '../../shared/config.ts';
import { parseRobotsTxt, robotsUrlFor } from '../../shared/crawl/robots/robots.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { createRobotsCache } from '../../shared/stages/politeness/robots-cache.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('robots.txt lease', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: { '/robots.txt': { body: 'User-agent: *\nDisallow: /site/\n' } },
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
    const stored = JSON.stringify(parseRobotsTxt('User-agent: *\nDisallow: /held/\n'));
    const storing = new Promise<void>((done) =>
      setTimeout(() => hosts.putRobots(robotsUrl, stored, Date.now() + 60_000).then(done), 1_000),
    );
    const robots = await createRobotsCache(flaky, config, Date.now).get(`${site.url}/page`);
    await storing;

    assert.equal(failed, 3, 'three looks failed while waiting');
    assert.deepEqual(robots, JSON.parse(stored), "the lease holder's answer, not a fetch of our own");
    assert.equal(site.requests.filter((r) => r.path === '/robots.txt').length, 0, 'robots.txt not fetched');
  });
});
