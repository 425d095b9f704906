/**
 * A crawl is priced at the memory its functions run with: the fetch function's follows the config
 * (shared/stages/fetch-memory.ts), and the local runner gives each handler that memory in its
 * Lambda-like context and bills it in the run record, as a deploy would. Real runner, real site on
 * loopback, real emulator.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { buildRunRecord, priceRunRecord } from '../../shared/report/run-record.ts';
import { fetchMemoryMb } from '../../shared/stages/fetch-memory.ts';
import { FUNCTIONS, type StageName } from '../../shared/topology.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('stage memory in the local runner and the run record', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    const dir = mkdtempSync(join(tmpdir(), 'trawl-memory-'));
    writeFileSync(join(dir, 'index.html'), '<html><title>a</title><a href="b.html">b</a></html>');
    writeFileSync(join(dir, 'b.html'), '<html><title>b</title></html>');
    site = await startSiteServer({ root: dir });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  for (const fetch of [{ memoryMb: 1024 }, { concurrency: 256 }]) {
    it(`bills fetch at the config's memory (${JSON.stringify(fetch)}), the others at the topology's`, async () => {
      const config = parseConfig({
        name: uniqueCrawlName('memory'),
        startUrls: [`${site.url}/index.html`],
        fetch: { allowPrivateNetworks: true, ...fetch },
      });
      const session = await openSession(config);
      const stats = session.runner.stats;
      const expected = fetchMemoryMb(config.fetch);
      assert.equal(stats.fetch.memoryMb, expected);
      assert.notEqual(expected, FUNCTIONS.fetch.memoryMb, 'the case differs from the default');
      await crawl(session);
      assert.ok(stats.fetch.invocations > 0 && stats.fetch.totalMs > 0);
      const record = buildRunRecord({
        kind: 'crawl',
        crawl: config.name,
        startedMs: 0,
        finishedMs: 1,
        stats: { fetched: 2 },
        counts: { calls: {}, sqsBilledRequests: 0, dynamoReadUnits: 0, dynamoWriteUnits: 0 },
        stages: stats,
      });
      const stages = Object.keys(FUNCTIONS) as StageName[];
      const gbs = stages.reduce(
        (n, s) => n + (stats[s].totalMs / 1000) * ((s === 'fetch' ? expected : FUNCTIONS[s].memoryMb) / 1024),
        0,
      );
      assert.ok(Math.abs(priceRunRecord(record).lambdaGbSeconds - gbs) < 1e-9);
    });
  }
});
