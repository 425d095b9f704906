/**
 * One Trawl crawl through the local pipeline (cli/session.ts: the real handlers, the runner's
 * event sources, the emulator), metered: requests by operation, capacity units, SQS billing,
 * Lambda invocations and durations per stage.
 */
import { performance } from 'node:perf_hooks';
import { crawl, documents, openSession, urlStates } from '../cli/session.ts';
import { requestCounts, resetRequestCounts } from '../shared/aws/request-counter.ts';
import { type CrawlConfigInput, parseConfig } from '../shared/config.ts';
import { type CostBreakdown, priceRun, type RunUsage } from '../shared/pricing.ts';
import type { StageName } from '../shared/topology.ts';
import { AwsMeter, type MeterReport } from './aws-meter.ts';

export interface TrawlResult {
  label: string;
  /** URLs fetched to a final state (indexed, error, ignored…) */
  pages: number;
  /** documents in the index */
  documents: number;
  documentUrls: string[];
  /** URLs whose content another URL keeps (index.foldDuplicates): URL → the keeper */
  duplicates: Map<string, string>;
  states: Record<string, number>;
  seconds: number;
  pagesPerSecond: number;
  usage: RunUsage;
  meter: MeterReport;
  cost: CostBreakdown;
}

const STAGES: StageName[] = ['seed', 'fetch', 'extract', 'index', 'refresh'];

/** Crawls with `config` (a fresh crawl name each time) and returns the metered figures. */
export async function runTrawl(label: string, config: CrawlConfigInput): Promise<TrawlResult> {
  const session = await openSession(parseConfig(config));
  const meter = new AwsMeter();
  meter.install(session);
  resetRequestCounts();
  const started = performance.now();
  await crawl(session);
  const seconds = (performance.now() - started) / 1000;
  const calls = { ...requestCounts.calls };
  const m = meter.report();
  const states: Record<string, number> = {};
  let pages = 0;
  const duplicates = new Map<string, string>();
  for await (const u of urlStates(session)) {
    states[String(u.state)] = (states[String(u.state)] ?? 0) + 1;
    if (u.lastFetched) pages++;
    if (u.state === 'duplicate') duplicates.set(String(u.url), String(u.duplicateOf));
  }
  const documentUrls: string[] = [];
  for await (const d of documents(session)) documentUrls.push(String(d.url));
  const stats = session.runner.stats;
  const usage: RunUsage = {
    pages,
    calls,
    sqsBilledRequests: Object.values(m.sqsBilled).reduce((a, b) => a + b, 0),
    dynamoReadUnits: Object.values(m.dynamo.read).reduce((a, b) => a + b, 0),
    dynamoWriteUnits: Object.values(m.dynamo.write).reduce((a, b) => a + b, 0),
    stages: Object.fromEntries(
      STAGES.map((s) => [
        s,
        {
          invocations: stats[s].invocations,
          totalMs: stats[s].totalMs,
          awsWaitMs: m.awsWaitMs[s] ?? 0,
          memoryMb: stats[s].memoryMb,
        },
      ]),
    ) as RunUsage['stages'],
  };
  for (const e of meter.errors.slice(0, 5)) process.stderr.write(`bench meter: ${e}\n`);
  return {
    label,
    pages,
    documents: documentUrls.length,
    documentUrls,
    duplicates,
    states,
    seconds,
    pagesPerSecond: pages / seconds,
    usage,
    meter: m,
    cost: priceRun(usage),
  };
}
