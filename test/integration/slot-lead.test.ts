/**
 * How far ahead a fetch container books its hosts' slots follows the slot writes both ways: a
 * write that comes back late raises the lead at once (that booking's slot is lost), and fast
 * writes bring it down again booking by booking. Before, the lead only ever grew: after the
 * claims' rush at a crawl's start it stayed at 2 s for the rest of the invocation, so every new
 * run of slots started 2 s late and 64 polite hosts were fetched at 75 % of their bound once
 * under way (80–89 % with the lead following the writes: bench/README.md). It then stopped at
 * 50 ms and began there in every invocation: a lone polite host, an invocation a page, slept
 * 39 ms before each request. Now it is the container's, its floor 1.5× the slowest recent write.
 * The real hosts table on the emulator; the slow writes are injected (a latency the emulator
 * cannot be made to have on cue): the write is delayed before it goes to the table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { HostTurns, SlotLead } from '../../shared/stages/politeness/host-turns.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A session of a polite crawl whose slot writes take `latency.ms` longer (set it at will), each
 * booking's outcome recorded in `writes` (true: granted).
 */
async function slowSlotSession(name: string, host: string) {
  const config = parseConfig({
    name: uniqueCrawlName(name),
    startUrls: [`http://${host}/`],
    fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 1000 },
  });
  await openSession(config);
  const deps = depsFromEnv();
  const latency = { ms: 0 };
  const writes: boolean[] = [];
  const acquire = deps.hosts.acquireSlot;
  deps.hosts.acquireSlot = async (...args) => {
    await sleep(latency.ms);
    const slot = await acquire(...args);
    writes.push(slot.ok);
    return slot;
  };
  return { config, deps, latency, writes };
}

describe('the slot lead follows the slot writes', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  it('rises at once after a slow write and comes back down while writes are fast', async () => {
    const { config, deps, latency } = await slowSlotSession('slot-lead', 'h0.lead.test');
    const lead = new SlotLead();
    const turns = new HostTurns(deps, config, Date.now() + 60_000, undefined, lead);
    assert.equal(turns.leadMs, 50, 'a new lead begins at the jitter');

    // A slow write: its slot's start has passed when it comes back, so the lead jumps past it.
    latency.ms = 400;
    // (its host goes back to the queue: the slot was lost and the next is a whole delay away, more
    // than an invocation waits for alone)
    assert.ok('requeueSeconds' in (await turns.turn('h0.lead.test', 3000)));
    const raised = turns.leadMs;
    assert.ok(raised >= 600, `the lead follows the write: ${raised} ms after a 400 ms write`);

    // Fast writes bring it down again. How fast a write on the emulator is depends on the machine's
    // load (a CI run on two busy cores: tens of ms at times), so the exact steps are the unit test's
    // (test/unit/stages/slot-lead.test.ts); here, twenty bookings of other hosts with no latency
    // added take it far below where the slow write put it. (Whether each booked slot is used
    // depends on that load too: a write slower than the lead loses its slot.)
    latency.ms = 0;
    const leads: number[] = [];
    for (let h = 1; h <= 20; h++) {
      await turns.turn(`h${h}.lead.test`, 1000);
      leads.push(turns.leadMs);
    }
    assert.ok(turns.leadMs <= raised / 2, `it comes back down: ${leads.join(', ')}`);
    assert.ok((leads[0] as number) < raised, `the first fast booking lowers it: ${leads.join(', ')}`);

    // The next invocation of the container begins where this one left off.
    const next = new HostTurns(deps, config, Date.now() + 60_000, undefined, lead);
    assert.equal(next.leadMs, turns.leadMs);

    // And a slow write again raises it again.
    latency.ms = 300;
    await turns.turn('h30.lead.test', 1000);
    assert.ok(turns.leadMs >= 450, `raised again: ${turns.leadMs} ms`);

    // Without a lead of their own, a container's invocations share one.
    const one = new HostTurns(deps, config, Date.now() + 60_000);
    const other = new HostTurns(deps, config, Date.now() + 60_000);
    latency.ms = 250;
    await one.turn('h60.lead.test', 1000);
    assert.ok(other.leadMs >= 375, `the other invocation's lead: ${other.leadMs} ms`);
  });

  // A run whose first slot was lost to its own slow write still holds the host until its end: a
  // booking before that was refused by it, a write unit for nothing (100-135 refused bookings for
  // 500 pages of a broad crawl). The task waits for the run's end, or goes back to its queue.
  it('books nothing into its own run after losing its slot to a slow write', async () => {
    const { config, deps, latency, writes } = await slowSlotSession('own-run', 'h0.own.test');
    latency.ms = 300;
    const turns = new HostTurns(deps, config, Date.now() + 60_000, undefined, new SlotLead());
    const first = await turns.turn('h0.own.test', 1000);
    // The slot is lost; the run's end (about 850 ms away) is booked once the lead the slow write
    // raised (450 ms) reaches it: a wait in the invocation, as after the refusal it used to get.
    assert.ok('sendBy' in first, JSON.stringify(first));
    assert.deepEqual(writes, [true, true], 'two bookings, none refused');
    // A host whose run's end is further off than an invocation waits (a 3 s delay, its one slot
    // lost to a 700 ms write) goes back to its queue, with no booking.
    latency.ms = 700;
    const far = await turns.turn('h1.own.test', 3000);
    assert.ok('requeueSeconds' in far, JSON.stringify(far));
    assert.deepEqual(writes, [true, true, true], 'the far one booked once, refused never');
  });
});
