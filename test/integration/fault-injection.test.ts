/**
 * Issue 15 item 8: a crawl of a generated 300-page loopback site with faults injected at random
 * points in every stage ends with the same documents, URL states and change feed as the same
 * crawl without faults. The real handlers, the real runner and the real emulator; the faults
 * (test/helpers/faults.ts says which are simulated and why):
 * - AWS calls fail before the emulator sees them, or after it applied them (response lost), in
 *   every stage and in the runner's event-source polling (receive, delete, visibility);
 * - stage handlers throw before their work or after it (a crash before the runner deletes the
 *   batch), so the real queues redeliver batches that were already done.
 * Process exits (kill -9) are covered by interrupt-resume.test.ts: each costs a 30 s lease, too
 * slow for hundreds. Leases here are 2 s (TRAWL_LEASE_SECONDS) so redeliveries come in seconds.
 * Messages that fail maxReceiveCount times go to their DLQ, as on AWS; once the faults stop the
 * test moves them back, as the README tells an operator to, and drains again.
 * The seed is printed; `TRAWL_FAULT_SEED=<seed>` replays the same fault schedule.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { deadLetterCount } from '../../cli/commands/status.ts';
import { type AnyHandler, LocalRunner, scheduledEvent } from '../../cli/runner.ts';
import {
  type CrawlSession,
  documents,
  openSession,
  redriveDeadLetters,
  urlStates,
} from '../../cli/session.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import * as extract from '../../functions/extract/handler.ts';
import * as fetch from '../../functions/fetch/handler.ts';
import * as index from '../../functions/index/handler.ts';
import * as refresh from '../../functions/refresh/handler.ts';
import * as seed from '../../functions/seed/handler.ts';
import { parseConfig } from '../../shared/config.ts';
import { containerDeps } from '../../shared/stages/deps.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { FUNCTIONS } from '../../shared/topology.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { FaultInjector } from '../helpers/faults.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const SEED = Number(process.env.TRAWL_FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
const PAGES = 300;

const HANDLERS = {
  seed: seed.handler,
  fetch: fetch.handler,
  extract: extract.handler,
  index: index.handler,
  refresh: refresh.handler,
} as Record<'seed' | 'fetch' | 'extract' | 'index' | 'refresh', AnyHandler>;

interface Outcome {
  docs: string[];
  states: string[];
  changes: string[];
  /** records of the feed as written that its readers fold (copies of a change) */
  folded: number;
}

describe('fault injection', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const lease = process.env.TRAWL_LEASE_SECONDS;

  before(async () => {
    process.env.TRAWL_LEASE_SECONDS = '2';
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-faults-'));
    site = await startSiteServer({ root: dir });
    generateDemoSite(dir, { pages: PAGES, seed: 15, baseUrl: site.url });
  });
  after(async () => {
    if (lease === undefined) delete process.env.TRAWL_LEASE_SECONDS;
    else process.env.TRAWL_LEASE_SECONDS = lease;
    await site?.close();
    await emu?.stop();
  });

  async function run(prefix: string, faults: FaultInjector | null): Promise<Outcome> {
    const config = parseConfig({
      name: uniqueCrawlName(prefix),
      startUrls: [`${site.url}/`],
      scope: { keepQueryParams: [] },
      fetch: { allowPrivateNetworks: true, maxInvocations: 2 },
      // Duplicate folding reads and writes one digest entry per new document: at this test's 10 %
      // failed calls nearly every index batch of 100 outcomes would fail and retry for ever (the
      // README's known limitations); the generated site has no duplicate pages anyway.
      index: { foldDuplicates: false },
    });
    const session = await openSession(config, { logLevel: 'SILENT' });
    const handlers = { ...HANDLERS };
    if (faults) {
      // Each stage's clients (one container per stage, as on Lambda) and the event-source pollers' client.
      for (const stage of Object.keys(FUNCTIONS)) faults.wrapClients(containerDeps(stage).clients);
      faults.wrapClients(session.clients);
      for (const k of Object.keys(handlers) as (keyof typeof handlers)[])
        handlers[k] = faults.wrapHandler(k, handlers[k]);
    }
    const runner = new LocalRunner({
      handlers,
      queueUrls: session.resources.queueUrls,
      monitor: session.monitor,
      pollers: session.clients,
      fetchConcurrency: 2,
    });
    // A failed seed invocation is retried after a pause, as Lambda retries the asynchronous
    // invocation of an EventBridge target (a user reruns `trawl crawl`: the seed is idempotent).
    for (let attempt = 1; ; attempt++) {
      try {
        await runner.invoke('seed', scheduledEvent('Start Crawl'));
        break;
      } catch (err) {
        if (attempt >= 30) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // Faults stay on: what fails maxReceiveCount times waits in its DLQ, and is moved back as
    // `trawl redrive` does, until nothing is left there.
    // `trawl crawl` counts them the same way (a summary line and exit 1: deadLetterCount).
    let moved = 0;
    do {
      await runner.drain();
      const waiting = await deadLetterCount(session.monitor, session.resources.dlqUrls);
      moved = Object.values(await redriveDeadLetters(session)).reduce((a, b) => a + b, 0);
      assert.equal(waiting, moved, 'the dead letters counted are those moved back');
    } while (moved > 0);
    if (process.env.TRAWL_FAULT_DEBUG) console.log(prefix, JSON.stringify(runner.stats));
    return collect(session);
  }

  it('ends a crawl with faults in every stage as a fault-free crawl ends', async () => {
    let t = Date.now();
    const clean = await run('clean', null);
    console.log(`fault-free crawl: ${Date.now() - t} ms`);
    // The seed stage runs once or twice a crawl, so its draws miss it on some seeds: its first
    // invocation always crashes after its work, so the retried seed sends the start URL again.
    const faults = new FaultInjector(
      SEED,
      { aws: 0.1, handler: 0.3, transient: 0.35 },
      { 'seed invoke#1': 'after' },
    );
    console.log(`fault seed ${SEED} (TRAWL_FAULT_SEED=${SEED} replays it)`);
    t = Date.now();
    for (const k of Object.keys(stageStats)) delete stageStats[k];
    const faulty = await run('faults', faults);
    const counted = { ...stageStats };
    console.log(`crawl with faults: ${Date.now() - t} ms`);
    console.log(
      `injected ${faults.total} faults (${faults.surfacing} seen by the stages and the runner, the rest transient errors the SDK retried):`,
      faults.byStage(),
    );
    console.log([...faults.counts].map(([k, v]) => `${k}: ${v}`).join(', '));

    assert.ok(clean.docs.length > PAGES / 2, `${clean.docs.length} documents`);
    assert.equal(clean.changes.length, clean.docs.length, 'one upsert per document without faults');
    assert.equal(clean.folded, 0, 'no copies in the feed without faults');
    // Copies are at-least-once's trace (docs/documents.md): a page fetched twice and both indexed
    // before either state was written. The readers fold them; what they read must be the clean run's.
    console.log(`copies in the feed as written, folded by its readers: ${faulty.folded}`);
    const twice = faulty.changes.filter((c, i) => faulty.changes.indexOf(c) !== i);
    assert.deepEqual(twice, [], 'change records twice');
    for (const what of ['docs', 'states', 'changes'] as const) {
      const missing = clean[what].filter((x) => !faulty[what].includes(x));
      const extra = faulty[what].filter((x) => !clean[what].includes(x));
      assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `${what} differ`);
      assert.equal(faulty[what].length, clean[what].length, `${what}: as many (none twice)`);
    }
    // What the summary says (`documents: N new`): a failed index batch used to count its outcomes
    // at every attempt (585 new for 293 documents). A URL is counted new once, or twice for a copy
    // indexed twice (above). No lower bound: a batch whose manifest PUT was applied but answered
    // with an error (a fault only this injector makes often) is counted `redelivered` by its retry,
    // and one index batch may carry nearly the whole site.
    console.log(`counted new: ${counted.indexed ?? 0}, redelivered: ${counted.redelivered ?? 0}`);
    assert.ok(
      (counted.indexed ?? 0) <= faulty.docs.length + faulty.folded,
      `${counted.indexed} counted new for ${faulty.docs.length} documents (${faulty.folded} copies)`,
    );
    assert.ok(faults.total >= 200, `only ${faults.total} faults injected`);
    assert.ok(faults.surfacing >= 30, `only ${faults.surfacing} faults reached the stages`);
    for (const stage of ['seed', 'fetch', 'extract', 'index', 'runner'])
      assert.ok((faults.byStage()[stage] ?? 0) > 0, `no fault in ${stage}`);
  });
});

/** What the two crawls must agree on: a document's URL, delta hash (over its title, text, metadata…) and title. */
async function collect(session: CrawlSession): Promise<Outcome> {
  const docs = [];
  for await (const d of documents(session)) docs.push(`${d.url} ${d.hash} ${d.title}`);
  const states = [];
  for await (const u of urlStates(session)) {
    // Times differ by run; so do depth and foundOn, the length of the path that claimed the URL
    // first and its last page: concurrent (and retried) workers find the links in a different order.
    const { lastFetched: _f, nextRefreshAt: _n, depth: _d, foundOn: _o, ...rest } = u;
    states.push(JSON.stringify(rest));
  }
  const feed = await readChanges(session);
  const changes = feed.map((c) => `${c.type} ${c.url} ${c.reason ?? ''}`.trim());
  const folded = (await readChanges(session, { copies: true })).length - feed.length;
  return { docs, states, changes: changes.sort(), folded };
}
