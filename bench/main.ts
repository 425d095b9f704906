/**
 * `npm run bench` (issue #7): crawls the Boost.Math docs (bench/fixtures/boost-math; a generated
 * 10,000-page site when the fixture is absent) with Trawl's local pipeline on the embedded emulator and with Crawlee's
 * CheerioCrawler on the same server and scope; prices the Trawl run at us-east-1 list prices;
 * runs the extraction micro benchmark; compares AWS requests per page at 10 and 100 links per
 * page; measures the fetch function's memory on its bundle. Prints the tables and writes
 * bench/results/latest.json.
 * Env: BENCH_LINK_PAGES (pages of each links-per-page site, default 2000), BENCH_SKIP_LINKS=1,
 * BENCH_SKIP_PROFILES=1, BENCH_SKIP_MEMORY=1.
 * Started by bench/run.ts, which sets the log level before the stages' logger is created.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmulator, useEmulatorEnv } from '../cli/emulator.ts';
import { pricingAssumptions, TARGET_DOLLARS_PER_MILLION } from '../shared/pricing.ts';
import { runCrawlee } from './crawlee-run.ts';
import { formatExtractMicro, runExtractMicro } from './extract-micro.ts';
import {
  PROFILES,
  type ProfileFigures,
  profileConfig,
  profileLine,
  silentLine,
  startSlowServer,
} from './realistic.ts';
import {
  costTable,
  crawlTable,
  type LinksRow,
  lambdaTable,
  linksTable,
  requestsTable,
  targetLines,
  usd,
} from './report.ts';
import { type SearchFigures, searchRuns } from './search-run.ts';
import {
  type BenchSite,
  CORPUS_ROOT,
  comparePaths,
  corpusAvailable,
  corpusSite,
  generatedSite,
} from './sites.ts';
import { runTrawl, type TrawlResult } from './trawl-run.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const LINK_PAGES = Number(process.env.BENCH_LINK_PAGES ?? 2000);
const FALLBACK_PAGES = 10_000;
const say = (s = '') => console.log(s);
const heading = (s: string) => say(`\n=== ${s} ===`);
let runs = 0;
const crawlName = (what: string) => `bench-${what}-${process.pid % 10000}-${++runs}`;

function machine() {
  const cpus = os.cpus();
  return {
    cpu: `${cpus.length} × ${cpus[0]?.model ?? 'unknown'}`,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

async function mainSiteRun(site: BenchSite) {
  heading(`Crawl: ${site.description}`);
  const trawlConfig = { name: crawlName('main'), ...site.trawl, fetch: { allowPrivateNetworks: true } };
  const trawl = await runTrawl('main', trawlConfig);
  const crawlee = await runCrawlee({
    startUrl: site.startUrl,
    scope: site.crawleeScope,
    stripQuery: site.stripQuery,
    respectRobotsTxt: site.kind === 'generated',
  });
  say(crawlTable(trawl, crawlee, site.expectedPages));
  for (const [who, urls] of [
    ['Trawl', [...trawl.documentUrls, ...trawl.duplicates.keys()]],
    ['Crawlee', crawlee.urls],
  ] as const) {
    const diff = comparePaths(urls, site.expectedPaths);
    if (diff)
      say(
        `${who} vs crawl_expectations.json reachable_pages: ${diff.missing.length} missing, ${diff.extra.length} extra${diff.missing.length + diff.extra.length ? ` (${[...diff.missing, ...diff.extra].slice(0, 5).join(', ')})` : ''}`,
      );
  }
  const path = (u: string) => new URL(u).pathname;
  for (const [dup, keeper] of trawl.duplicates)
    say(`Trawl: ${path(dup)} is a duplicate of ${path(keeper)} (the same text; index.foldDuplicates)`);
  const speedRatio = trawl.pagesPerSecond / crawlee.pagesPerSecond;
  say(`Trawl / Crawlee pages/s: ${speedRatio.toFixed(2)}× (target ≥ 1.0×)`);
  heading('AWS requests per page, by operation (Trawl, main site)');
  say(requestsTable(trawl));
  const d = trawl.meter.dynamo;
  say(
    `largest item written ${d.maxItemBytes} bytes (under 1 KB: 1 write unit each); ${d.conditionalFailures} failed conditional writes`,
  );
  heading('Lambda (Trawl, main site)');
  say(lambdaTable(trawl));
  heading('Cost per million pages at us-east-1 list prices (Trawl, main site)');
  say(costTable(trawl));
  heading('Search sink: the index stage into the embedded OpenSearch');
  const search = await searchRuns(trawl, { ...trawlConfig, name: crawlName('search') }, say);
  if (search) say(search.line);
  say(
    `target ≤ ${usd(TARGET_DOLLARS_PER_MILLION)}: ${trawl.cost.perMillion.total <= TARGET_DOLLARS_PER_MILLION ? 'met' : `missed by ${usd(trawl.cost.perMillion.total - TARGET_DOLLARS_PER_MILLION)} (${(trawl.cost.perMillion.total / TARGET_DOLLARS_PER_MILLION).toFixed(2)}×)`}`,
  );
  return { trawl, crawlee, speedRatio, search };
}

async function linksRuns(): Promise<LinksRow[]> {
  const rows: LinksRow[] = [];
  for (const linksPerPage of [10, 100]) {
    const site = await generatedSite(LINK_PAGES, { linksPerPage, noSitemap: true });
    try {
      rows.push({
        linksPerPage,
        run: await runTrawl(`links-${linksPerPage}`, {
          name: crawlName(`l${linksPerPage}`),
          ...site.trawl,
          fetch: { allowPrivateNetworks: true },
        }),
      });
    } finally {
      await site.close();
    }
  }
  return rows;
}

const slim = (r: TrawlResult) => ({
  ...r,
  documentUrls: undefined,
  duplicates: Object.fromEntries(r.duplicates),
});

/** The realistic-network profiles (bench/realistic.ts) on the Boost docs. */
async function profileRuns(): Promise<(ProfileFigures & { name: string })[]> {
  heading('Realistic networks: K virtual hosts, lognormal latency (median 200 ms, σ 0.6), politeness delay');
  const out: (ProfileFigures & { name: string })[] = [];
  for (const p of PROFILES) {
    const server = await startSlowServer(CORPUS_ROOT, p);
    try {
      const run = await runTrawl(
        `profile ${p.name}`,
        profileConfig(crawlName('p'), p, server.port, '/doc/html/index.html'),
      );
      const figures = profileLine(p, run, server.pageTimes);
      say(figures.line);
      const silent = silentLine(p, run, server.silentRequests);
      if (silent) say(silent);
      out.push({ name: p.name, ...figures });
    } finally {
      await server.close();
    }
  }
  const ratio = (out[1]?.gbSecondsPerPage ?? 0) / (out[0]?.gbSecondsPerPage ?? 1);
  say(`Lambda GB-s a page, 8 hosts 1 s wait / no wait: ${ratio.toFixed(2)}× (target ≤ 1.5×)`);
  return out;
}

/**
 * The fetch function's memory at the size the default config is deployed with (bench/fetch-memory.ts
 * in a process of its own: the real bundle, Lambda's memory settings, peak RSS); its lines.
 */
function fetchMemoryRun(): string[] {
  heading('Fetch memory: the bundle in a Lambda container, AWS runtime client (bench/fetch-memory.ts)');
  const out = spawnSync(process.execPath, ['--import', 'tsx', join(HERE, 'fetch-memory.ts')], {
    encoding: 'utf8',
    env: process.env,
  });
  const lines = out.stdout.split('\n').filter((l) => l.startsWith('fetch memory'));
  if (out.status !== 0 || lines.length === 0)
    say(`fetch memory run failed (exit ${out.status}): ${out.stderr.slice(-500)}`);
  for (const line of lines) say(line);
  return lines;
}

export async function main(): Promise<void> {
  const started = Date.now();
  const host = machine();
  say(`Trawl benchmark — ${new Date().toISOString()}`);
  say(
    `machine: ${host.cpu}, ${host.memoryGb} GB RAM, ${host.os}, Node ${host.node}, load average ${host.loadAverageAtStart.join(' / ')}`,
  );
  const emulator = await startEmulator();
  useEmulatorEnv(emulator.endpoint);
  try {
    const haveCorpus = corpusAvailable();
    if (!haveCorpus)
      say(
        `bench/fixtures/boost-math is absent: crawling a generated ${FALLBACK_PAGES.toLocaleString('en-US')}-page site instead`,
      );
    const site = haveCorpus ? await corpusSite() : await generatedSite(FALLBACK_PAGES);
    let main: Awaited<ReturnType<typeof mainSiteRun>>;
    let micro: Awaited<ReturnType<typeof runExtractMicro>>;
    try {
      main = await mainSiteRun(site);
      heading(`Extraction micro benchmark (${site.htmlRoot})`);
      micro = await runExtractMicro(site.htmlRoot);
      for (const line of formatExtractMicro(micro)) say(line);
    } finally {
      await site.close();
    }
    const profiles = haveCorpus && !process.env.BENCH_SKIP_PROFILES ? await profileRuns() : [];
    if (!haveCorpus) say('\nrealistic-network profiles skipped: they serve bench/fixtures/boost-math');
    const memory = process.env.BENCH_SKIP_MEMORY ? [] : fetchMemoryRun();
    let links: LinksRow[] = [];
    let spread = {
      text: '(skipped: BENCH_SKIP_LINKS=1)',
      spreadRequests: Number.NaN,
      spreadCost: Number.NaN,
    };
    if (!process.env.BENCH_SKIP_LINKS) {
      heading(
        `Links per page: generated ${LINK_PAGES.toLocaleString('en-US')}-page sites with 10 and 100 links per page`,
      );
      links = await linksRuns();
      spread = linksTable(links);
      say(spread.text);
      say(
        `DynamoDB+SQS calls per page, 100 vs 10 links: spread ${(spread.spreadRequests * 100).toFixed(1)}% (target ±10%); cost per page spread ${(spread.spreadCost * 100).toFixed(1)}%`,
      );
    }
    heading('Targets (printed, not tested)');
    say(
      targetLines({
        dollars: main.trawl.cost.perMillion.total,
        dollarsLow: main.trawl.cost.totalNoAwsWait,
        spread: spread.spreadRequests,
        speedRatio: main.speedRatio,
        extractRatio: micro.ratioProcessPage,
      }),
    );
    heading('Assumptions');
    for (const line of pricingAssumptions()) say(line);
    const seconds = (Date.now() - started) / 1000;
    say(
      `\nbench finished in ${seconds.toFixed(0)} s; load average at the end ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' / ')}`,
    );
    const out = join(HERE, 'results', 'latest.json');
    mkdirSync(dirname(out), { recursive: true });
    const json = {
      at: new Date().toISOString(),
      command: 'npm run bench',
      machine: { ...host, loadAverageAtEnd: os.loadavg() },
      seconds,
      site: site.description,
      trawl: slim(main.trawl),
      crawlee: { ...main.crawlee, urls: undefined },
      speedRatio: main.speedRatio,
      search: main.search as SearchFigures | null,
      extract: micro,
      links: links.map((l) => ({ linksPerPage: l.linksPerPage, run: slim(l.run) })),
      linksSpread: { requests: spread.spreadRequests, cost: spread.spreadCost },
      profiles,
      fetchMemory: memory,
      assumptions: pricingAssumptions(),
    };
    writeFileSync(out, `${JSON.stringify(json, null, 2)}\n`);
    say(`figures written to ${out}`);
  } finally {
    await emulator.stop();
  }
}
