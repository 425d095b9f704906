/**
 * `trawl refresh --now <later>` runs the stages on a clock moved ahead; a plain run after it
 * must still crawl, on the crawl's clock. It used to go back to the real clock: it found what the
 * moved run had left in the hosts table (politeness slots, leases, robots.txt cache) dated days
 * ahead and fetched nothing, without end; and once those were cleared, its fetches were older
 * than the states recorded ahead, dropped as stale. The test's timeout only ends a hang; it
 * asserts no duration.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
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
    it(`a plain crawl after a refresh --now goes on from that time (waitBetweenRequestsMs ${wait})`, {
      timeout: 180_000,
    }, async () => {
      site.route('/', { body: page('Home', ['/a']) });
      const input: CrawlConfigInput = {
        name: uniqueCrawlName(`travel${wait}`),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: wait },
        refresh: { maxAge: '1d' },
      };
      const config = parseConfig(input);
      await crawl(await openSession(config));
      // Ten days on: everything is due, every page is fetched again on the moved clock.
      const movedAt = Date.now() + 10 * DAY;
      const moved = await openSession(config, { now: new Date(movedAt) });
      const mark = site.requests.length;
      await refresh(moved);
      assert.ok(
        site.requests.slice(mark).some((r) => r.path === '/a'),
        'the moved cycle refreshed /a',
      );
      // A slot booked far past any real booking (what a run before the crawl kept its clock left).
      const hosts = createHostTable({ client: moved.monitor.ddb, tableName: moved.resources.hostsTable });
      await hosts.acquireSlot(new URL(site.url).host, movedAt + 100 * DAY, 1000);

      // A plain crawl, the site changed: the home page's new title and its new page are indexed.
      site.route('/', { body: page('Home again', ['/a', '/b']) });
      site.route('/b', { body: page('B') });
      const plain = await openSession(config);
      await crawl(plain);
      const docs = await collect(documents(plain));
      assert.deepEqual(docs.map((d) => new URL(d.url as string).pathname).sort(), ['/', '/a', '/b']);
      assert.equal(docs.find((d) => new URL(d.url as string).pathname === '/')?.title, 'Home again');
      const states = await collect(urlStates(plain));
      const b = states.find((u) => new URL(u.url as string).pathname === '/b');
      assert.ok(Date.parse(b?.lastFetched as string) >= movedAt, 'fetched on the crawl clock, not behind it');
      // Due a day later on that clock, /b is refreshed by the next cycle.
      const next = await openSession(config, { now: new Date(movedAt + 2 * DAY) });
      const before = site.requests.length;
      await refresh(next);
      assert.ok(
        site.requests.slice(before).some((r) => r.path === '/b'),
        'the new page was refreshed',
      );
    });
});
