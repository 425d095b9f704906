/**
 * A loopback site built to exercise each scope setting and crawl rule (issue #3), shared by
 * test/integration/scope.test.ts and scope-rules.test.ts. Every section is a small hub page whose
 * links each hit one filter, so one short crawl per setting shows it honoured.
 */
import type http from 'node:http';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { uniqueCrawlName } from './emulator.ts';
import { type Route, type SiteServer, startSiteServer } from './site-server.ts';

/** An HTML page titled `title` linking to each of `links` (hrefs as written). */
export function page(title: string, links: string[] = []): Route {
  const anchors = links.map((href) => `<li><a href="${href.replace(/&/g, '&amp;')}">${href}</a></li>`);
  return {
    body: `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><ul>${anchors.join('')}</ul></body></html>`,
  };
}

/** Path of a generated over-long link (longer than the 200 characters the defaults crawl allows). */
export const LONG_PATH = `/long/${'x'.repeat(240)}.html`;

/**
 * Seed 004's calendar trap: every `/cal` page links to the next month, without end. Each link
 * carries `id=7` (the parameter that matters) and year/month/day (the ones that only make traps).
 */
function calendar(req: http.IncomingMessage, res: http.ServerResponse): void {
  const q = new URL(req.url ?? '/', 'http://x').searchParams;
  const month = Number(q.get('month') ?? 11) + 1;
  const year = Number(q.get('year') ?? 2018) + Math.floor((month - 1) / 12);
  const next = `/cal?year=${year}&month=${((month - 1) % 12) + 1}&day=8&id=7`;
  const body = page(`Calendar ${year}`, [next]).body as string;
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(body);
}

/** A host name the crawl configs resolve to 127.0.0.1 (fetch.resolve): another host name than site A's. */
export const OTHER_HOSTNAME = 'offsite.test';

/**
 * The routes of site A. `other` is site B's origin: the same host name (127.0.0.1) on another
 * port. `otherName` is site B under another host name (offsite.test:PORT).
 */
export function siteRoutes(other: string, otherName: string): Record<string, Route> {
  // biome-ignore format: link lists stay compact, one hub per block
  return {
    // Defaults hub: same host and scheme, ignored extensions, hard limits, a depth chain.
    '/': page('Home', [
      '/a.html', '/d1.html', `${other}/b.html`, 'ftp://127.0.0.1/file.txt', 'mailto:web@example.com',
      '/img.png', '/style.css', '/app.js', '/notes.log', LONG_PATH, '/a.html#section',
    ]),
    '/a.html': page('A'),
    '/d1.html': page('Depth 1', ['/d2.html']),
    '/d2.html': page('Depth 2', ['/d3.html']),
    '/d3.html': page('Depth 3', ['/d4.html']),
    '/d4.html': page('Depth 4'),
    '/offsite.html': page('Offsite hub', [`${other}/b.html`, `${otherName}/b2.html`, '/a.html']),
    // underStartPath: /docs/ and below, not /docs-old/ (a prefix of the string, not of the directory).
    '/docs/index.html': page('Docs', ['a.html', 'sub/b.html', '/other.html', '/docs-old/x.html', '/']),
    '/docs/a.html': page('Docs A'),
    '/docs/sub/b.html': page('Docs B'),
    '/other.html': page('Other'),
    '/docs-old/x.html': page('Old docs'),
    // Query strings and the calendar trap.
    '/query/index.html': page('Query', ['/query/plain.html', '/query/page.html?x=1', '/cal?year=2018&month=11&day=8&id=7']),
    '/query/plain.html': page('Plain'),
    '/query/page.html': page('Page with a query'),
    '/cal': { handler: calendar },
    // mustContain / mustNotContain and include / exclude.
    '/filter/index.html': page('Filter', [
      '/filter/shop/a.html', '/filter/shop/print/a.html', '/filter/shop/b.cgi', '/filter/blog/x.html',
      '/filter/blog/y.html#/shop/', '/filter/other.html',
    ]),
    '/filter/shop/a.html': page('Shop A'),
    '/filter/shop/print/a.html': page('Shop print A'),
    '/filter/shop/b.cgi': page('Shop CGI'),
    '/filter/blog/x.html': page('Blog X'),
    '/filter/blog/y.html': page('Blog Y'),
    '/filter/other.html': page('Filter other'),
    // Crawl rules (seed 001).
    '/rules/index.html': page('Rules', [
      '/rules/private/x.html', '/rules/list.html', '/rules/leaf.html', '/rules/special.html',
      '/rules/excluded.html', '/rules/manuals/m.html', '/rules/urgent.html', '/rules/later.html',
    ]),
    '/rules/private/x.html': page('Private'),
    '/rules/list.html': page('List', ['/rules/list-child.html']),
    '/rules/list-child.html': page('List child'),
    '/rules/leaf.html': page('Leaf', ['/rules/leaf-child.html']),
    '/rules/leaf-child.html': page('Leaf child'),
    '/rules/special.html': page('Special'),
    '/rules/excluded.html': page('Excluded'),
    '/rules/manuals/m.html': page('Manual'),
    '/rules/urgent.html': page('Urgent'),
    '/rules/later.html': page('Later'),
  };
}

/** Site B: another host:port, so every link to it is offsite for site A's start URLs. */
export function otherRoutes(): Record<string, Route> {
  return { '/b.html': page('B'), '/b2.html': page('B2') };
}

export interface ScopeSites {
  a: SiteServer;
  b: SiteServer;
  close(): Promise<void>;
}

/** Site A serving `routes` beside an empty site B: a one-site test of what crawlSite gives. */
export async function startSiteA(routes: Record<string, Route>): Promise<ScopeSites> {
  const a = await startSiteServer({ routes });
  const b = await startSiteServer({});
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** Starts site B, then site A linking to it. */
export async function startScopeSites(): Promise<ScopeSites> {
  const b = await startSiteServer({ routes: otherRoutes() });
  const a = await startSiteServer({ routes: siteRoutes(b.url, `http://${OTHER_HOSTNAME}:${b.port}`) });
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

export interface CrawlResult {
  docs: Record<string, unknown>[];
  urls: Record<string, unknown>[];
  /** the crawl's `stageStats` counters (reset before it) */
  stats: Record<string, number>;
  /** paths (with query) site A / site B answered, robots.txt left out */
  seenA: string[];
  seenB: string[];
}

/** Crawls site A from `startPath` with config overrides, through cli/session.ts, and gathers the results. */
export async function crawlSite(
  sites: ScopeSites,
  startPath: string,
  extra: Partial<CrawlConfigInput> = {},
): Promise<CrawlResult> {
  sites.a.requests.length = 0;
  sites.b.requests.length = 0;
  for (const key of Object.keys(stageStats)) delete stageStats[key];
  const config = parseConfig({
    name: uniqueCrawlName('scope'),
    startUrls: [`${sites.a.url}${startPath}`],
    ...extra,
    fetch: { allowPrivateNetworks: true, resolve: { [OTHER_HOSTNAME]: '127.0.0.1' }, ...extra.fetch },
  });
  const session = await openSession(config);
  await crawl(session);
  const docs: Record<string, unknown>[] = [];
  for await (const d of documents(session)) docs.push(d);
  const urls: Record<string, unknown>[] = [];
  for await (const u of urlStates(session)) urls.push(u);
  const seen = (s: SiteServer) => s.requests.map((r) => r.path).filter((p) => p !== '/robots.txt');
  return { docs, urls, stats: { ...stageStats }, seenA: seen(sites.a), seenB: seen(sites.b) };
}

/** Site A paths of a crawl result's URLs (documents or URL states), sorted. */
export function pathsOf(sites: ScopeSites, items: Record<string, unknown>[]): string[] {
  return items.map((i) => String(i.url).replace(sites.a.url, '')).sort();
}

/** The `rejected:<reason>` counters of a crawl, without the prefix. */
export function rejections(stats: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(stats)) if (key.startsWith('rejected:')) out[key.slice(9)] = n;
  return out;
}
