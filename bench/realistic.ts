/**
 * Realistic-network profiles (issue 13): the bench site served on K virtual hosts (names that
 * `fetch.resolve` points at loopback), every response delayed by a lognormal latency (median
 * 200 ms, σ 0.6), crawled with a politeness delay. Each profile crawls the start page and the
 * pages it links to (scope.maxDepth 1: 31 pages a host on the Boost docs) so `npm run bench`
 * stays short; the figures are per page, so the page count only sets their noise.
 */
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { PRICES } from '../shared/pricing.ts';
import { startHandshakeFront, TLS_FIXTURE, trustTlsFixture } from '../test/helpers/tls-front.ts';
import type { TrawlResult } from './trawl-run.ts';

export interface Profile {
  name: string;
  hosts: number;
  medianMs: number;
  sigma: number;
  waitMs: number;
  /**
   * https, every connection's handshake taking this long (DNS, TCP and TLS: a few round trips),
   * made real by test/helpers/tls-front.ts; unset: http, which connects at once on loopback
   */
  handshakeMs?: number;
  /**
   * A host more beside the K (`silent.bench.test`) whose pages never answer (a hung application
   * server behind a static robots.txt): this many start URLs on it, each its own first path segment
   * (a whole host silent, not a section), crawled with fetch.timeoutMs `timeoutMs`
   */
  silent?: { urls: number; timeoutMs: number };
}

export const PROFILES: Profile[] = [
  { name: '8 hosts, 200 ms, no wait', hosts: 8, medianMs: 200, sigma: 0.6, waitMs: 0 },
  { name: '8 hosts, 200 ms, 1 s wait', hosts: 8, medianMs: 200, sigma: 0.6, waitMs: 1000 },
  { name: '1 host, 200 ms, 1 s wait', hosts: 1, medianMs: 200, sigma: 0.6, waitMs: 1000 },
  // Many hosts: one fetcher's requests in flight and rounds, the seed's robots.txt reads side by side.
  { name: '64 hosts, 200 ms, 1 s wait', hosts: 64, medianMs: 200, sigma: 0.6, waitMs: 1000 },
  // A real network's connects: no keep-alive, so every page pays its handshake (2 round trips of 50 ms).
  {
    name: '8 hosts, 200 ms, 1 s wait, https 100 ms handshake',
    hosts: 8,
    medianMs: 200,
    sigma: 0.6,
    waitMs: 1000,
    handshakeMs: 100,
  },
  // A hung host among polite ones: each request to it costs a fetcher fetch.timeoutMs of waiting,
  // and each URL is tried refresh.maxTemporaryErrors + 1 times (4): the silent-host hold
  // (politeness/host-turns.ts) sends it a few requests instead of every attempt.
  {
    name: '8 hosts, 200 ms, 1 s wait, a 9th host silent (6 URLs, 5 s timeout)',
    hosts: 8,
    medianMs: 200,
    sigma: 0.6,
    waitMs: 1000,
    silent: { urls: 6, timeoutMs: 5000 },
  },
];

/** The host of a profile's `silent` URLs. */
const SILENT_HOST = 'silent.bench.test';

const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** A seeded generator (mulberry32): the same latencies on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Lognormal latency: median × e^(σ·z), z standard normal (Box–Muller). */
function lognormal(random: () => number, medianMs: number, sigma: number): number {
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return medianMs * Math.exp(sigma * z);
}

export interface SlowServer {
  port: number;
  requests: number;
  /** page requests to the silent host (never answered) */
  silentRequests: number;
  /** when each page request (robots.txt aside) arrived, epoch ms */
  pageTimes: number[];
  close(): Promise<void>;
}

/**
 * Serves `root` for any Host name, each response after a lognormal delay, each HTML page marked with
 * the host it was served by; robots.txt is 404.
 */
export async function startSlowServer(root: string, p: Profile): Promise<SlowServer> {
  const random = seeded(42);
  const state = { requests: 0, silent: 0 };
  const pageTimes: number[] = [];
  const listener: http.RequestListener = (req, res) => {
    state.requests++;
    // The silent host answers robots.txt (a static file) and nothing else: its requests hang until
    // the crawler's timeout closes them.
    if (req.headers.host?.startsWith(`${SILENT_HOST}:`) && !req.url?.startsWith('/robots.txt')) {
      state.silent++;
      return;
    }
    if (!req.url?.startsWith('/robots.txt')) pageTimes.push(Date.now());
    const delay = lognormal(random, p.medianMs, p.sigma);
    setTimeout(async () => {
      const rel = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      const file = path.join(root, path.normalize(rel));
      try {
        if (!file.startsWith(root) || rel === '/robots.txt') throw new Error('not found');
        const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
        let body: Buffer | string = await fsp.readFile(file);
        // K different sites, not K mirrors: each host's pages say which host they are on, so their
        // text differs and duplicate folding sees distinct documents (mirrors are the duplicates test's).
        if (type === 'text/html')
          body = body
            .toString('utf8')
            .replace(/<\/body>/i, `<p>Served by ${req.headers.host ?? ''}</p></body>`);
        res.writeHead(200, { 'content-type': type }).end(body);
      } catch {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      }
    }, delay);
  };
  const server =
    p.handshakeMs === undefined ? http.createServer(listener) : https.createServer(TLS_FIXTURE, listener);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const inner = (server.address() as { port: number }).port;
  const front = p.handshakeMs === undefined ? null : await startHandshakeFront(inner, p.handshakeMs);
  const untrust = front ? trustTlsFixture() : null;
  if (front && !untrust) throw new Error(`profile ${p.name} needs Node 22.15 or 24.5 or later (TLS)`);
  return {
    port: front?.port ?? inner,
    get requests() {
      return state.requests;
    },
    get silentRequests() {
      return state.silent;
    },
    pageTimes,
    close: () =>
      new Promise<void>((r) => {
        front?.close();
        untrust?.();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The crawl config of a profile: K host names resolved to loopback, each crawled from `startPath`. */
export function profileConfig(name: string, p: Profile, port: number, startPath: string) {
  // https: names the fixture certificate covers (*.tls.test)
  const [scheme, domain] = p.handshakeMs === undefined ? ['http', 'bench.test'] : ['https', 'tls.test'];
  const hosts = Array.from({ length: p.hosts }, (_, i) => `h${i}.${domain}`);
  const silentUrls = Array.from(
    { length: p.silent?.urls ?? 0 },
    (_, i) => `http://${SILENT_HOST}:${port}/s${i}`,
  );
  const resolved = p.silent ? [...hosts, SILENT_HOST] : hosts;
  return {
    name,
    startUrls: [...hosts.map((h) => `${scheme}://${h}:${port}${startPath}`), ...silentUrls],
    // The silent host's URLs are start URLs of their own (outside the start path, always in scope).
    scope: { underStartPath: true, maxDepth: 1 },
    fetch: {
      allowPrivateNetworks: true,
      waitBetweenRequestsMs: p.waitMs,
      resolve: Object.fromEntries(resolved.map((h) => [h, '127.0.0.1'])),
      ...(p.silent ? { timeoutMs: p.silent.timeoutMs } : {}),
    },
  };
}

/**
 * A silent host's figures: the requests it got against every attempt its URLs had (each URL
 * tried refresh.maxTemporaryErrors + 1 times, the default 3 + 1), and the fetch stage's handler
 * time, which the requests' waits are part of.
 */
export function silentLine(p: Profile, r: TrawlResult, silentRequests: number): string | null {
  if (!p.silent) return null;
  const attempts = p.silent.urls * (3 + 1);
  const fetch = r.usage.stages.fetch;
  return (
    `  silent host: ${silentRequests} requests for ${p.silent.urls} URLs' ${attempts} attempts (${p.silent.timeoutMs / 1000} s timeout); ` +
    `fetch handler time ${(fetch.totalMs / 1000).toFixed(1)} s in ${fetch.invocations} invocations; crawl ${r.seconds.toFixed(0)} s`
  );
}

/** Provisioned capacity at 70% utilisation: $0.00065 per WCU-hour, $0.00013 per RCU-hour (docs/design-facts.md). */
const PROVISIONED = {
  writeUnit: 0.00065 / 3600 / 0.7,
  readUnit: 0.00013 / 3600 / 0.7,
};

export interface ProfileFigures {
  line: string;
  pagesPerSecond: number;
  boundShare: number;
  gbSecondsPerPage: number;
  writeUnitsPerPage: number;
  provisionedTotal: number;
}

const d = (x: number) => `$${x.toFixed(2)}`;

/**
 * Pages a second between the 10th and the 90th percentile page request: the rate once the crawl is
 * under way, without its start (seed, first claims) and its tail (the last hosts' last pages).
 */
function steadyRate(pageTimes: number[]): number | null {
  if (pageTimes.length < 20) return null;
  const sorted = [...pageTimes].sort((a, b) => a - b);
  const from = Math.floor(sorted.length * 0.1);
  const to = Math.floor(sorted.length * 0.9);
  const ms = (sorted[to] as number) - (sorted[from] as number);
  return ms > 0 ? ((to - from) * 1000) / ms : null;
}

/** The one line per profile, plus the same total with provisioned DynamoDB capacity. */
export function profileLine(p: Profile, r: TrawlResult, pageTimes: number[] = []): ProfileFigures {
  const m = r.cost.perMillion;
  const u = r.usage;
  const scale = 1e6 / Math.max(1, u.pages);
  const dynamo = m.dynamoWrite + m.dynamoRead;
  const provisionedDynamo =
    (u.dynamoWriteUnits * PROVISIONED.writeUnit + u.dynamoReadUnits * PROVISIONED.readUnit) * scale;
  const provisionedTotal = m.total - dynamo + provisionedDynamo;
  const bound = p.hosts / ((p.waitMs + p.medianMs) / 1000);
  const boundShare = r.pagesPerSecond / bound;
  const steady = steadyRate(pageTimes);
  const line =
    `profile ${p.name}: ${d(m.total)} per million pages (Lambda ${d(m.lambda)}, DynamoDB ${d(dynamo)}, ` +
    `S3 ${d(m.s3)}, SQS ${d(m.sqs)}), ${r.pagesPerSecond.toFixed(1)} pages/s, ${(boundShare * 100).toFixed(0)}% of the politeness bound` +
    `\n  provisioned DynamoDB at 70%: ${d(provisionedTotal)} (DynamoDB ${d(provisionedDynamo)}); ${r.pages} pages, ` +
    `${(u.dynamoWriteUnits / Math.max(1, u.pages)).toFixed(2)} write units a page, fetch invocations ${u.stages.fetch.invocations}, ` +
    `Lambda GB-s a page ${(r.cost.lambdaGbSeconds / Math.max(1, u.pages)).toFixed(4)}` +
    (steady === null
      ? ''
      : `; under way (10th to 90th percentile page) ${steady.toFixed(1)} pages/s, ${((steady / bound) * 100).toFixed(0)}% of the bound`);
  return {
    line,
    pagesPerSecond: r.pagesPerSecond,
    boundShare,
    gbSecondsPerPage: r.cost.lambdaGbSeconds / Math.max(1, u.pages),
    writeUnitsPerPage: u.dynamoWriteUnits / Math.max(1, u.pages),
    provisionedTotal,
  };
}

export const PROVISIONED_PRICES = { ...PROVISIONED, onDemandWrite: PRICES.dynamoWriteUnit };
