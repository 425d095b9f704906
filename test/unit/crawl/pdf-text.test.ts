import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pdfToText } from '../../../shared/crawl/extract/pdf-text.ts';
import { CrawlError } from '../../../shared/errors.ts';
import { minimalPdf, multiPagePdf } from '../../helpers/archive-builders.ts';

describe('pdfToText', () => {
  it('reads the text, title and page count of a one-page PDF', async () => {
    const result = await pdfToText(minimalPdf('Hello Trawl PDF', 'Trawl Test Document'));

    assert.equal(result.text, 'Hello Trawl PDF');
    assert.equal(result.title, 'Trawl Test Document');
    assert.equal(result.pages, 1);
  });

  it('returns a null title when the PDF has none', async () => {
    const result = await pdfToText(minimalPdf('No   title    here'));

    assert.equal(result.title, null);
    assert.equal(result.text, 'No title here');
  });

  it('leaves the caller bytes usable (pdf.js gets a copy)', async () => {
    const bytes = minimalPdf('Hello Trawl PDF');

    await pdfToText(bytes);

    assert.equal(bytes.byteLength > 0, true);
    assert.equal(new TextDecoder().decode(bytes.subarray(0, 8)), '%PDF-1.4');
  });

  it('throws a CrawlError for bytes that are not a PDF', async () => {
    await assert.rejects(pdfToText(new TextEncoder().encode('<html>not a pdf</html>')), CrawlError);
  });

  it('stops at maxPages, page by page, and says so', async () => {
    const pdf = multiPagePdf(['One', 'Two', 'Three', 'Four']);
    const result = await pdfToText(pdf, { maxPages: 2, maxMs: 60_000, clock: () => 0 });
    assert.deepEqual([result.text, result.pages, result.cut?.limit], ['One Two', 4, 'limit-pdf-pages']);
  });

  it('stops when maxMs has passed between pages (a controllable clock: +1 s per reading)', async () => {
    let now = 0;
    const clock = () => (now += 1000);
    const result = await pdfToText(multiPagePdf(['One', 'Two', 'Three', 'Four']), {
      maxPages: 100,
      maxMs: 2500,
      clock,
    });
    assert.equal(result.text, 'One Two Three'); // read at +1 s and +2 s, stopped at +3 s
    assert.equal(result.cut?.limit, 'limit-pdf-time');
    assert.match(result.cut?.reason ?? '', /3 of 4 pages read within limits\.pdfTimeMs \(2500 ms\)/);
  });
});
