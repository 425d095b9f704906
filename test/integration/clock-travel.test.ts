/**
 * `trawl refresh --now <later>` runs the stages on a clock moved ahead; a run on the real clock
 * after it must still crawl. It used to find what the moved run had left in the hosts table (its
 * politeness slots and back-offs, its leases, its robots.txt cache) dated days ahead, and a
 * plain `trawl crawl` after the README's own `refresh --now` example fetched nothing, without end.
 * The test's timeout only ends a hang; it asserts no duration.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, refresh } from '../../cli/session.ts';
import { createHostTable } from '../../shared/aws/host-table.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const DAY = 86_400_000;
const page = (title: string, links: string[] = []) =>
  `<!doctype html><title>${title}</title><p>${title}</p>${links.map((l) => `<a href="${l}">${l}</a>`).join('')}`;

describe('a run on the real clock after one moved ahead (refresh --now)', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/': { body: page('Home', ['/a']) },
        '/a': { body: page('A') },
        '/robots.txt': { body: 'User-agent: *\nCrawl-delay: 0.2\n' },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  for (const wait of [0, 300])
    it(`crawls again (waitBetweenRequestsMs ${wait}): slots, leases and robots.txt dated ahead are cleared`, {
      timeout: 180_000,
    }, async () => {
      const input: CrawlConfigInput = {
        name: uniqueCrawlName(`travel${wait}`),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: wait },
        refresh: { maxAge: '1d' },
      };
      const config = parseConfig(input);
      await crawl(await openSession(config));
      // Ten days on: everything is due, every page is fetched again on the moved clock.
      const moved = await openSession(config, { now: new Date(Date.now() + 10 * DAY) });
      const mark = site.requests.length;
      await refresh(moved);
      assert.ok(
        site.requests.slice(mark).some((r) => r.path === '/a'),
        'the moved cycle refreshed /a',
      );
      const hosts = createHostTable({ client: moved.monitor.ddb, tableName: moved.resources.hostsTable });
      assert.ok(
        (await hosts.slotFreeAt(new URL(site.url).host)) > Date.now() + 9 * DAY,
        'the slot is dated ahead',
      );

      // Back on the real clock, the site has a new page: the crawl finds and fetches it.
      site.route('/', { body: page('Home', ['/a', '/b']) });
      site.route('/b', { body: page('B') });
      const real = await openSession(config);
      assert.ok(
        (await hosts.slotFreeAt(new URL(site.url).host)) < Date.now() + DAY,
        'the slot dated ahead is gone',
      );
      await crawl(real);
      const paths = (await collect(documents(real))).map((d) => new URL(d.url as string).pathname).sort();
      assert.deepEqual(paths, ['/', '/a', '/b']);
    });
});
