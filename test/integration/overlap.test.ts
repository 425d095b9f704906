/**
 * Issue 13 item 2: concurrency follows the work. While several hosts of a round have work, one
 * fetch invocation waits for each host's turn itself — the waits overlap the other hosts'
 * requests — and fetches every host at its politeness pace without putting a URL back; with few
 * hosts it puts them back with a delay and ends instead of idling. Real fetch stage, real sites on
 * loopback (one per host), real emulator queues.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { MAX_IN_PROCESS_WAIT_MS, OVERLAP_HOSTS } from '../../shared/stages/politeness/host-turns.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import type { UrlTask } from '../../shared/types.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = 3;
/** A delay longer than a wait the invocation does alone: a few hosts go back to the queue. */
const WAIT_MS = 2 * MAX_IN_PROCESS_WAIT_MS;
/** A delay (with the slot's 100 ms margin) shorter than that: a lone host is waited for. */
const SHORT_WAIT_MS = MAX_IN_PROCESS_WAIT_MS / 2;

describe('one invocation for many polite hosts, none for a few', () => {
  let emu: TestEmulator;
  const sites: SiteServer[] = [];

  before(async () => {
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-overlap-'));
    for (let i = 0; i < PAGES; i++)
      writeFileSync(join(dir, `${i}.html`), `<html><title>p${i}</title></html>`);
    for (let h = 0; h < OVERLAP_HOSTS + 1; h++) sites.push(await startSiteServer({ root: dir }));
  });
  after(async () => {
    await Promise.all(sites.map((s) => s.close()));
    await emu?.stop();
  });

  async function fetchAll(hosts: SiteServer[], waitMs = WAIT_MS) {
    for (const s of hosts) s.requests.length = 0;
    const config = parseConfig({
      name: uniqueCrawlName('overlap'),
      startUrls: hosts.map((s) => `${s.url}/0.html`),
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: waitMs },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const tasks: UrlTask[] = hosts.flatMap((s) =>
      Array.from({ length: PAGES }, (_, i) => ({
        url: `${s.url}/${i}.html`,
        depth: 0,
        queue: 'user' as const,
        index: true,
        follow: true,
        priority: 0,
      })),
    );
    await sendTasks(deps, tasks);
    // The real hosts table, its slot writes counted.
    const acquire = deps.hosts.acquireSlot;
    let slotWrites = 0;
    deps.hosts.acquireSlot = (...args) => {
      slotWrites++;
      return acquire(...args);
    };
    const summary = await runFetchStage(deps, { deadline: Date.now() + 60_000 });
    return { ...summary, slotWrites };
  }

  function minGap(site: SiteServer): number {
    const at = site.requests.filter((r) => r.path.endsWith('.html')).map((r) => r.at);
    return Math.min(...at.slice(1).map((t, i) => t - (at[i] ?? 0)));
  }

  it(`${OVERLAP_HOSTS + 1} hosts: one invocation fetches them at each host's pace, waiting in process`, async () => {
    const summary = await fetchAll(sites);
    const total = sites.length * PAGES;
    console.log(
      `fetched ${summary.fetched} of ${total}, put back ${summary.politeness}, slot writes ${summary.slotWrites}`,
    );
    assert.equal(summary.fetched + summary.politeness, total, 'every task fetched or put back');
    // Waits are shared while ≥ OVERLAP_HOSTS hosts have work. Only at the round's tail, once fewer
    // do (hosts finish unevenly on a loaded machine), may the rest go back: at most the pages
    // after the first of OVERLAP_HOSTS - 1 hosts. Without shared waits only the first page of
    // each host would be fetched (the next test).
    const tail = (OVERLAP_HOSTS - 1) * (PAGES - 1);
    assert.ok(
      summary.fetched >= total - tail,
      `${summary.fetched} fetched, at least ${total - tail} expected`,
    );
    assert.equal(
      summary.wakeAt !== undefined,
      summary.politeness > 0,
      'a wake-up call only for what went back',
    );
    for (const [i, site] of sites.entries()) {
      const gap = minGap(site);
      assert.ok(gap >= WAIT_MS, `host ${i}: min gap ${gap} ms < ${WAIT_MS} ms`);
    }
    // A host whose turns the invocation waits for books its slots in one write, not one a fetch.
    assert.ok(
      summary.slotWrites < summary.fetched,
      `${summary.slotWrites} slot writes for ${summary.fetched} pages`,
    );
  });

  it(`${OVERLAP_HOSTS - 2} hosts: robots.txt takes each host's first turn, the pages go back with a delay`, async () => {
    const few = sites.slice(0, OVERLAP_HOSTS - 2);
    const summary = await fetchAll(few);
    // The turn after robots.txt is a whole delay away, more than an invocation waits for alone.
    assert.ok(summary.fetched < few.length * PAGES, `${summary.fetched} fetched`);
    for (const site of few) {
      const paths = site.requests.map((r) => r.path);
      assert.equal(paths[0], '/robots.txt', paths.join(' '));
      assert.ok(paths.length <= 2, `one turn after robots.txt at most: ${paths.join(' ')}`);
    }
    assert.equal(summary.politeness, few.length * PAGES - summary.fetched);
    assert.ok(summary.wakeAt !== undefined);
  });

  it(`a lone host with a delay under ${MAX_IN_PROCESS_WAIT_MS} ms: fetched at its pace by one invocation, none put back`, async () => {
    // SQS delays are whole seconds: putting such a host's URLs back made every page a pass through
    // the queue, at 40 % of the host's pace and twice the cost (host-turns.ts).
    const lone = sites.slice(0, 1);
    const summary = await fetchAll(lone, SHORT_WAIT_MS);
    assert.equal(summary.fetched, PAGES, `fetched ${summary.fetched}, put back ${summary.politeness}`);
    assert.equal(summary.politeness, 0);
    assert.equal(summary.wakeAt, undefined, 'no wake-up call: nothing went back');
    const gap = minGap(lone[0] as SiteServer);
    assert.ok(gap >= SHORT_WAIT_MS, `min gap ${gap} ms < ${SHORT_WAIT_MS} ms`);
  });
});
