/**
 * Serves the bundled demo site until killed: the background server `trawl deploy` starts for the
 * demo config, so the deployed functions have the site to crawl. Prints {url, pages} once ready.
 */

import { loadConfigFile } from './config-file.ts';
import { startDemoSite } from './demo-site.ts';

const demo = await startDemoSite(loadConfigFile(process.argv[2] as string));
process.stdout.write(`${JSON.stringify({ url: demo.url, pages: demo.pages })}\n`);
process.on('SIGTERM', () => void demo.close().then(() => process.exit(0)));
