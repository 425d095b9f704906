/**
 * The sites the benchmark crawls: the Boost.Math documentation (bench/fixtures/boost-math,
 * SOURCE.txt there), and generated demo sites for the links-per-page comparison. Each is served
 * by the test site server, so Trawl and Crawlee see the same server.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../cli/emulator.ts';
import { type DemoSiteCounts, generateDemoSite } from '../demo/generate-site.ts';
import { type CrawlConfigInput, DEFAULT_IGNORED_EXTENSIONS } from '../shared/config.ts';
import { type SiteServer, startSiteServer } from '../test/helpers/site-server.ts';

const FIXTURE = join(PROJECT_ROOT, 'bench/fixtures/boost-math');
/** Where the fixture's archive is unpacked: the web root the corpus is served from. */
export const CORPUS_ROOT = join(PROJECT_ROOT, '.bench-cache/boost-math');
const START_PATH = '/doc/html/index.html';

export interface BenchSite {
  kind: 'corpus' | 'generated';
  description: string;
  server: SiteServer;
  /** the HTML root for the extraction micro benchmark */
  htmlRoot: string;
  startUrl: string;
  /** Trawl's scope for this site */
  trawl: Pick<CrawlConfigInput, 'startUrls' | 'scope'>;
  /** the same scope for Crawlee's enqueueLinks */
  crawleeScope: RegExp;
  /** Crawlee must drop query strings too when Trawl does (scope.keepQueryParams: []) */
  stripQuery: boolean;
  /** what a correct crawl finds: paths (corpus) or a count (generated) */
  expectedPaths?: string[];
  expectedPages?: number;
  counts?: DemoSiteCounts;
  close(): Promise<void>;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ignoredExt = `(?!.*\\.(?:${DEFAULT_IGNORED_EXTENSIONS.join('|')})(?:[?#]|$))`;

/**
 * Unpacks the Boost docs once (the archive is 1.3 MB in git, 13.6 MB of HTML unpacked) into a
 * temporary folder renamed into place, so an interrupted unpack is never mistaken for the corpus.
 * False when the fixture is missing (a trimmed checkout): the bench falls back to a generated site.
 */
export function corpusAvailable(): boolean {
  if (existsSync(join(CORPUS_ROOT, 'crawl_expectations.json'))) return true;
  const archive = join(FIXTURE, 'doc-html.tar.gz');
  if (!existsSync(archive)) return false;
  mkdirSync(dirname(CORPUS_ROOT), { recursive: true });
  const partial = mkdtempSync(`${CORPUS_ROOT}.partial-`);
  execFileSync('tar', ['-xzf', archive, '-C', partial]);
  writeFileSync(
    join(partial, 'crawl_expectations.json'),
    readFileSync(join(FIXTURE, 'crawl_expectations.json')),
  );
  renameSync(partial, CORPUS_ROOT);
  return true;
}

/**
 * The Boost docs: served from the corpus root, crawled from /doc/html/index.html. Scope: under the
 * start path (FDSE "Index Entire Site", `scope.underStartPath`) — a spider restricted to /doc/html/
 * finds exactly the 509 pages of crawl_expectations.json (docs/design-facts.md); same-hostname would find 643.
 */
export async function corpusSite(): Promise<BenchSite> {
  const server = await startSiteServer({ root: CORPUS_ROOT });
  const expectations = JSON.parse(readFileSync(join(CORPUS_ROOT, 'crawl_expectations.json'), 'utf8')) as {
    reachable_pages: string[];
  };
  const startUrl = `${server.url}${START_PATH}`;
  return {
    kind: 'corpus',
    description: `Boost.Math docs (bench/fixtures/boost-math), start ${START_PATH}, scope under /doc/html/`,
    server,
    htmlRoot: join(CORPUS_ROOT, 'doc'),
    startUrl,
    trawl: { startUrls: [startUrl], scope: { underStartPath: true } },
    crawleeScope: new RegExp(`^${escapeRegex(server.url)}/doc/html/${ignoredExt}`),
    stripQuery: false,
    expectedPaths: expectations.reachable_pages,
    expectedPages: expectations.reachable_pages.length,
    close: () => server.close(),
  };
}

/** A generated demo site (demo/generate-site.ts) in a temporary directory, removed on close. */
export async function generatedSite(
  pages: number,
  opts: { linksPerPage?: number; seed?: number; noSitemap?: boolean } = {},
): Promise<BenchSite> {
  const { linksPerPage, seed = 7 } = opts;
  const dir = mkdtempSync(join(tmpdir(), 'trawl-bench-site-'));
  const server = await startSiteServer({ root: dir });
  const counts = generateDemoSite(dir, {
    pages,
    seed,
    baseUrl: server.url,
    ...(linksPerPage ? { linksPerPage } : {}),
  });
  // Without the robots.txt Sitemap: line the crawler finds every page through links, so the
  // links-per-page comparison measures link handling (the sitemap would list every URL up front).
  if (opts.noSitemap)
    server.route('/robots.txt', {
      headers: { 'Content-Type': 'text/plain' },
      body: 'User-agent: *\nDisallow: /private/\n',
    });
  const startUrl = `${server.url}/`;
  return {
    kind: 'generated',
    description: `generated site, ${pages} pages, ${linksPerPage ?? '5–15'} links per page (seed ${seed})${opts.noSitemap ? ', no sitemap' : ''}`,
    server,
    htmlRoot: dir,
    startUrl,
    // The demo site's utm_source noise is dropped, as the pipeline test does.
    trawl: { startUrls: [startUrl], scope: { keepQueryParams: [] } },
    crawleeScope: new RegExp(`^${escapeRegex(server.url)}/${ignoredExt}`),
    stripQuery: true,
    expectedPages: counts.expectedIndexed,
    counts,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Compares crawled URLs with the expected paths: how many are missing and how many extra. */
export function comparePaths(
  urls: readonly string[],
  expected: string[] | undefined,
): { missing: string[]; extra: string[] } | null {
  if (!expected) return null;
  const got = new Set(urls.map((u) => new URL(u).pathname));
  const want = new Set(expected);
  return { missing: [...want].filter((p) => !got.has(p)), extra: [...got].filter((p) => !want.has(p)) };
}
