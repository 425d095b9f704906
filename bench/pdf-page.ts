/**
 * One hostile PDF page, in this thread and in the PDF worker (issue 16): a deflated content stream
 * of N text operators (~10 KB a million) that pdf.js parses without yielding. Prints the time and
 * RSS in this thread, how often a 100 ms interval ran meanwhile (the event loop's share), the
 * worker's stop at limits.pdfTimeMs, and the worker's start-up and reuse cost.
 * Usage: node --import tsx bench/pdf-page.ts [OPERATORS=2000000] [OP="(a) Tj "] [PDF_TIME_MS=1000]
 */
import { pdfToText } from '../shared/crawl/extract/pdf-text.ts';
import { createPdfWorkerReader } from '../shared/stages/pdf-worker.ts';
import { heavyPagePdf, minimalPdf } from '../test/helpers/archive-builders.ts';

const operators = Number(process.argv[2] ?? 2_000_000);
const op = process.argv[3] ?? '(a) Tj ';
const pdfTimeMs = Number(process.argv[4] ?? 1000);

/** Runs `work`, counting how often a 100 ms interval got to run meanwhile. */
async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; ticks: number; value: T }> {
  let ticks = 0;
  const interval = setInterval(() => ticks++, 100);
  const started = performance.now();
  const value = await work();
  const ms = performance.now() - started;
  clearInterval(interval);
  return { ms, ticks, value };
}

const pdf = heavyPagePdf(op, operators, ['Intro']);
console.log(`PDF: ${pdf.length} bytes, 2 pages, the second ${operators} × "${op.trim()}"`);
const rssBefore = process.memoryUsage().rss;
const inThread = await timed(() => pdfToText(pdf));
const rssGrowth = (process.resourceUsage().maxRSS * 1024 - rssBefore) / 1e6;
console.log(
  `in this thread: ${inThread.ms.toFixed(0)} ms, peak RSS +${rssGrowth.toFixed(0)} MB, ` +
    `interval ran ${inThread.ticks} of ${Math.floor(inThread.ms / 100)} times`,
);

const reader = createPdfWorkerReader();
const limits = { maxPages: 1000, maxMs: pdfTimeMs, maxHeapMb: 128 };
const first = await timed(() => reader.read(minimalPdf('warm-up'), limits));
const next = await timed(() => reader.read(minimalPdf('again'), limits));
console.log(`worker: first PDF ${first.ms.toFixed(0)} ms (start-up), next ${next.ms.toFixed(0)} ms`);
const cut = await timed(() => reader.read(pdf, limits));
console.log(
  `worker, pdfTimeMs ${pdfTimeMs}: returned after ${cut.ms.toFixed(0)} ms, interval ran ${cut.ticks} times; ` +
    `text "${cut.value.text}", note: ${cut.value.cut?.reason}`,
);
await reader.close();
