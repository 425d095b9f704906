/**
 * Search sink figures (issue 14): bulk throughput into the embedded OpenSearch (docs/s, the
 * sink's own writeBulk with 500 × ~5 KB documents a request, as one index batch sends them) and
 * the crawl's pages/s with index.sink "opensearch" against the same crawl with the feed sink.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { engineInstalled, startSearchEngine } from '../cli/search-engine.ts';
import type { CrawlConfigInput } from '../shared/config.ts';
import { ensureIndex, searchClient, writeBulk } from '../shared/search/opensearch-sink.ts';
import type { CrawlDocument } from '../shared/types.ts';
import { runTrawl, type TrawlResult } from './trawl-run.ts';

export interface SearchFigures {
  bulkDocs: number;
  bulkDocsPerSecond: number;
  pagesPerSecondOff: number;
  pagesPerSecondOn: number;
  /** 1 − on / off: the share of pages/s the sink costs */
  sinkCost: number;
  written: number;
  line: string;
}

const BULK_DOCS = 5000;
const PER_BULK = 500;
const WORDS = 'crawler index search document refresh delete version bulk engine page'.split(' ');

function syntheticDoc(i: number): CrawlDocument {
  const content = Array.from({ length: 700 }, (_, j) => WORDS[(i * 7 + j) % WORDS.length]).join(' ');
  return {
    url: `https://bench.test/doc/${i}`,
    title: `Document ${i}`,
    content,
    meta: {},
    indexedAt: new Date().toISOString(),
  } as CrawlDocument;
}

async function bulkThroughput(endpoint: string): Promise<number> {
  const client = searchClient(endpoint);
  const index = `bench-bulk-${process.pid}`;
  await ensureIndex(client, index, true);
  const started = performance.now();
  for (let i = 0; i < BULK_DOCS; i += PER_BULK) {
    const upserts = Array.from({ length: PER_BULK }, (_, j) => ({ doc: syntheticDoc(i + j), version: 1 }));
    await writeBulk(client, index, upserts, []);
  }
  const seconds = (performance.now() - started) / 1000;
  await client.indices.delete({ index });
  return BULK_DOCS / seconds;
}

/** Runs with the engine when it is installed; null (and says why) when it is not. */
export async function searchRuns(
  off: TrawlResult,
  config: CrawlConfigInput,
  say: (s: string) => void,
): Promise<SearchFigures | null> {
  if (!engineInstalled()) {
    say('search sink figures skipped: the embedded engine is not installed (npm run setup with Java)');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'trawl-bench-search-'));
  chmodSync(dir, 0o755); // as root the engine runs as an unprivileged user
  const engine = await startSearchEngine(join(dir, 'engine'));
  const before = process.env.TRAWL_SEARCH_ENDPOINT;
  process.env.TRAWL_SEARCH_ENDPOINT = engine.endpoint;
  try {
    const bulkDocsPerSecond = await bulkThroughput(engine.endpoint);
    const on = await runTrawl('search on', { ...config, index: { sink: 'opensearch' } });
    const client = searchClient(engine.endpoint);
    const index = `trawl-${config.name}`;
    await client.indices.refresh({ index });
    const written = Number((await client.count({ index })).body.count);
    const sinkCost = 1 - on.pagesPerSecond / off.pagesPerSecond;
    const line = [
      `bulk into the engine: ${bulkDocsPerSecond.toFixed(0)} docs/s (${BULK_DOCS} × ~5 KB, ${PER_BULK} a bulk)`,
      `crawl pages/s, sink off / on: ${off.pagesPerSecond.toFixed(1)} / ${on.pagesPerSecond.toFixed(1)} (${on.pages} pages, ${written} documents in the index)`,
      `the sink costs ${(sinkCost * 100).toFixed(1)}% of pages/s (target ≤ 10%; engine and emulator share the cores)`,
    ].join('\n');
    return {
      bulkDocs: BULK_DOCS,
      bulkDocsPerSecond,
      pagesPerSecondOff: off.pagesPerSecond,
      pagesPerSecondOn: on.pagesPerSecond,
      sinkCost,
      written,
      line,
    };
  } finally {
    if (before === undefined) delete process.env.TRAWL_SEARCH_ENDPOINT;
    else process.env.TRAWL_SEARCH_ENDPOINT = before;
    await engine.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
