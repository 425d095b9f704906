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
}

export interface CrawleeOptions {
  startUrl: string;
  /** URLs a link must match to be followed: the same scope the Trawl run gets */
  scope: RegExp;
  maxConcurrency?: number;
  minConcurrency?: number;
}

/** Crawls from `startUrl`, following <a href> links inside `scope`; counts pages handled. */
export async function runCrawlee(opts: CrawleeOptions): Promise<CrawleeResult> {
  log.setLevel(LogLevel.INFO);
  const urls: string[] = [];
  let failed = 0;
  const config = new Configuration({ persistStorage: false, purgeOnStart: true, availableMemoryRatio: 0.5 });
  const crawler = new CheerioCrawler(
    {
      maxConcurrency: opts.maxConcurrency ?? 50,
      minConcurrency: opts.minConcurrency ?? 10,
      autoscaledPoolOptions: { desiredConcurrency: opts.minConcurrency ?? 10 },
      maxRequestRetries: 1,
      // Trawl ignores these links by extension (seed 004 list); Crawlee would fetch and fail them.
      async requestHandler({ request, enqueueLinks }) {
        urls.push(request.loadedUrl ?? request.url);
        await enqueueLinks({ regexps: [opts.scope] });
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
  await crawler.teardown?.();
  return { pages: urls.length, failed, seconds, pagesPerSecond: urls.length / seconds, urls };
}
