/**
 * `trawl refresh --now <later>` runs the stages on a clock moved ahead; a plain run after it
 * must still crawl, on the crawl's clock. It used to go back to the real clock: it found what the
 * moved run had left in the hosts table (politeness slots, leases, robots.txt cache) dated days
 * ahead and fetched nothing, without end; and once those were cleared, its fetches were older
 * than the states recorded ahead, dropped as stale. The test's timeout only ends a hang; it
 * asserts no duration.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { refreshCommand } from '../../cli/commands/crawl.ts';
import { reportCommand } from '../../cli/commands/report.ts';
import { crawl, documents, openSession, planRefresh, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

const DAY = 86_400_000;

describe('a run on the real clock after one moved ahead (refresh --now)', () => {
  const env = useEmulatorAndSite({
    routes: {
      '/': { body: linkPage('Home', ['/a']) },
      '/a': { body: linkPage('A') },
      '/robots.txt': { body: 'User-agent: *\nCrawl-delay: 0.2\n' },
    },
  });

  for (const wait of [0, 300])
    it(`a plain crawl after a refresh --now goes on from that time (waitBetweenRequestsMs ${wait})`, {
      timeout: 180_000,
    }, async () => {
      env.site.route('/', { body: linkPage('Home', ['/a']) });
      const input: CrawlConfigInput = {
        name: uniqueCrawlName(`travel${wait}`),
        startUrls: [`${env.site.url}/`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: wait },
        refresh: { maxAge: '1d' },
      };
      const config = parseConfig(input);
      await crawl(await openSession(config));
      // A look ahead (refresh --dry-run --now) does not move the crawl's clock.
      await planRefresh(await openSession(config, { now: new Date(Date.now() + 50 * DAY), readOnly: true }));
      assert.ok(
        (await openSession(config, { readOnly: true })).now() < Date.now() + DAY,
        'the dry run moved it',
      );
      // Ten days on: everything is due, every page is fetched again on the moved clock.
      const movedAt = Date.now() + 10 * DAY;
      const moved = await openSession(config, { now: new Date(movedAt) });
      const mark = env.site.requests.length;
      await refresh(moved);
      assert.ok(
        env.site.requests.slice(mark).some((r) => r.path === '/a'),
        'the moved cycle refreshed /a',
      );
      // A slot booked far past any real booking (what a run before the crawl kept its clock left).
      await moved.hosts.acquireSlot(new URL(env.site.url).host, movedAt + 100 * DAY, 1000);

      // A plain crawl, the site changed: the home page's new title and its new page are indexed.
      env.site.route('/', { body: linkPage('Home again', ['/a', '/b']) });
      env.site.route('/b', { body: linkPage('B') });
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
      const before = env.site.requests.length;
      await refresh(next);
      assert.ok(
        env.site.requests.slice(before).some((r) => r.path === '/b'),
        'the new page was refreshed',
      );
    });

  it("trawl report measures the documents' ages on the crawl's clock, moved by refresh --now", async () => {
    // On the real clock the documents of a crawl moved ahead came out fresh, their ages negative.
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('report-clock'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '30d' },
    };
    const config = parseConfig(input);
    await crawl(await openSession(config));
    const dir = mkdtempSync(join(tmpdir(), 'trawl-report-clock-'));
    const file = join(dir, 'crawl.json');
    writeFileSync(file, JSON.stringify(input));
    // Ten days on (a third of maxAge): nothing is due, but the crawl's clock moves there (the
    // command, which keeps the run's record for the report).
    const moved = Date.now() + 10 * DAY;
    await refreshCommand({ config: file, now: new Date(moved).toISOString(), progress: false });
    await reportCommand({ config: file, output: join(dir, 'r.html') });
    const html = readFileSync(join(dir, 'r.html'), 'utf8');
    const json = /<script id="report-data" type="application\/json">(.*?)<\/script>/s.exec(html)?.[1] ?? '{}';
    const data = JSON.parse(json) as {
      totals: { documents: number };
      freshness: { buckets: { count: number }[] };
      runs: { kind: string; startedAt: string }[];
    };
    // The moved run is on the crawl's clock too: it showed at the real time, before its changes.
    const run = data.runs.find((r) => r.kind === 'refresh');
    assert.ok(run && Date.parse(run.startedAt) >= moved - 60_000, JSON.stringify(data.runs));
    assert.ok(data.totals.documents >= 2);
    assert.deepEqual(
      data.freshness.buckets.map((b) => b.count),
      [0, data.totals.documents, 0, 0, 0],
      'every document a third of maxAge old',
    );
  });

  it('a first refresh months after the crawl (or --now far ahead) finds every page due since', async () => {
    // It looked 90 days back only: the README's `refresh --now 2030-…` refreshed nothing, and its
    // cursor then passed the pages for good (helper-63).
    env.site.route('/months', { body: linkPage('Months', ['/months/a']) });
    env.site.route('/months/a', { body: linkPage('Months A') });
    const config = parseConfig({
      name: uniqueCrawlName('months'),
      startUrls: [`${env.site.url}/months`],
      fetch: { allowPrivateNetworks: true },
    });
    await crawl(await openSession(config));
    const later = new Date(Date.now() + 200 * DAY);
    const planned = await planRefresh(await openSession(config, { now: later, readOnly: true }));
    assert.deepEqual(planned.map((p) => [new URL(p.url).pathname, p.action]).sort(), [
      ['/months', 'refresh'],
      ['/months/a', 'refresh'],
    ]);
    const mark = env.site.requests.length;
    await refresh(await openSession(config, { now: later }));
    const asked = env.site.requests.slice(mark).map((r) => r.path);
    assert.ok(asked.includes('/months/a') && asked.includes('/months'), `refreshed: ${asked.join(' ')}`);
  });

  it('a crawl whose clock never moved is checked for leftovers once, not at every start', async () => {
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('no-travel'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
    };
    const config = parseConfig(input);
    const host = new URL(env.site.url).host;
    const first = await openSession(config);
    await crawl(first);
    // A slot 100 days ahead, where only a moved clock books (the check reads the whole hosts
    // table, a digest item per document: it no longer runs at each start on the real clock).
    await first.hosts.acquireSlot(host, Date.now() + 100 * DAY, 1000);
    const slot = async (s: Awaited<ReturnType<typeof openSession>>) => (await s.hosts.slotHold(host)).freeAt;
    const again = await openSession(config);
    assert.ok((await slot(again)) > Date.now() + 99 * DAY, 'a later start on the real clock does not check');
    // Once moved, every start checks (what a moved run books lies ahead of the real clock).
    const moved = await openSession(config, { now: new Date(Date.now() + 5 * DAY) });
    assert.ok((await slot(moved)) < Date.now() + 99 * DAY, 'the moved start cleared it');
    await moved.hosts.acquireSlot(host, Date.now() + 100 * DAY, 1000);
    assert.ok((await slot(await openSession(config))) < Date.now() + 99 * DAY, 'and so does the next one');
  });
});
