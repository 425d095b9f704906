/**
 * The fetch function's memory under its worst case: `fetch.concurrency` bodies of `fetch.maxBytes`
 * read at once, base64-encoded and held until written. Runs the real fetch stage in this process
 * (as a Lambda container does) against loopback sites serving large pages, samples the process's
 * RSS every 10 ms and prints its baseline and peak, so the fetch function's memory
 * (shared/topology.ts) is chosen by measurement.
 * Usage: node --import tsx bench/fetch-memory.ts [pages of 10 MB, default 64] [concurrency, default 16]
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const { fork } = await import('node:child_process');
const { mkdtempSync, writeFileSync } = await import('node:fs');
const { fileURLToPath } = await import('node:url');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const { startEmulator, useEmulatorEnv } = await import('../cli/emulator.ts');
const { openSession } = await import('../cli/session.ts');
const { parseConfig } = await import('../shared/config.ts');
const { depsFromEnv } = await import('../shared/stages/deps.ts');
const { runFetchStage } = await import('../shared/stages/fetch-stage.ts');
const { sendTasks } = await import('../shared/stages/send-tasks.ts');
const { startSiteServer } = await import('../test/helpers/site-server.ts');

const PAGES = Number(process.argv[2] ?? 64);
const CONCURRENCY = Number(process.argv[3] ?? 16);
const MB = 1024 * 1024;
const HOSTS = 4;

const filler = `<p>${'lorem ipsum dolor sit amet '.repeat(40)}</p>\n`;
const html = `<html><body>${filler.repeat(Math.ceil((10 * MB) / filler.length))}</body></html>`;

if (process.argv[4] === 'serve') {
  // The sites run in a child process: their buffers are not the fetch stage's memory.
  const dir = mkdtempSync(join(tmpdir(), 'trawl-fetch-memory-'));
  for (let i = 0; i < PAGES; i++) writeFileSync(join(dir, `${i}.html`), html);
  const sites = await Promise.all(Array.from({ length: HOSTS }, () => startSiteServer({ root: dir })));
  process.send?.(sites.map((s) => s.url));
  await new Promise(() => undefined);
}

const server = fork(fileURLToPath(import.meta.url), [String(PAGES), String(CONCURRENCY), 'serve'], {
  execArgv: ['--import', 'tsx'],
});
const siteUrls = await new Promise<string[]>((resolve) =>
  server.once('message', (m) => resolve(m as string[])),
);
const sites = siteUrls.map((url) => ({ url, close: async () => undefined }));
process.on('exit', () => server.kill());
const emulator = await startEmulator();
useEmulatorEnv(emulator.endpoint);
let peak = 0;
let atPeak = process.memoryUsage();
const sample = setInterval(() => {
  const rss = process.memoryUsage.rss();
  if (rss > peak) {
    peak = rss;
    atPeak = process.memoryUsage();
  }
}, 10);
try {
  const config = parseConfig({
    name: `fetch-memory-${process.pid}`,
    startUrls: sites.map((s) => `${s.url}/0.html`),
    fetch: { allowPrivateNetworks: true, concurrency: CONCURRENCY, maxBytes: 10 * MB },
  });
  await openSession(config);
  const deps = depsFromEnv();
  await sendTasks(
    deps,
    Array.from({ length: PAGES }, (_, i) => ({
      url: `${sites[i % HOSTS]?.url}/${i}.html`,
      depth: 0,
      queue: 'user' as const,
      index: true,
      follow: true,
      priority: 0,
    })),
  );
  global.gc?.();
  const baseline = process.memoryUsage.rss();
  peak = baseline;
  const summary = await runFetchStage(deps, { deadline: Date.now() + 120_000 });
  console.log(
    `fetch memory: ${summary.fetched} pages of ${(html.length / MB).toFixed(1)} MB, concurrency ${CONCURRENCY}: ` +
      `RSS before ${(baseline / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB, ` +
      `maxRSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB; at the peak heap ${(atPeak.heapUsed / MB).toFixed(0)} of ${(atPeak.heapTotal / MB).toFixed(0)} MB, external ${(atPeak.external / MB).toFixed(0)} MB, ` +
      `buffers ${(atPeak.arrayBuffers / MB).toFixed(0)} MB`,
  );
} finally {
  clearInterval(sample);
  server.kill();
  await emulator.stop();
}
