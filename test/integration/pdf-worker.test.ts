/**
 * PDF text extraction in a worker thread (issue 16): a page that pdf.js parses for seconds without
 * yielding is stopped at limits.pdfTimeMs, a PDF that needs more heap than limits.pdfMemoryMb is
 * stopped too, both counted and noted with the pages read before kept; a normal PDF reads as it
 * does in this thread. Real worker threads, real pdf.js, real PDFs (built here, a few KB each).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { strToU8, zipSync } from 'fflate';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { pdfToText } from '../../shared/crawl/extract/pdf-text.ts';
import { processPage } from '../../shared/crawl/page/page-outcome.ts';
import { createUrlDecider } from '../../shared/crawl/rules/decide.ts';
import { CrawlError } from '../../shared/errors.ts';
import { createPdfWorkerReader } from '../../shared/stages/pdf-worker.ts';
import type { FetchedPage, UrlTask } from '../../shared/types.ts';
import { heavyPagePdf, minimalPdf, multiPagePdf } from '../helpers/archive-builders.ts';

const SITE = 'http://site.test';
const AT = '2026-11-23T00:00:00.000Z';
// 5 million text operators, 50 KB deflated: ~10 s of pdf.js on one page on the dev machine
const SLOW_PAGE = ['(a) Tj ', 5_000_000] as const;
// 3 million one-item lines: ~1.3 GB RSS and 27 s in this thread; any small heap runs out
const HUNGRY_PAGE = ["(ab) ' ", 3_000_000] as const;

function context(
  limits: CrawlConfigInput['limits'],
  readPdf: ReturnType<typeof createPdfWorkerReader>,
  startPath = '/',
) {
  const config = parseConfig({ name: 'pdf-worker', startUrls: [`${SITE}${startPath}`], limits });
  return { config, decider: createUrlDecider(config), now: AT, readPdf: readPdf.read };
}

function page(path: string, body: Uint8Array, contentType: string): FetchedPage {
  const url = `${SITE}${path}`;
  const task: UrlTask = {
    url,
    depth: 0,
    queue: 'user',
    index: true,
    follow: true,
    priority: 0,
    kind: 'page',
  };
  const headers = { 'content-type': contentType };
  const body64 = Buffer.from(body).toString('base64');
  return {
    task,
    url,
    status: 200,
    headers,
    fetchedAt: AT,
    body: body64,
    truncated: false,
    notModified: false,
  };
}

describe('PDF extraction in a worker thread, stopped at its limits', () => {
  const reader = createPdfWorkerReader();
  const limits = { maxPages: 1000, maxMs: 60_000, maxHeapMb: 128 };
  after(() => reader.close());

  it('a normal PDF gives the same text, title and cut as in this thread; the worker is reused', async () => {
    const titled = minimalPdf('Hello Trawl PDF', 'Trawl Test Document');
    let t = performance.now();
    const first = await reader.read(titled, limits);
    const startMs = performance.now() - t;
    t = performance.now();
    const again = await reader.read(titled, limits);
    const reuseMs = performance.now() - t;
    console.log(
      `PDF worker: first PDF ${startMs.toFixed(0)} ms (thread start-up), next ${reuseMs.toFixed(0)} ms`,
    );

    assert.deepEqual(first, await pdfToText(titled));
    assert.deepEqual(again, first);
    const four = multiPagePdf(['One', 'Two', 'Three', 'Four']);
    const cut = await reader.read(four, { ...limits, maxPages: 2 });
    assert.deepEqual(cut, await pdfToText(four, { maxPages: 2, maxMs: 60_000, clock: () => 0 }));
    assert.equal(cut.cut?.limit, 'limit-pdf-pages');
  });

  it('bytes that are not a PDF reject with a CrawlError, and the worker reads the next PDF', async () => {
    await assert.rejects(reader.read(strToU8('<html>not a pdf</html>'), limits), CrawlError);
    assert.equal((await reader.read(minimalPdf('still here'), limits)).text, 'still here');
  });

  it('a page that parses for seconds is stopped at limits.pdfTimeMs: pages before it kept, noted, counted', async () => {
    const pdf = heavyPagePdf(...SLOW_PAGE, ['Intro page', 'Second page']);
    const started = performance.now();
    const r = await processPage(
      page('/slow.pdf', pdf, 'application/pdf'),
      context({ pdfTimeMs: 1000 }, reader),
    );
    const tookMs = performance.now() - started;

    // a lower bound only (libuv timers round to whole ms, so a few ms of slack)
    assert.ok(tookMs >= 995, `returned after ${tookMs} ms, before limits.pdfTimeMs`);
    const out = r.outcomes[0];
    assert.equal(out?.state, 'indexed');
    assert.equal(out?.doc?.content, 'Intro page Second page');
    assert.match(String(out?.note), /2 of 3 pages read within limits\.pdfTimeMs \(1000 ms\)/);
    assert.deepEqual(r.rejected, { 'limit-pdf-time': 1 });
  });

  it('a slow PDF inside a zip is stopped the same way, the other elements indexed', async () => {
    const zip = zipSync({ 'slow.pdf': heavyPagePdf(...SLOW_PAGE), 'readme.txt': strToU8('zip readme') });
    const r = await processPage(
      page('/files.zip', zip, 'application/zip'),
      // A start URL: the default ignoredExtensions (seed 004) keep .zip links out of a crawl.
      context({ pdfTimeMs: 500 }, reader, '/files.zip'),
    );

    const byUrl = new Map(r.outcomes.map((o) => [o.url, o]));
    assert.equal(byUrl.get(`${SITE}/files.zip/readme.txt`)?.doc?.content, 'zip readme');
    const slow = byUrl.get(`${SITE}/files.zip/slow.pdf`);
    assert.equal(slow?.state, 'indexed');
    assert.match(
      String(slow?.note),
      /within limits\.pdfTimeMs \(500 ms\): the extraction was stopped mid-page/,
    );
    assert.deepEqual(r.rejected, { 'limit-pdf-time': 1 });
  });

  it("a PDF is also stopped when the extract invocation's time is spent (leftMs under pdfTimeMs)", async () => {
    // the last test stopped the worker: a warm one reads the first page in ms, a cold one may not
    await reader.read(minimalPdf('warm-up'), limits);
    const pdf = heavyPagePdf(...SLOW_PAGE, ['First']);
    const cut = await reader.read(pdf, { ...limits, leftMs: 1000 });
    assert.equal(cut.text, 'First');
    assert.match(
      String(cut.cut?.reason),
      /1 of 2 pages read within the time left of the extract invocation \(1000 ms/,
    );
    // none left: not started at all, and the kept worker is not stopped for it
    const none = await reader.read(minimalPdf('never read'), { ...limits, leftMs: 0 });
    assert.deepEqual([none.text, none.cut?.limit], ['', 'limit-pdf-time']);
  });

  it('a PDF needing more heap than limits.pdfMemoryMb is stopped, noted and counted, not a crash', async () => {
    const hungry = page('/hungry.pdf', heavyPagePdf(...HUNGRY_PAGE, ['Cover']), 'application/pdf');
    const ctx = context({ pdfMemoryMb: 16, pdfTimeMs: 600_000 }, reader);
    const r = await processPage(hungry, ctx);

    const out = r.outcomes[0];
    assert.equal(out?.doc?.content, 'Cover');
    assert.match(
      String(out?.note),
      /1 of 2 pages read before the extraction ran out of limits\.pdfMemoryMb \(16 MB\)/,
    );
    assert.deepEqual(r.rejected, { 'limit-pdf-memory': 1 });
    // the same small heap reads a normal PDF: the limit stopped the PDF, not the worker's start-up
    const next = await processPage(page('/ok.pdf', minimalPdf('Small is fine'), 'application/pdf'), ctx);
    assert.equal(next.outcomes[0]?.doc?.content, 'Small is fine');
  });
});
