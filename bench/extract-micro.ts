/**
 * Micro benchmark: Trawl's extraction vs a bare cheerio.load over a corpus of HTML pages
 * (product target: extract CPU ≤ 1.5 × cheerio.load, docs/design-facts.md). Two Trawl figures: extractHtml
 * alone, and processPage (the extract stage's whole per-page work: base64 body, decoding,
 * extraction, link decisions, document and delta hash) — everything but the AWS calls.
 * Usage: node --import tsx bench/extract-micro.ts [DIR]   (default: the Boost docs corpus)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { load } from 'cheerio';
import { parseConfig } from '../shared/config.ts';
import { extractHtml } from '../shared/crawl/extract/extract-html.ts';
import { processPage } from '../shared/crawl/page/page-outcome.ts';
import { createUrlDecider } from '../shared/crawl/rules/decide.ts';
import type { FetchedPage } from '../shared/types.ts';
import { CORPUS_ROOT, corpusAvailable } from './sites.ts';

/** The Boost.Math docs (bench/fixtures/boost-math, unpacked by bench/sites.ts); another root as argv[2]. */
export const BOOST_DOC_ROOT = join(CORPUS_ROOT, 'doc');

export interface ExtractMicroResult {
  pages: number;
  megabytes: number;
  rounds: number;
  /** mean ms/page over the rounds (best in `best`) */
  cheerioMs: number;
  extractHtmlMs: number;
  processPageMs: number;
  best: { cheerioMs: number; extractHtmlMs: number; processPageMs: number };
  /** extractHtml / cheerio.load and processPage / cheerio.load, on the means */
  ratioExtractHtml: number;
  ratioProcessPage: number;
}

interface Page {
  url: string;
  html: string;
  fetched: FetchedPage;
}

function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return htmlFiles(p);
    return /\.html?$/i.test(e.name) ? [p] : [];
  });
}

function loadPages(root: string): Page[] {
  return htmlFiles(root).map((p) => {
    const url = `http://localhost/doc/${relative(root, p).split('\\').join('/')}`;
    const html = readFileSync(p, 'utf8');
    const fetched: FetchedPage = {
      task: { url, depth: 1, queue: 'follow', index: true, follow: true, priority: 0 },
      url,
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      fetchedAt: new Date(0).toISOString(),
      body: Buffer.from(html).toString('base64'),
      truncated: false,
      notModified: false,
    };
    return { url, html, fetched };
  });
}

/** Runs fn over every page once; returns ms per page. */
async function pass(pages: Page[], fn: (page: Page) => unknown): Promise<number> {
  let sink = 0;
  const t0 = performance.now();
  for (const page of pages) sink += (await fn(page)) ? 1 : 0;
  const ms = performance.now() - t0;
  if (sink < 0) console.log(sink); // keeps the results alive
  return ms / pages.length;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Measures cheerio.load, extractHtml and processPage on every HTML file under `root`. */
export async function runExtractMicro(root = BOOST_DOC_ROOT, rounds = 3): Promise<ExtractMicroResult> {
  const config = parseConfig({
    name: 'bench',
    startUrls: ['http://localhost/doc/html/index.html'],
    scope: { underStartPath: true },
  });
  const ctx = { config, decider: createUrlDecider(config), now: new Date(0).toISOString() };
  const pages = loadPages(root);
  const passes = {
    cheerio: () => pass(pages, (p) => load(p.html)),
    extractHtml: () => pass(pages, (p) => extractHtml({ url: p.url, html: p.html, options: config.extract })),
    processPage: () => pass(pages, (p) => processPage(p.fetched, ctx)),
  };
  for (const run of Object.values(passes)) await run(); // warm-up
  const ms = { cheerio: [] as number[], extractHtml: [] as number[], processPage: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(passes)) ms[name as keyof typeof ms].push(await run());
  }
  return {
    pages: pages.length,
    megabytes: pages.reduce((n, p) => n + Buffer.byteLength(p.html), 0) / 1e6,
    rounds,
    cheerioMs: mean(ms.cheerio),
    extractHtmlMs: mean(ms.extractHtml),
    processPageMs: mean(ms.processPage),
    best: {
      cheerioMs: Math.min(...ms.cheerio),
      extractHtmlMs: Math.min(...ms.extractHtml),
      processPageMs: Math.min(...ms.processPage),
    },
    ratioExtractHtml: mean(ms.extractHtml) / mean(ms.cheerio),
    ratioProcessPage: mean(ms.processPage) / mean(ms.cheerio),
  };
}

/** The micro benchmark's printed lines. */
export function formatExtractMicro(r: ExtractMicroResult): string[] {
  const fmt = (x: number) => x.toFixed(3);
  return [
    `${r.pages} pages, ${r.megabytes.toFixed(1)} MB, ${r.rounds} rounds after a warm-up`,
    `cheerio.load : ${fmt(r.cheerioMs)} ms/page (best ${fmt(r.best.cheerioMs)})`,
    `extractHtml  : ${fmt(r.extractHtmlMs)} ms/page (best ${fmt(r.best.extractHtmlMs)})`,
    `processPage  : ${fmt(r.processPageMs)} ms/page (best ${fmt(r.best.processPageMs)}) — the extract stage's per-page CPU`,
    `ratio extractHtml / cheerio.load: ${r.ratioExtractHtml.toFixed(2)} (target ≤ 1.5)`,
    `ratio processPage / cheerio.load: ${r.ratioProcessPage.toFixed(2)} (target ≤ 1.5)`,
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  if (!process.argv[2]) corpusAvailable();
  for (const line of formatExtractMicro(await runExtractMicro(process.argv[2] ?? BOOST_DOC_ROOT)))
    console.log(line);
}
