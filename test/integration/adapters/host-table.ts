/**
 * The hosts table adapter (shared/aws/host-table.ts) called directly against the real emulator:
 * politeness slots, leases, the robots.txt cache and its expiry, values with compare-and-swap,
 * counters. Times are arguments, so expiry is tested with chosen clocks, never by sleeping.
 * Concurrent calls come from one process, as in the local runner, through the in-process key
 * lock (shared/aws/key-lock.ts), whose own behaviour closes the file. No mocks.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createHostTable, HELD_BY_SITE, type HostTable } from '../../../shared/aws/host-table.ts';
import { withKeyLock } from '../../../shared/aws/key-lock.ts';
import { type AdapterEnv, sharedAdapterEnv } from '../../helpers/adapter-env.ts';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');

describe('hosts table adapter', () => {
  let env: AdapterEnv;
  let hosts: HostTable;
  const raw = async (host: string) =>
    (await env.clients.ddb.send(new GetCommand({ TableName: env.res.hostsTable, Key: { host } }))).Item;
  before(async () => {
    env = await sharedAdapterEnv();
    hosts = createHostTable({ client: env.clients.ddb, tableName: env.res.hostsTable });
  });

  it('a slot is booked once; the next is free when it ends; back-off only pushes it later', async () => {
    assert.equal((await hosts.slotHold('s.test')).freeAt, 0, 'never taken');
    assert.deepEqual(await hosts.acquireSlot('s.test', NOW, 250), { ok: true });
    assert.deepEqual(await hosts.acquireSlot('s.test', NOW + 100, 250), { ok: false, waitMs: 150 });
    assert.deepEqual(await hosts.acquireSlot('s.test', NOW + 250, 250), { ok: true });
    assert.equal((await hosts.slotHold('s.test')).freeAt, NOW + 500);
    await hosts.backOff('s.test', NOW + 60_000);
    await hosts.backOff('s.test', NOW + 1_000);
    assert.equal(
      (await hosts.slotHold('s.test')).freeAt,
      NOW + 60_000,
      'an earlier back-off does not undo a later one',
    );
    assert.deepEqual(await hosts.acquireSlot('s.test', NOW + 1_000, 250), {
      ok: false,
      waitMs: 59_000,
      heldBy: HELD_BY_SITE,
    });
  });

  it('a host held for its silence says so to every booking and read until it is cleared', async () => {
    assert.deepEqual(await hosts.slotHold('q.test'), { freeAt: 0 });
    await hosts.backOff('q.test', NOW + 20_000, 2);
    const silent = { until: NOW + 20_000, requests: 2 };
    assert.deepEqual(await hosts.slotHold('q.test'), { freeAt: NOW + 20_000, silent });
    assert.deepEqual(await hosts.acquireSlot('q.test', NOW + 1_000, 250), {
      ok: false,
      waitMs: 19_000,
      heldBy: HELD_BY_SITE,
      silent,
    });
    // Past the hold the host is free; the booking hears of its silence (the next request is a probe).
    assert.deepEqual(await hosts.acquireSlot('q.test', NOW + 20_000, 250), { ok: true, silent });
    // A lower count said later (a worker that saw fewer) does not undo a higher one.
    await hosts.backOff('q.test', NOW + 30_000, 1);
    assert.deepEqual((await hosts.slotHold('q.test')).silent, silent);
    await hosts.clearSilence('q.test');
    assert.deepEqual(await hosts.slotHold('q.test'), { freeAt: NOW + 30_000 });
    assert.deepEqual(await hosts.acquireSlot('q.test', NOW + 30_000, 250), { ok: true });
    await hosts.clearSilence('q.test'); // nothing to clear: no error
  });

  it("a section's silence holds no slot, does not replace the whole host's, and is cleared by its own section only", async () => {
    await hosts.holdSection('t.test', '/search', NOW + 20_000, 2);
    const search = { until: NOW + 20_000, requests: 2, section: '/search' };
    assert.deepEqual(await hosts.slotHold('t.test'), { freeAt: 0, silent: search });
    // The host's slots are free: the rest of it is fetched as usual, and hears of the section.
    assert.deepEqual(await hosts.acquireSlot('t.test', NOW + 1_000, 250), { ok: true, silent: search });
    await hosts.clearSilence('t.test', null); // the whole host's silence: there is none
    await hosts.clearSilence('t.test', '/cgi-bin'); // another section's: none either
    assert.deepEqual((await hosts.slotHold('t.test')).silent, search);
    await hosts.clearSilence('t.test', '/search');
    assert.equal((await hosts.slotHold('t.test')).silent, undefined);

    // The whole host's silence replaces a section's, and a section's does not replace it.
    await hosts.holdSection('t.test', '/api', NOW + 20_000, 3);
    await hosts.backOff('t.test', NOW + 40_000, 2);
    const whole = { until: NOW + 40_000, requests: 2 };
    assert.deepEqual((await hosts.slotHold('t.test')).silent, whole);
    await hosts.holdSection('t.test', '/api', NOW + 60_000, 4);
    assert.deepEqual((await hosts.slotHold('t.test')).silent, whole);
    await hosts.clearSilence('t.test', '/api');
    assert.deepEqual((await hosts.slotHold('t.test')).silent, whole);
    await hosts.clearSilence('t.test', null);
    assert.equal((await hosts.slotHold('t.test')).silent, undefined);
  });

  it('slots booked ahead are given back from their unused end, unless a back-off changed them', async () => {
    assert.deepEqual(await hosts.acquireSlot('r.test', NOW, 5 * 300), { ok: true });
    assert.equal(await hosts.releaseSlot('r.test', NOW + 1_000, NOW + 600), false, 'not what was booked');
    assert.equal((await hosts.slotHold('r.test')).freeAt, NOW + 1_500);
    assert.equal(await hosts.releaseSlot('r.test', NOW + 1_500, NOW + 600), true);
    assert.equal((await hosts.slotHold('r.test')).freeAt, NOW + 600);
    assert.deepEqual(await hosts.acquireSlot('r.test', NOW + 600, 5 * 300), { ok: true });
    await hosts.backOff('r.test', NOW + 60_000);
    assert.equal(await hosts.releaseSlot('r.test', NOW + 2_100, NOW + 900), false, 'the back-off stands');
    assert.equal((await hosts.slotHold('r.test')).freeAt, NOW + 60_000);
  });

  it('a heavier waiter keeps the slots until its time is up; its own booking clears it', async () => {
    // A follow page (weight 10) books; a redirect target (2000) loses the turn and says so.
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW, 1000, 10), { ok: true });
    const lost = await hosts.acquireSlot('w.test', NOW + 200, 1000, 2000);
    assert.deepEqual(lost, { ok: false, waitMs: 800, heldBy: 10 });
    assert.equal(await hosts.waitFor('w.test', 2000, NOW + 3_000, NOW + 200), true);
    assert.equal(
      await hosts.waitFor('w.test', 10, NOW + 9_000, NOW + 200),
      false,
      'a lighter one does not replace it',
    );
    assert.deepEqual(await hosts.heavierWaiter('w.test', 10, NOW + 500), {
      weight: 2000,
      until: NOW + 3_000,
    });
    assert.equal(await hosts.heavierWaiter('w.test', 2000, NOW + 500), null, 'not heavier than itself');
    // The slot is free at NOW + 1000, but a lighter task must leave it to the waiter until NOW + 3000.
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 1_000, 1000, 10), {
      ok: false,
      waitMs: 2_000,
      heldBy: 10,
      waiter: { weight: 2000, until: NOW + 3_000 },
    });
    // robots.txt (no weight) is not held up by waiters.
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 1_000, 100), { ok: true });
    // The waiter books when back, and clears its record in the same write.
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 1_200, 1000, 2000), { ok: true });
    assert.equal((await raw('slot#w.test'))?.waitUntil, undefined);
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 2_200, 1000, 10), { ok: true });
    // A waiter whose time is up holds nothing.
    await hosts.waitFor('w.test', 2000, NOW + 3_500, NOW + 3_000);
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 3_500, 1000, 10), { ok: true });
    // A back-off is the site's hold: no task is lighter than it, so none waits it out as a waiter.
    await hosts.backOff('w.test', NOW + 60_000);
    assert.deepEqual(await hosts.acquireSlot('w.test', NOW + 5_000, 1000, 10_000), {
      ok: false,
      waitMs: 55_000,
      heldBy: HELD_BY_SITE,
    });
  });

  it('heldHosts: the hosts held past a time, soonest first, each with why (Retry-After, silence, slots)', async () => {
    // Ten years on: the other cases' hosts (around NOW) are all free by then.
    const T = NOW + 10 * 365 * 86_400_000;
    await hosts.backOff('held-site.test', T + 3_600_000);
    await hosts.backOff('held-silent.test', T + 120_000, 3);
    await hosts.holdSection('held-section.test', 'search', T + 300_000, 2);
    assert.deepEqual(await hosts.acquireSlot('held-polite.test', T, 60_000), { ok: true });
    await hosts.backOff('held-past.test', T - 1);
    const all = await hosts.heldHosts(T, 10);
    assert.deepEqual(all, {
      count: 4,
      hosts: [
        { host: 'held-polite.test', until: T + 60_000, reason: 'politeness' },
        { host: 'held-silent.test', until: T + 120_000, reason: 'not-answering' },
        { host: 'held-section.test', until: T + 300_000, reason: 'not-answering', section: 'search' },
        { host: 'held-site.test', until: T + 3_600_000, reason: 'backed-off' },
      ],
    });
    const first = await hosts.heldHosts(T + 100_000, 1);
    assert.deepEqual(first, {
      count: 3,
      hosts: [{ host: 'held-silent.test', until: T + 120_000, reason: 'not-answering' }],
    });
    await hosts.clearSilence('held-silent.test');
    // The silence forgotten (the host answered), its back-off still holds the slot.
    assert.equal((await hosts.heldHosts(T + 100_000, 1)).hosts[0]?.reason, 'backed-off');
  });

  it('concurrent takers of one slot or one lease: exactly one gets it', async () => {
    const slots = await Promise.all(Array.from({ length: 8 }, () => hosts.acquireSlot('c.test', NOW, 1000)));
    assert.equal(slots.filter((s) => s.ok).length, 1);
    const leases = await Promise.all(Array.from({ length: 8 }, () => hosts.lease('robots#c', NOW, 20_000)));
    assert.equal(leases.filter(Boolean).length, 1);
  });

  it('a lease is held until it expires; then another worker takes it', async () => {
    assert.equal(await hosts.lease('job', NOW, 20_000), true);
    assert.equal(await hosts.lease('job', NOW + 19_999, 20_000), false, 'still held');
    assert.equal(await hosts.lease('job', NOW + 20_000, 20_000), true, 'expired: taken again');
    assert.equal(await hosts.lease('job', NOW + 39_999, 5_000), false, 'the new holder has it');
    assert.equal(await hosts.lease('other', NOW, 20_000), true, 'leases are per key');
    // DynamoDB's TTL removes lease items an hour after they end (seconds, not ms).
    assert.equal((await raw('lease#job'))?.expiresAt, Math.floor((NOW + 40_000) / 1000) + 3600);
  });

  it('robots.txt answers are cached until they expire; another host has none', async () => {
    const robots = JSON.stringify({ groups: [{ disallow: ['/private/'] }] });
    assert.equal(await hosts.getRobots('https://r.test/robots.txt', NOW), null);
    await hosts.putRobots('https://r.test/robots.txt', robots, NOW + 86_400_000);
    assert.equal(await hosts.getRobots('https://r.test/robots.txt', NOW + 86_399_999), robots);
    assert.equal(await hosts.getRobots('https://r.test/robots.txt', NOW + 86_400_000), null, 'expired');
    assert.equal(await hosts.getRobots('https://other.test/robots.txt', NOW), null);
    await hosts.putRobots('https://r.test/robots.txt', '{"groups":[]}', NOW + 1000);
    assert.equal(await hosts.getRobots('https://r.test/robots.txt', NOW), '{"groups":[]}', 'a put replaces');
    assert.equal(
      (await raw('robots#https://r.test/robots.txt'))?.expiresAt,
      Math.floor((NOW + 1000) / 1000) + 86_400,
    );
  });

  it('values: absent is null; put replaces; consistent and eventually consistent reads agree here', async () => {
    assert.equal(await hosts.getValue('cursor'), null);
    await hosts.putValue('cursor', 'a');
    await hosts.putValue('cursor', 'b');
    assert.equal(await hosts.getValue('cursor'), 'b');
    assert.equal(await hosts.getValue('cursor', true), 'b');
    assert.equal(await hosts.getValue('b'), null, 'values do not collide with other keys');
  });

  it('swapValue sets only from the expected value (null: absent)', async () => {
    assert.equal(await hosts.swapValue('cas', 'x', 'y'), false, 'absent is not "x"');
    assert.equal(await hosts.swapValue('cas', null, 'v1'), true);
    assert.equal(await hosts.swapValue('cas', null, 'v2'), false, 'present is not absent');
    assert.equal(await hosts.swapValue('cas', 'v0', 'v2'), false, 'stale');
    assert.equal(await hosts.swapValue('cas', 'v1', 'v2'), true);
    assert.equal(await hosts.getValue('cas', true), 'v2');
  });

  it('concurrent swaps from one value: exactly one wins and its value stays', async () => {
    await hosts.putValue('race', 'start');
    const won = await Promise.all(
      Array.from({ length: 8 }, (_, i) => hosts.swapValue('race', 'start', `w${i}`)),
    );
    assert.equal(won.filter(Boolean).length, 1);
    assert.equal(await hosts.getValue('race', true), `w${won.indexOf(true)}`);
  });

  it('addCounts returns each counter before the add; concurrent adds get disjoint ranges', async () => {
    const first = await hosts.addCounts(
      new Map([
        ['count#a', 5],
        ['count#b', 1],
      ]),
    );
    assert.deepEqual(
      first,
      new Map([
        ['count#a', 0],
        ['count#b', 0],
      ]),
    );
    const again = await hosts.addCounts(new Map([['count#a', 2]]));
    assert.deepEqual(again, new Map([['count#a', 5]]));
    const befores = await Promise.all(
      Array.from({ length: 6 }, () => hosts.addCounts(new Map([['count#c', 3]]))),
    );
    const starts = befores.map((m) => m.get('count#c')).sort((x = 0, y = 0) => x - y);
    assert.deepEqual(starts, [0, 3, 6, 9, 12, 15]);
    assert.equal((await raw('count#c'))?.urlCount, 18);
  });

  it('addToItem: concurrent adds to one item (the usage record) all count', async () => {
    // The local runner's invocations record their usage side by side; the emulator lost an ADD
    // before these were locked (a CI run's usage record missed one UpdateItem). 8 adds on each of
    // 60 items, each of 12 counters, as an invocation's record holds.
    const counters = (i: number) =>
      Object.fromEntries(Array.from({ length: 12 }, (_, c) => [`call.c${c}`, 1 + ((i + c) % 3)]));
    const keys = Array.from({ length: 60 }, (_, k) => `usage#race${k}`);
    await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 8 }, (_, i) => hosts.addToItem(key, counters(i), 9e9, { minutes: [i % 3] })),
      ),
    );
    const want = Array.from({ length: 12 }, (_, c) =>
      Array.from({ length: 8 }, (_, i) => 1 + ((i + c) % 3)).reduce((a, b) => a + b),
    );
    for (const key of keys) {
      const item = await raw(key);
      assert.deepEqual(
        want.map((_, c) => item?.[`call.c${c}`]),
        want,
        key,
      );
    }
  });
});

describe('key lock (the emulator workaround on every conditional write above)', () => {
  it("one key's calls take turns in call order; other keys do not wait; a failure frees the key", async () => {
    const order: string[] = [];
    let releaseFirst!: () => void;
    const held = new Promise<void>((r) => {
      releaseFirst = r;
    });
    const first = withKeyLock('k', async () => {
      order.push('k1 start');
      await held;
      order.push('k1 end');
      throw new Error('k1 failed');
    });
    const second = withKeyLock('k', async () => order.push('k2'));
    await withKeyLock('other', async () => order.push('other'));
    assert.deepEqual(order, ['k1 start', 'other'], 'another key ran while k was held; k2 waits');
    releaseFirst();
    await assert.rejects(first, /k1 failed/);
    await second;
    assert.deepEqual(order, ['k1 start', 'other', 'k1 end', 'k2']);
  });
});
