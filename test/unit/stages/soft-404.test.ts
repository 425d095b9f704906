/**
 * The soft-404 probe's answer and its age (shared/stages/soft-404.ts), against a scripted hosts
 * table and clock: trusted in memory and in the table for 24 h of the stage's clock, then probed
 * again by the worker that takes the host's probe lease, the others keeping the old answer meanwhile.
 * test/integration/soft-404-expiry.test.ts drives it through the real pipeline on the emulator.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FetchOutcome } from '../../../shared/net/fetcher.ts';
import type { FetchContext } from '../../../shared/stages/fetch-context.ts';
import { hostSoft404, SOFT404_TTL_MS } from '../../../shared/stages/soft-404.ts';

const ORIGIN = 'https://www.example.com';
const NOT_FOUND = { kind: 'error', errorKind: 'permanent', code: 'http-404', message: '', status: 404 };
let crawls = 0;

/** A context on its own crawl name (the module's memory is per process), its table and clock scripted. */
function setup(stored: string | null, leaseFree = true) {
  const name = `soft404-unit-${++crawls}`;
  const key = `soft404#${name}#${ORIGIN}`;
  const table = new Map<string, string>(stored === null ? [] : [[key, stored]]);
  const calls = { reads: 0, leases: 0, probes: 0 };
  const clock = { now: 1_800_000_000_000 };
  const hosts = {
    async getValue(k: string) {
      calls.reads++;
      return table.get(k) ?? null;
    },
    async putValue(k: string, v: string) {
      table.set(k, v);
    },
    async lease() {
      calls.leases++;
      return leaseFree;
    },
  };
  const ctx = {
    config: { name, extract: {} },
    deps: { hosts, now: () => clock.now, random: () => 0.5 },
  } as unknown as FetchContext;
  const fetch = async (_url: string): Promise<FetchOutcome> => {
    calls.probes++;
    return NOT_FOUND as unknown as FetchOutcome;
  };
  const ask = () => hostSoft404(ctx, `${ORIGIN}/page`, fetch);
  return { key, table, calls, clock, ask };
}

describe('the soft-404 probe answer expires', () => {
  it('a fresh stored answer is used without a probe, read once while it is fresh', async () => {
    const s = setup(`${1_800_000_000_000 - 3_600_000} fp-old`);
    assert.equal(await s.ask(), 'fp-old');
    s.clock.now += 20 * 3_600_000;
    assert.equal(await s.ask(), 'fp-old');
    assert.deepEqual(s.calls, { reads: 1, leases: 0, probes: 0 }, 'from memory the second time');
  });

  it('an answer 24 h old is probed again, once, and stored with its time', async () => {
    const s = setup(null);
    assert.equal(await s.ask(), null);
    assert.equal(s.table.get(s.key), `${s.clock.now} none`);
    s.clock.now += SOFT404_TTL_MS - 1;
    await s.ask();
    assert.equal(s.calls.probes, 1);
    s.clock.now += 2;
    await Promise.all([s.ask(), s.ask(), s.ask()]);
    assert.deepEqual(s.calls, { reads: 2, leases: 2, probes: 2 }, 'one read, lease and probe a day');
    assert.equal(s.table.get(s.key), `${s.clock.now} none`);
  });

  it('an answer stored before answers carried their time is probed again', async () => {
    const s = setup('fp-legacy');
    assert.equal(await s.ask(), null);
    assert.equal(s.calls.probes, 1);
  });

  it('a probe dated ahead of the clock (a run on a clock moved ahead) is not trusted', async () => {
    const s = setup(`${1_800_000_000_000 + 5 * 86_400_000} fp-ahead`);
    assert.equal(await s.ask(), null);
    assert.equal(s.calls.probes, 1);
  });

  it("another worker's lease: the old answer holds, no probe, read again after the lease", async () => {
    const s = setup(`${1_800_000_000_000 - SOFT404_TTL_MS - 1} fp-old`, false);
    assert.equal(await s.ask(), 'fp-old');
    assert.equal(await s.ask(), 'fp-old');
    assert.deepEqual(s.calls, { reads: 1, leases: 1, probes: 0 });
    // The other worker stored its probe; after the lease this one reads it.
    s.table.set(s.key, `${s.clock.now} none`);
    s.clock.now += 61_000;
    assert.equal(await s.ask(), null);
    assert.deepEqual(s.calls, { reads: 2, leases: 1, probes: 0 });
  });
});
