import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pdfToText } from '../../../shared/crawl/pdf-text.ts';
import { CrawlError } from '../../../shared/errors.ts';

/** A minimal PDF 1.4 with one page showing `text` in Helvetica; xref offsets computed, not guessed. */
function minimalPdf(text: string, title?: string): Uint8Array {
  const stream = `BT /F1 24 Tf 72 700 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Title (${title ?? ''}) /Producer (trawl test) >>`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length); // ASCII only, so string length = byte offset
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = pdf.length;
  // PDF 1.4 3.4.3: each xref entry is exactly 20 bytes, "nnnnnnnnnn ggggg n \n".
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return new TextEncoder().encode(pdf);
}

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
