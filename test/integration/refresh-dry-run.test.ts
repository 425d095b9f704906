/**
 * `trawl refresh --dry-run` (planRefresh): lists what one maintenance cycle would refresh and
 * delete, with reasons, and changes nothing — URL states, documents, change feed, queues and the
 * refresh cursor are the same before and after, and the real cycle then does what was listed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { scheduledEvent } from '../../cli/runner.ts';
import { crawl, documents, openSession, planRefresh, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { fourPageRoutes, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

describe('refresh --dry-run', () => {
  const env = useEmulatorAndSite({ routes: fourPageRoutes() });

  it('lists refreshes and deletions with reasons and changes nothing', async () => {
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('dryrun'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    };
    await crawl(await openSession(parseConfig(input)));
    // Three days later, with a rule that now excludes /private/.
    const now = new Date(Date.now() + 3 * 86_400_000);
    const changed = parseConfig({ ...input, scope: { exclude: ['/private/'] } });
    const session = await openSession(changed, { now });
    const look = async () => ({
      urls: await collect(urlStates(session)),
      docs: await collect(documents(session)),
      changes: await readChanges(session),
      depths: await session.runner.queueDepths(),
      objects: await collect(session.store.list('')),
    });
    const before = await look();
    const plan = await planRefresh(session);
    assert.deepEqual(await look(), before, 'the dry run changed something');
    const byPath = Object.fromEntries(plan.map((p) => [new URL(p.url).pathname, p]));
    assert.deepEqual(Object.keys(byPath).sort(), ['/', '/a', '/b', '/private/c']);
    for (const p of ['/', '/a', '/b']) assert.equal(byPath[p]?.action, 'refresh', p);
    assert.equal(byPath['/private/c']?.action, 'delete');
    assert.match(byPath['/private/c']?.reason ?? '', /^out-of-scope: /);
    // The real cycle deletes what the dry run listed, with the same reason.
    await refresh(session);
    const deletes = (await readChanges(session)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deletes.map((d) => [d.url, d.reason]),
      [[byPath['/private/c']?.url, byPath['/private/c']?.reason]],
    );
  });

  it('a cycle run again with its clock a few seconds behind the cursor (a resumed `refresh --now T`) queues nothing again', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('resumed'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    });
    await crawl(await openSession(config));
    const now = Date.now() + 3 * 86_400_000;
    // The killed run's cycle: its clock had started at T some seconds before the stage ran.
    const killed = await openSession(config, { now: new Date(now + 5_000) });
    const first = (await killed.runner.invoke('refresh', scheduledEvent())) as { requeued: number };
    assert.equal(first.requeued, 4, 'every page due at T');
    const from = env.site.requests.length;
    // The same command again: its clock is at T as its cycle runs, behind the cursor the first left.
    // That cursor was ignored as "ahead of the clock", and the whole cycle was queued again.
    const resumed = await openSession(config, { now: new Date(now) });
    assert.deepEqual(await planRefresh(resumed), [], 'nothing due again');
    const second = (await resumed.runner.invoke('refresh', scheduledEvent())) as { requeued: number };
    assert.equal(second.requeued, 0, 'nothing queued again');
    await resumed.runner.drain();
    const perPath = new Map<string, number>();
    for (const r of env.site.requests.slice(from))
      if (r.path !== '/robots.txt') perPath.set(r.path, (perPath.get(r.path) ?? 0) + 1);
    assert.deepEqual(
      Object.fromEntries([...perPath].sort()),
      { '/': 1, '/a': 1, '/b': 1, '/private/c': 1 },
      "the first cycle's tasks fetched once each",
    );
  });
});
