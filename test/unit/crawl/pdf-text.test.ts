import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pdfToText } from '../../../shared/crawl/pdf-text.ts';
import { CrawlError } from '../../../shared/errors.ts';
import { minimalPdf } from '../../helpers/archive-builders.ts';

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
});
