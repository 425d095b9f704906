/**
 * Micro benchmark: extractHtml vs a bare cheerio.load over a corpus of HTML pages
 * (product target: extract CPU ≤ 1.5 × cheerio.load, FACTS.md).
 * Usage: node --import tsx bench/extract-micro.ts [DIR]   (default: the Boost docs corpus)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { load } from 'cheerio';
import { parseConfig } from '../shared/config.ts';
import { extractHtml } from '../shared/crawl/extract-html.ts';

const ROOT = process.argv[2] ?? '/work/shared/corpora/site/doc';
const ROUNDS = 3;

function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return htmlFiles(p);
    return /\.html?$/i.test(e.name) ? [p] : [];
  });
}

const options = parseConfig({ name: 'bench', startUrls: ['http://localhost/'] }).extract;
const pages = htmlFiles(ROOT).map((p) => ({
  url: `http://localhost/doc/${relative(ROOT, p).split('\\').join('/')}`,
  html: readFileSync(p, 'utf8'),
}));
const megabytes = pages.reduce((n, p) => n + Buffer.byteLength(p.html), 0) / 1e6;

/** Runs fn over every page once; returns ms per page. */
function pass(fn: (page: (typeof pages)[number]) => unknown): number {
  let sink = 0;
  const t0 = performance.now();
  for (const page of pages) sink += fn(page) ? 1 : 0;
  const ms = performance.now() - t0;
  if (sink < 0) console.log(sink); // keeps the results alive
  return ms / pages.length;
}

const cheerioPass = () => pass((p) => load(p.html));
const extractPass = () => pass((p) => extractHtml({ url: p.url, html: p.html, options }));

cheerioPass();
extractPass(); // warm-up
const cheerioMs: number[] = [];
const extractMs: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  cheerioMs.push(cheerioPass());
  extractMs.push(extractPass());
}
const best = (xs: number[]) => Math.min(...xs);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (x: number) => x.toFixed(3);
console.log(`${pages.length} pages, ${megabytes.toFixed(1)} MB, ${ROUNDS} rounds after a warm-up`);
console.log(`cheerio.load : ${fmt(mean(cheerioMs))} ms/page (best ${fmt(best(cheerioMs))})`);
console.log(`extractHtml  : ${fmt(mean(extractMs))} ms/page (best ${fmt(best(extractMs))})`);
console.log(
  `ratio extractHtml / cheerio.load: ${(mean(extractMs) / mean(cheerioMs)).toFixed(2)} (target ≤ 1.5)`,
);
