/**
 * PDF to text with unpdf (a serverless build of pdf.js bundled in the package: no worker, no
 * network, no native code). Seed 004 indexes the text of PDF documents like that of HTML pages.
 */
import { getDocumentProxy, getMeta } from 'unpdf';
import { CrawlError } from '../../errors.ts';
import { collapse } from './visible-text.ts';

export { collapse };

/** The text of a PDF document for indexing. */
export interface PdfText {
  /** all pages' text, whitespace collapsed to single spaces */
  text: string;
  /** the document information dictionary's Title, else the XMP dc:title, else null */
  title: string | null;
  /**
   * the information dictionary's Author, Subject and Keywords (PDF 32000 §14.3.3), under the
   * lower-case names an HTML page's `<meta>` gives them (`extract.metadataMapping` maps both)
   */
  info?: Partial<Record<PdfInfoName, string>>;
  pages: number;
  /** set when a limit stopped the extraction early: which (summary key) and why (the URL's note) */
  cut?: { limit: PdfLimitKey; reason: string };
}

/** The information dictionary entries a document gets, by the name they are mapped under. */
const INFO: Record<string, PdfInfoName> = { Author: 'author', Subject: 'subject', Keywords: 'keywords' };
export type PdfInfoName = 'author' | 'subject' | 'keywords';

/** The summary keys of the limits that can cut a PDF's text. */
export type PdfLimitKey = 'limit-pdf-pages' | 'limit-pdf-time' | 'limit-pdf-memory';

/**
 * Reads a PDF within limits.pdfPages / pdfTimeMs / pdfMemoryMb: the port through which the page
 * decision gets PDF text (the extract stage supplies one that runs pdf.js in a worker thread).
 */
export type PdfReader = (bytes: Uint8Array, limits: PdfReadLimits) => Promise<PdfText>;

/** limits.pdfPages / pdfTimeMs / pdfMemoryMb, and what is left of the invocation's time for PDFs. */
export interface PdfReadLimits {
  maxPages: number;
  maxMs: number;
  maxHeapMb: number;
  /** ms the caller can still wait (its Lambda timeout); when under maxMs the PDF is stopped at it */
  leftMs?: number;
}

/** Told as extraction goes, so a caller that stops it (a worker's owner) keeps what was read. */
export interface PdfProgress {
  opened(pages: number): void;
  page(text: string): void;
}

/** Bounds on one extraction; `clock` (ms) is the caller's, so this module reads no clock itself. */
export interface PdfLimits {
  maxPages: number;
  maxMs: number;
  clock: () => number;
}

const UNBOUNDED: PdfLimits = {
  maxPages: Number.POSITIVE_INFINITY,
  maxMs: Number.POSITIVE_INFINITY,
  clock: () => 0,
};

/** Extracts the text, title and page count of a PDF; throws a CrawlError when it cannot be read. */
export async function pdfToText(
  bytes: Uint8Array,
  limits: PdfLimits = UNBOUNDED,
  progress?: PdfProgress,
): Promise<PdfText> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js may transfer (detach) the buffer it is given, so it gets a copy; warnings stay quiet.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (error) {
    throw new CrawlError(`not a readable PDF: ${(error as Error).message}`, { cause: error });
  }
  try {
    progress?.opened(pdf.numPages);
    const { text, cut } = await pagesText(pdf, limits, progress);
    const { title, info } = await documentInfo(pdf);
    return {
      text: collapse(text),
      title,
      ...(Object.keys(info).length > 0 ? { info } : {}),
      pages: pdf.numPages,
      ...(cut ? { cut } : {}),
    };
  } catch (error) {
    throw new CrawlError(`PDF text extraction failed: ${(error as Error).message}`, { cause: error });
  } finally {
    await pdf.loadingTask.destroy(); // frees the document in the fake worker
  }
}

type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/**
 * Page by page, each freed before the next (unpdf's extractText holds every page at once: a
 * 3,000-page PDF took ~197 MB), up to `maxPages` and while `maxMs` has not passed.
 */
async function pagesText(
  pdf: PdfDocument,
  limits: PdfLimits,
  progress?: PdfProgress,
): Promise<Pick<PdfText, 'text' | 'cut'>> {
  const started = limits.clock();
  const parts: string[] = [];
  const last = Math.min(pdf.numPages, limits.maxPages);
  for (let n = 1; n <= last; n++) {
    if (n > 1 && limits.clock() - started > limits.maxMs) {
      const reason = `${n - 1} of ${pdf.numPages} pages read within limits.pdfTimeMs (${limits.maxMs} ms)`;
      return { text: parts.join(' '), cut: { limit: 'limit-pdf-time', reason } };
    }
    const page = await pdf.getPage(n);
    const content = await page.getTextContent();
    const text = content.items
      .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
      .join('');
    parts.push(text);
    progress?.page(text);
    page.cleanup();
  }
  if (last === pdf.numPages) return { text: parts.join(' ') };
  const reason = `${last} of ${pdf.numPages} pages read (limits.pdfPages)`;
  return { text: parts.join(' '), cut: { limit: 'limit-pdf-pages', reason } };
}

async function documentInfo(
  pdf: PdfDocument,
): Promise<{ title: string | null; info: NonNullable<PdfText['info']> }> {
  const { info, metadata } = await getMeta(pdf);
  const text = (value: unknown) => (typeof value === 'string' ? collapse(value) : '');
  const found: NonNullable<PdfText['info']> = {};
  for (const [key, name] of Object.entries(INFO)) {
    const value = text(info[key]);
    if (value !== '') found[name] = value;
  }
  const fromInfo = text(info['Title']);
  if (fromInfo !== '') return { title: fromInfo, info: found };
  // unpdf hands an empty object when the PDF has no XMP metadata stream.
  const fromXmp = text(typeof metadata?.get === 'function' ? metadata.get('dc:title') : null);
  return { title: fromXmp !== '' ? fromXmp : null, info: found };
}
