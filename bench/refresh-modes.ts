/**
 * `npm run bench:refresh`: what one refresh cycle costs on the 300-page demo site, with orphans
 * off and on (refresh.orphanGrace 14d). Printed figures, not a timed test: site requests (and how
 * many were 304s) and DynamoDB calls per cycle (maxAge 48h), on the embedded emulator with a
 * shifted clock. With orphans on, every other cycle reads links (whole fetches and stamps).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator, useEmulatorEnv } from '../cli/emulator.ts';
import { crawl, openSession, refresh } from '../cli/session.ts';
import { generateDemoSite } from '../demo/generate-site.ts';
import { requestCounts, resetRequestCounts } from '../shared/aws/request-counter.ts';
import { parseConfig } from '../shared/config.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';

const DAY = 86_400_000;

async function main(): Promise<void> {
  const emulator = await startEmulator();
  useEmulatorEnv(emulator.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'trawl-bench-refresh-'));
  const pages = generateDemoSite(dir);
  const site = await startSiteServer({ root: dir });
  try {
    console.log(`demo site: ${JSON.stringify(pages)}`);
    for (const orphanGrace of [null, '14d'] as const) {
      const config = parseConfig({
        name: `bench-refresh-${orphanGrace ? 'orphans' : 'plain'}-${process.pid}`,
        startUrls: [`${site.url}/`],
        scope: { keepQueryParams: ['id'] },
        fetch: { allowPrivateNetworks: true },
        refresh: { maxAge: '48h', orphanGrace },
      });
      await crawl(await openSession(config));
      for (const days of orphanGrace ? [2.1, 4.1, 6.1, 8.1] : [2.1, 4.1]) {
        resetRequestCounts();
        const since = site.requests.length;
        await refresh(await openSession(config, { now: new Date(Date.now() + days * DAY) }));
        const got = site.requests.slice(since);
        const ddb = Object.entries(requestCounts.calls)
          .filter(([k]) => k.startsWith('DynamoDB'))
          .map(([k, v]) => `${k.slice(9)} ${v}`)
          .join(', ');
        const notModified = got.filter((r) => r.status === 304).length;
        console.log(
          `orphanGrace ${orphanGrace ?? 'off'}, cycle at +${days} d: ${got.length} site requests (${notModified} answered 304); DynamoDB: ${ddb}`,
        );
      }
    }
  } finally {
    await site.close();
    await emulator.stop();
  }
}

await main();
