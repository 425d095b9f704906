/**
 * `node --expose-gc --import tsx bench/state-memory.ts [N]`: the CLI's state readers over N
 * synthetic URLs (default 1,000,000; test/helpers/synthetic-crawl.ts), with the heap sampled as
 * they go — `trawl report`'s pass (eachState into the report's aggregates, then the HTML) and
 * `trawl urls`' sorted pass (currentStates). A measurement, not a test: it prints figures.
 */

import { renderReportHtml } from '../cli/report-html.ts';
import { currentStates, eachState } from '../cli/session.ts';
import { ReportAggregate } from '../shared/report/report-model.ts';
import { syntheticCrawl } from '../test/helpers/synthetic-crawl.ts';

const n = Number(process.argv[2] ?? 1_000_000);
const gc = (globalThis as { gc?: () => void }).gc;
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;

function heapNow(): number {
  gc?.();
  return process.memoryUsage().heapUsed;
}

/** Runs `pass`, sampling the heap every 10,000 values; returns the peak over the baseline. */
async function measure(name: string, pass: (tick: () => void) => Promise<number>): Promise<void> {
  const base = heapNow();
  let peak = base;
  let seen = 0;
  const started = Date.now();
  const count = await pass(() => {
    if (++seen % 10_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
  });
  const secs = (Date.now() - started) / 1000;
  console.log(
    `${name}: ${count.toLocaleString('en-US')} states in ${secs.toFixed(0)} s; heap ${mb(base)} before, peak ${mb(peak)} (+${mb(peak - base)}), rss ${mb(process.memoryUsage().rss)}`,
  );
}

const crawl = syntheticCrawl(n);
await measure('report (eachState → aggregates)', async (tick) => {
  const agg = new ReportAggregate({
    crawl: 'synthetic',
    where: 'bench',
    nowMs: Date.parse('2026-11-03'),
    maxAgeMs: 30 * 86_400_000,
  });
  let count = 0;
  for await (const s of eachState(crawl)) {
    agg.addState(s);
    count++;
    tick();
  }
  const html = renderReportHtml(agg.finish());
  console.log(
    `report: ${Buffer.byteLength(html).toLocaleString('en-US')} bytes of HTML for ${count.toLocaleString('en-US')} URLs`,
  );
  return count;
});
await measure('urls (currentStates, sorted by URL)', async (tick) => {
  const collator = new Intl.Collator();
  let count = 0;
  let prev = '';
  for await (const s of currentStates(crawl)) {
    if (count > 0 && collator.compare(prev, s.url) > 0)
      throw new Error(`out of order: ${prev} before ${s.url}`);
    prev = s.url;
    count++;
    tick();
  }
  return count;
});
