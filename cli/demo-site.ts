/** `--demo`: the bundled demo website, generated under .trawl/ and served on loopback. */
import { join } from 'node:path';
import { generateDemoSite } from '../demo/generate-site.ts';
import type { CrawlConfig } from '../shared/config.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';
import { stateDir } from './emulator.ts';

/** The start URL the demo config names; replaced by the address actually served. */
const PLACEHOLDER = 'http://127.0.0.1:8080';

/** Serves the demo site (on port 8080 when free, so URLs stay the same from run to run). */
export async function startDemoSite(config: CrawlConfig) {
  const dir = join(stateDir(), 'demo-site');
  const server = await startSiteServer({ root: dir, port: 8080 }).catch(() => startSiteServer({ root: dir }));
  const counts = generateDemoSite(dir, { baseUrl: server.url });
  const swap = (u: string) => (u.startsWith(PLACEHOLDER) ? server.url + u.slice(PLACEHOLDER.length) : u);
  return {
    url: server.url,
    pages: counts.pages,
    counts,
    config: { ...config, startUrls: config.startUrls.map(swap), sitemaps: config.sitemaps.map(swap) },
    close: () => server.close(),
  };
}
