/**
 * `limits`: bounds on what comes from outside (pages, sitemaps, PDFs, archives, robots.txt,
 * response headers) and on the config itself. Each hit is counted in the crawl summary
 * (`rejected: limit-…`) and written in the URL's note: nothing is cut silently.
 */
import { z } from 'zod';

const MiB = 1024 * 1024;
const count = (fallback: number) => z.number().int().positive().default(fallback);

export const LimitsSchema = z
  .strictObject({
    /** @default 10000 — links taken from one page (HTML); the rest are dropped and counted */
    linksPerPage: count(10_000),
    /** @default 50000 — URLs taken from one sitemap or feed (sitemaps.org: 50,000 a file) */
    sitemapUrls: count(50_000),
    /** @default 52428800 — bytes of one sitemap after gunzip (sitemaps.org: 50 MB); a larger one is not read */
    sitemapBytes: count(50 * MiB),
    /** @default 1000 — sitemaps a site has in the crawl at once: robots.txt `Sitemap:` lines and every sitemap index's children; a forgotten one (an index's retired child) gives its place to the next */
    sitemapsPerSite: count(1000),
    /** @default 1000 — PDF pages whose text is extracted; the rest are left out */
    pdfPages: count(1000),
    /** @default 10485760 — a larger PDF is not parsed (its URL is ignored with a note) */
    pdfBytes: count(10 * MiB),
    /** @default 20000 — PDF text extraction is stopped after this many milliseconds, mid-page too (it runs in a worker thread); the pages read so far are kept */
    pdfTimeMs: count(20_000),
    /** @default 128 — heap (MB, V8 old generation) of the worker thread that extracts PDF text; a PDF needing more is stopped, the pages read so far kept. pdf.js also holds buffers outside it: a hostile page at 128 peaked the process at ~390 MB RSS (extract has 512 MB) */
    pdfMemoryMb: z.number().int().min(16).max(4096).default(128),
    /** @default 1000 — archive entries (zip, tar, gzip) taken over all nesting levels; also the parts read from one Office document (.docx, .xlsx…: a zip) */
    archiveEntries: count(1000),
    /** @default 104857600 — uncompressed bytes taken from one archive over all levels, or from one Office document's parts; an entry lying about its size is cut and counted */
    archiveBytes: count(100 * MiB),
    /** @default 3 — nested archive levels opened below the top one */
    archiveDepth: z.number().int().nonnegative().max(10).default(3),
    /** @default 60000 — ceiling on a robots.txt Crawl-delay (a site cannot ask for a day) */
    crawlDelayMs: count(60_000),
    /** @default 3600000 — ceiling on a 429/503 Retry-After */
    retryAfterMs: count(3_600_000),
    /** @default 65536 — response status line + headers; more is a permanent `header-overflow` error */
    headerBytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024)
      .default(64 * 1024),
    /** @default 1000 — characters of a document's title (a page can put megabytes in <title>); the rest is cut */
    titleChars: count(1000),
    /** @default 10000 — characters of each metadata value of a document (mapped metas, addMeta, the description); the rest is cut */
    metaValueChars: count(10_000),
    /** @default 10000 — crawl rules in the config (JSON or XML form); more is a config error */
    ruleCount: count(10_000),
  })
  .prefault({});

export type Limits = z.infer<typeof LimitsSchema>;
