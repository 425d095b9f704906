/**
 * A loopback site whose pages are found a few at a time (page i links to the next eight), so a
 * crawl of it takes many short fetch rounds: a signal or a kill lands in the middle of one.
 * Every page answers after `delayMs`, and the server logs every request (requests are counted).
 */
import { type Route, type SiteServer, startSiteServer } from './site-server.ts';

export function chainPage(i: number, pages: number): string {
  const links = [1, 2, 3, 4, 5, 6, 7, 8]
    .map((d) => i + d)
    .filter((j) => j < pages)
    .map((j) => `<a href="/p/${j}">page ${j}</a>`)
    .join(' ');
  return `<!doctype html><html><head><title>Page ${i}</title></head><body><p>Text of page ${i}.</p>${links}</body></html>`;
}

export async function startChainSite(pages: number, delayMs: number): Promise<SiteServer> {
  const routes: Record<string, Route> = {};
  for (let i = 0; i < pages; i++) {
    routes[i === 0 ? '/' : `/p/${i}`] = {
      handler: (_req, res) => {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end(chainPage(i, pages));
        }, delayMs);
      },
    };
  }
  routes['/robots.txt'] = { status: 404, body: 'none' };
  return startSiteServer({ routes });
}

/** Requests per page path (robots.txt left out). */
export function requestsPerPath(site: SiteServer, from = 0): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of site.requests.slice(from)) {
    if (r.path === '/robots.txt') continue;
    counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
  }
  return counts;
}
