/**
 * Crawlee's CheerioCrawler over the same loopback site and scope as Trawl (issue #7: pages/s
 * compared in the same run). In-memory storage only, so nothing is written to ./storage.
 */
import { performance } from 'node:perf_hooks';
import { CheerioCrawler, Configuration, LogLevel, log } from '@crawlee/cheerio';

export interface CrawleeResult {
  pages: number;
  failed: number;
  seconds: number;
  pagesPerSecond: number;
  urls: string[];
  minConcurrency: number;
  maxConcurrency: number;
}

export interface CrawleeOptions {
  startUrl: string;
  /** URLs a link must match to be followed: the same scope the Trawl run gets */
  scope: RegExp;
  /** drop query strings and fragments (Trawl's scope.keepQueryParams: []) */
  stripQuery?: boolean;
  /** honour robots.txt, as Trawl does by default (generated sites have a Disallow) */
  respectRobotsTxt?: boolean;
  minConcurrency?: number;
  maxConcurrency?: number;
}

/** Crawls from `startUrl`, following <a href> links inside `scope`; counts pages handled. */
export async function runCrawlee(opts: CrawleeOptions): Promise<CrawleeResult> {
  log.setLevel(LogLevel.ERROR);
  const urls: string[] = [];
  let failed = 0;
  // docs/design-facts.md measured Crawlee at concurrency 10–50 on this kind of machine: the same range here.
  const minConcurrency = opts.minConcurrency ?? 10;
  const maxConcurrency = opts.maxConcurrency ?? 50;
  const config = new Configuration({ persistStorage: false, purgeOnStart: true });
  const crawler = new CheerioCrawler(
    {
      minConcurrency,
      maxConcurrency,
      maxRequestRetries: 1,
      respectRobotsTxtFile: opts.respectRobotsTxt ?? false,
      async requestHandler({ request, enqueueLinks }) {
        urls.push(request.loadedUrl ?? request.url);
        await enqueueLinks({
          regexps: [opts.scope],
          transformRequestFunction: (req) => {
            if (!opts.stripQuery) return req;
            const u = new URL(req.url);
            u.search = '';
            u.hash = '';
            return { ...req, url: u.href };
          },
        });
      },
      failedRequestHandler() {
        failed++;
      },
    },
    config,
  );
  const started = performance.now();
  await crawler.run([opts.startUrl]);
  const seconds = (performance.now() - started) / 1000;
  await crawler.teardown();
  return {
    pages: urls.length,
    failed,
    seconds,
    pagesPerSecond: urls.length / seconds,
    urls,
    minConcurrency,
    maxConcurrency,
  };
}
