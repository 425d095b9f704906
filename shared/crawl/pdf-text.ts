/**
 * PDF to text with unpdf (a serverless build of pdf.js bundled in the package: no worker, no
 * network, no native code). Seed 004 indexes the text of PDF documents like that of HTML pages.
 */
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { CrawlError } from '../errors.ts';

/** The text of a PDF document for indexing. */
export interface PdfText {
  /** all pages' text, whitespace collapsed to single spaces */
  text: string;
  /** the document information dictionary's Title, else the XMP dc:title, else null */
  title: string | null;
  pages: number;
}

/** Extracts the text, title and page count of a PDF; throws a CrawlError when it cannot be read. */
export async function pdfToText(bytes: Uint8Array): Promise<PdfText> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js may transfer (detach) the buffer it is given, so it gets a copy; warnings stay quiet.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (error) {
    throw new CrawlError(`not a readable PDF: ${(error as Error).message}`, { cause: error });
  }
  try {
    const { text, totalPages } = await extractText(pdf, { mergePages: true });
    return { text: collapse(text), title: await titleOf(pdf), pages: totalPages };
  } catch (error) {
    throw new CrawlError(`PDF text extraction failed: ${(error as Error).message}`, { cause: error });
  } finally {
    await pdf.loadingTask.destroy(); // frees the document in the fake worker
  }
}

async function titleOf(pdf: Awaited<ReturnType<typeof getDocumentProxy>>): Promise<string | null> {
  const { info, metadata } = await getMeta(pdf);
  const fromInfo = typeof info['Title'] === 'string' ? collapse(info['Title']) : '';
  if (fromInfo !== '') return fromInfo;
  // unpdf hands an empty object when the PDF has no XMP metadata stream.
  const fromXmp = typeof metadata?.get === 'function' ? metadata.get('dc:title') : null;
  return typeof fromXmp === 'string' && collapse(fromXmp) !== '' ? collapse(fromXmp) : null;
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
