/**
 * Cost for a deployed crawl (issue 18): with the usage record on as the stack turns it on
 * (TRAWL_USAGE=1), the real handlers crawl a small site on the emulator through the local runner;
 * each invocation adds its requests, time and pages to the hour's item in the hosts table. The
 * items must hold exactly the requests the stages sent (a middleware watches every one), the
 * runner's invocations and pages, and `trawl report` must price them from those figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildReport } from '../../cli/commands/report.ts';
import { crawl, openSession } from '../../cli/session.ts';
import { watchAwsCalls } from '../../shared/aws/request-counter.ts';
import { deployedUsageRecords } from '../../shared/aws/run-records.ts';
import { parseConfig } from '../../shared/config.ts';
import { PRICES } from '../../shared/pricing.ts';
import { MAPPING_DELETE, MAPPING_RECEIVE } from '../../shared/report/usage-record.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { FUNCTIONS, type StageName } from '../../shared/topology.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const html = (title: string, links: string[]) =>
  `<!doctype html><title>${title}</title><p>${title}</p>${links.map((l) => `<a href="${l}">${l}</a>`).join('')}`;
const STAGES = Object.keys(FUNCTIONS) as StageName[];

describe('deployed usage record: what the handlers counted is what the report prices', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  before(async () => {
    emu = await startTestEmulator();
    const page = (t: string, links: string[] = []) => ({
      headers: { 'content-type': 'text/html' },
      body: html(t, links),
    });
    site = await startSiteServer({
      routes: {
        '/robots.txt': { body: 'User-agent: *\nAllow: /\n' },
        '/': page('Home', ['/a.html', '/b.html', '/c.html', '/missing.html']),
        '/a.html': page('A', ['/b.html', '/d.html']),
        '/b.html': page('B'),
        '/c.html': page('C'),
        '/d.html': page('D'),
      },
    });
    process.env.TRAWL_USAGE = '1';
  });
  after(async () => {
    delete process.env.TRAWL_USAGE;
    await site?.close();
    await emu?.stop();
  });

  it('records every stage request, invocation and page, and the report prices them', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('usage'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);
    const sent: Record<string, number> = {};
    const stop = watchAwsCalls((c) => {
      if (c.stage) sent[`${c.service}.${c.operation}`] = (sent[`${c.service}.${c.operation}`] ?? 0) + 1;
    });
    const fetchedBefore = stageStats.fetched ?? 0;
    const started = Date.now();
    try {
      await crawl(session);
    } finally {
      stop();
    }
    const ended = Date.now();
    const fetched = (stageStats.fetched ?? 0) - fetchedBefore;
    assert.equal(fetched, 6, 'robots.txt is not a page: /, a–d and the 404');

    const records = await deployedUsageRecords(session.hosts, config.name, new Date().toISOString());
    assert.ok(records.length >= 1 && records.length <= 2, 'one item per hour the crawl ran in');
    assert.ok(records.every((r) => r.kind === 'deployed'));
    assert.ok(Date.parse(records[0]?.startedAt ?? '') <= started);
    // An hour counts the minutes its handlers ran in, not 3,600 s: pages/s is the crawl's rate.
    const minutes = Math.floor(ended / 60_000) - Math.floor(started / 60_000) + 1;
    const seconds = records.reduce((n, r) => n + r.seconds, 0);
    assert.ok(seconds >= 60 && seconds <= minutes * 60, `${seconds} s for a crawl over ${minutes} minute(s)`);

    // The hours summed: calls, invocations, wall time, pages.
    const calls: Record<string, number> = {};
    let pages = 0;
    for (const r of records) {
      pages += r.pages;
      for (const [k, n] of Object.entries(r.counts.calls)) calls[k] = (calls[k] ?? 0) + n;
    }
    const stage = (s: StageName, f: 'invocations' | 'totalMs') =>
      records.reduce((n, r) => n + r.stages[s][f], 0);
    assert.equal(pages, fetched);
    const { [MAPPING_RECEIVE]: received, [MAPPING_DELETE]: deleted, ...stageCalls } = calls;
    assert.deepEqual(stageCalls, sent, 'each request a stage sent, counted once, the records included');
    // The event source mapping's receive and delete for each SQS-started invocation (and wake-ups).
    const bySqs = stage('extract', 'invocations') + stage('index', 'invocations');
    assert.ok((received ?? 0) >= bySqs && received === deleted);
    for (const s of STAGES) {
      const runner = session.runner.stats[s];
      assert.equal(stage(s, 'invocations'), runner.invocations, `${s} invocations`);
      // Measured inside the runner's own timing of the same invocations (whole ms, so + 1 each).
      assert.ok(stage(s, 'totalMs') <= runner.totalMs + runner.invocations, `${s} time`);
      if (runner.invocations > 0) assert.ok(stage(s, 'totalMs') > 0, `${s} time`);
    }

    // The report: the deployed rows carry the same pages and requests, and Lambda at GB-s × price.
    const report = await buildReport(session, 'test', Date.now());
    const rows = report.runs.filter((r) => r.kind === 'deployed');
    assert.equal(rows.length, records.length);
    assert.equal(
      rows.reduce((n, r) => n + r.pages, 0),
      fetched,
    );
    assert.equal(
      rows.reduce((n, r) => n + r.awsRequests, 0),
      Object.values(calls).reduce((a, b) => a + b, 0),
    );
    const row = rows.find((r) => r.pages > 0);
    const rec = records.find((r) => r.pages > 0);
    assert.ok(row?.costByService && rec);
    const gbs = STAGES.reduce(
      (n, s) => n + (rec.stages[s].totalMs / 1000) * (FUNCTIONS[s].memoryMb / 1024),
      0,
    );
    const invocations = STAGES.reduce((n, s) => n + rec.stages[s].invocations, 0);
    const lambda = ((gbs * PRICES.lambdaGbSecond + invocations * PRICES.lambdaRequest) * 1e6) / rec.pages;
    assert.ok(Math.abs((row.costByService.lambda ?? 0) - lambda) < 1e-9);
    const writes = (rec.counts.dynamoWriteUnits * PRICES.dynamoWriteUnit * 1e6) / rec.pages;
    assert.ok(Math.abs((row.costByService.dynamoWrite ?? 0) - writes) < 1e-9);
    assert.ok((row.costPerMillion ?? 0) > 0);
  });
});
