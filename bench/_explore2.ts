import { runCrawlee } from './crawlee-run.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';
const site = await startSiteServer({ root: '/work/shared/corpora/site' });
const esc = site.url.replace(/[.]/g, '\\.');
const r = await runCrawlee({ minConcurrency: 25, maxConcurrency: 25, startUrl: `${site.url}/doc/html/index.html`, scope: new RegExp(`^${esc}/doc/html/[^?#]*\\.html?(?:[?#].*)?$`) });
console.log({ ...r, urls: undefined, reqs: site.requests.length, non200: site.requests.filter(x=>x.status!==200).length });
await site.close();
