/** `--demo`: the bundled demo website, generated under .trawl/ and served on loopback. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generateDemoSite } from '../demo/generate-site.ts';
import type { CrawlConfig } from '../shared/config.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';
import { PROJECT_ROOT, stateDir } from './emulator.ts';
import { alive } from './processes.ts';

/** Whether `file` is the bundled demo config, whose start URL is swapped for the address served. */
export function isDemoConfig(file: string): boolean {
  return resolve(file) === join(PROJECT_ROOT, 'demo', 'trawl.json');
}

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

/**
 * The demo site in a background process (recorded in .trawl/demo-site.json; reused while it runs):
 * a deployed demo crawl runs in the local cloud's functions after this command has exited.
 */
export async function startBackgroundDemoSite(configFile: string, config: CrawlConfig) {
  const record = join(stateDir(), 'demo-site.json');
  let site = existsSync(record)
    ? (JSON.parse(readFileSync(record, 'utf8')) as { pid: number; url: string })
    : null;
  if (!site || !alive(site.pid)) {
    const node = join(PROJECT_ROOT, 'node_modules', '.bin', 'node');
    const child = spawn(node, ['--import', 'tsx', join(PROJECT_ROOT, 'cli', 'demo-serve.ts'), configFile], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((res, rej) => {
      child.stdout.once('data', (b: Buffer) => res(b.toString('utf8')));
      child.once('exit', (code) => rej(new Error(`the demo site server exited (${code})`)));
    });
    child.stdout.destroy();
    child.unref();
    site = { pid: child.pid as number, url: (JSON.parse(line) as { url: string }).url };
    writeFileSync(record, JSON.stringify(site));
  }
  const url = site.url;
  const swap = (u: string) => (u.startsWith(PLACEHOLDER) ? url + u.slice(PLACEHOLDER.length) : u);
  process.stderr.write(`trawl: serving the demo site at ${url} (pid ${site.pid}) for the deployed crawl\n`);
  return { ...config, startUrls: config.startUrls.map(swap), sitemaps: config.sitemaps.map(swap) };
}

/** Stops the background demo site, if one runs. */
export function stopBackgroundDemoSite(): void {
  const record = join(stateDir(), 'demo-site.json');
  if (!existsSync(record)) return;
  const { pid } = JSON.parse(readFileSync(record, 'utf8')) as { pid: number };
  rmSync(record, { force: true });
  if (alive(pid)) process.kill(pid, 'SIGTERM');
}
