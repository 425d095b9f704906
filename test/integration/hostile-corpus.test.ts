/**
 * The hostile-input corpus (issue 16 item 6): one case per item of the issue, each asserting the
 * outcome the README's "Hostile input" table documents. Real parts: the real page processor
 * (extract stage's core), the real fetcher against loopback servers, the real CLI for config errors.
 * Cheap on purpose (seconds): the pipeline-wide cases live in hostile-pipeline / ssrf-pipeline.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync, zipSync } from 'fflate';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { processPage } from '../../shared/crawl/page/page-outcome.ts';
import { createUrlDecider } from '../../shared/crawl/rules/decide.ts';
import { maskUserInfo } from '../../shared/crawl/url/mask-url.ts';
import { ConfigError } from '../../shared/errors.ts';
import { fetchUrl } from '../../shared/net/fetcher.ts';
import { logger } from '../../shared/stages/logger.ts';
import { robotsSitemapsInScope, type SeedSummary } from '../../shared/stages/seed-stage.ts';
import type { FetchedPage, UrlTask } from '../../shared/types.ts';
import { lyingZip, multiPagePdf } from '../helpers/archive-builders.ts';

const SITE = 'http://site.test';

function context(extra: Partial<CrawlConfigInput> = {}) {
  const config = parseConfig({ name: 'hostile', startUrls: [`${SITE}/`], ...extra });
  return { config, decider: createUrlDecider(config), now: '2026-11-23T00:00:00.000Z' };
}

function page(
  path: string,
  body: Uint8Array | string,
  contentType: string,
  kind: UrlTask['kind'] = 'page',
): FetchedPage {
  const url = `${SITE}${path}`;
  const task: UrlTask = { url, depth: 0, queue: 'user', index: true, follow: true, priority: 0, kind };
  const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  return {
    task,
    url,
    status: 200,
    headers: { 'content-type': contentType },
    fetchedAt: '2026-11-23T00:00:00.000Z',
    body: bytes.toString('base64'),
    truncated: false,
    notModified: false,
  };
}

describe('limits on what a page or file can make the crawler do', () => {
  it('a page with 60,000 links yields limits.linksPerPage (10,000) tasks; the rest counted and noted', async () => {
    const html = `<html><body>${Array.from({ length: 60_000 }, (_, i) => `<a href="/p${i}">${i}</a>`).join('')}</body></html>`;
    const heapBefore = process.memoryUsage().heapUsed;
    const r = await processPage(page('/many', html, 'text/html'), context());
    assert.equal(r.tasks.length, 10_000);
    assert.equal(r.rejected['limit-links-per-page'], 50_000);
    assert.match(String(r.outcomes[0]?.note), /50000 links dropped at limits\.linksPerPage \(10000\)/);
    // memory ceiling: the page's links never become 60,000 task objects
    assert.ok(process.memoryUsage().heapUsed - heapBefore < 512 * 1024 * 1024);
  });

  it('a sitemap of 120 URLs with limits.sitemapUrls 100: 100 queued, 20 counted, noted', async () => {
    const urls = Array.from({ length: 120 }, (_, i) => `<url><loc>${SITE}/s${i}</loc></url>`).join('');
    const xml = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`;
    const r = await processPage(
      page('/sitemap.xml', xml, 'application/xml', 'sitemap'),
      context({ limits: { sitemapUrls: 100 } }),
    );
    assert.equal(r.tasks.length, 100);
    assert.equal(r.rejected['limit-sitemap-urls'], 20);
    assert.match(String(r.outcomes[0]?.note), /20 dropped at limits\.sitemapUrls \(100\)/);
  });

  it('a gzip sitemap inflating past limits.sitemapBytes is not read: ignored with a note, counted', async () => {
    const bomb = gzipSync(new Uint8Array(2 * 1024 * 1024).fill(0x20), { level: 9 });
    const r = await processPage(
      page('/sitemap.xml.gz', bomb, 'application/gzip', 'sitemap'),
      context({ limits: { sitemapBytes: 1024 * 1024 } }),
    );
    assert.deepEqual(
      [r.outcomes[0]?.state, r.tasks.length, r.rejected['limit-sitemap-bytes']],
      ['ignored', 0, 1],
    );
    assert.match(String(r.outcomes[0]?.note), /over limits\.sitemapBytes/);
  });

  it('a sitemap index listing 5 sitemaps with limits.sitemapsPerSite 2: 2 followed, 3 counted', async () => {
    const items = Array.from(
      { length: 5 },
      (_, i) => `<sitemap><loc>${SITE}/sm${i}.xml</loc></sitemap>`,
    ).join('');
    const xml = `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${items}</sitemapindex>`;
    const r = await processPage(
      page('/index.xml', xml, 'application/xml', 'sitemap'),
      context({ limits: { sitemapsPerSite: 2 } }),
    );
    assert.deepEqual(
      r.tasks.map((t) => t.url),
      [`${SITE}/sm0.xml`, `${SITE}/sm1.xml`],
    );
    assert.equal(r.rejected['limit-sitemaps-per-site'], 3);
  });

  it('robots.txt Sitemap: lines are scope-checked and capped per site', () => {
    const ctx = context({ limits: { sitemapsPerSite: 2 } });
    const summary: SeedSummary = { startUrls: 1, sitemaps: 0, rejected: [] };
    const lines = [
      `${SITE}/a.xml`,
      'http://elsewhere.test/s.xml',
      'http://u:pw@evil.test/s.xml',
      `${SITE}/b.xml`,
      `${SITE}/c.xml`,
    ];
    const kept = robotsSitemapsInScope(lines, SITE, ctx.decider, ctx.config, summary);
    assert.deepEqual(kept, [`${SITE}/a.xml`, `${SITE}/b.xml`]);
    assert.equal(summary.rejected.filter((r) => r.includes('out of scope')).length, 2);
    assert.equal(summary.rejected.filter((r) => r.includes('limits.sitemapsPerSite')).length, 1);
    assert.ok(
      summary.rejected.every((r) => !r.includes('pw@')),
      'user info masked',
    );
  });

  it('a PDF of 30 pages with limits.pdfPages 5: the first 5 pages indexed, noted and counted', async () => {
    const pdf = multiPagePdf(Array.from({ length: 30 }, (_, i) => `Page${i + 1}`));
    const r = await processPage(
      page('/big.pdf', pdf, 'application/pdf'),
      context({ limits: { pdfPages: 5 } }),
    );
    const out = r.outcomes[0];
    assert.equal(out?.state, 'indexed');
    assert.equal(out?.doc?.content, 'Page1 Page2 Page3 Page4 Page5');
    assert.match(String(out?.note), /5 of 30 pages read \(limits\.pdfPages\)/);
    assert.equal(r.rejected['limit-pdf-pages'], 1);
  });

  it('a PDF over limits.pdfBytes is not parsed: ignored with a note', async () => {
    const pdf = multiPagePdf(['only']);
    const r = await processPage(
      page('/x.pdf', pdf, 'application/pdf'),
      context({ limits: { pdfBytes: 100 } }),
    );
    assert.deepEqual([r.outcomes[0]?.state, r.rejected['limit-pdf-bytes']], ['ignored', 1]);
    assert.match(String(r.outcomes[0]?.note), /over limits\.pdfBytes \(100\)/);
  });

  it('a zip entry lying about its size is a counted truncation, not a silent one', async () => {
    // A start URL: the default ignoredExtensions (seed 004) keep .zip links out of a crawl.
    const zip = context({ startUrls: [`${SITE}/lie.zip`] });
    const r = await processPage(page('/lie.zip', lyingZip(1000), 'application/zip'), zip);
    const archive = r.outcomes.find((o) => o.url === `${SITE}/lie.zip`);
    assert.match(
      String(archive?.note),
      /truncated by limits: .*zeros\.bin: data does not match its declared size/,
    );
    assert.equal(r.rejected['limit-archive'], 1);
    assert.ok(r.outcomes.some((o) => o.url === `${SITE}/lie.zip/small.txt` && o.state === 'indexed'));
  });

  it('a zip of 50 entries with limits.archiveEntries 10: 10 elements, the cut noted and counted', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [`f${i}.txt`, Buffer.from(`file ${i}`)]),
    );
    const r = await processPage(
      page('/many.zip', zipSync(files), 'application/zip'),
      context({ startUrls: [`${SITE}/many.zip`], limits: { archiveEntries: 10 } }),
    );
    assert.equal(r.outcomes.filter((o) => o.element).length, 10);
    assert.match(String(r.outcomes.find((o) => !o.element)?.note), /limits\.archiveEntries \(10\) reached/);
    assert.equal(r.rejected['limit-archive'], 1);
  });
});

/** A raw TCP server answering every connection with `response`; resolves its port. */
async function rawServer(response: string, run: (port: number) => Promise<void>): Promise<void> {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => s.end(response));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await run((server.address() as net.AddressInfo).port);
  } finally {
    server.close();
  }
}

const fetchOptions = {
  userAgent: 't',
  timeoutMs: 5000,
  maxBytes: 1 << 20,
  allowPrivateNetworks: true,
  resolve: {},
  proxy: null,
  ignoredMimeTypes: [],
  metadataFirst: true,
};

describe('hostile servers at the fetcher', () => {
  it('200 KB of response headers over limits.headerBytes (64 KiB): permanent header-overflow', async () => {
    const big = `HTTP/1.1 200 OK\r\n${Array.from({ length: 2000 }, (_, i) => `X-Pad-${i}: ${'x'.repeat(90)}\r\n`).join('')}Content-Length: 2\r\n\r\nok`;
    await rawServer(big, async (port) => {
      const out = await fetchUrl(`http://127.0.0.1:${port}/`, { ...fetchOptions, maxHeaderBytes: 64 * 1024 });
      assert.deepEqual(out.kind === 'error' && [out.errorKind, out.code], ['permanent', 'header-overflow']);
    });
  });

  it("a reason phrase's control characters (a terminal escape) are left out of the error, and it is bounded", async () => {
    const phrase = `Gone \x1b[2J\x1b[31mFAKE: all good \x1b]0;owned\x07\x1b[0m${'x'.repeat(1000)}`;
    await rawServer(`HTTP/1.1 404 ${phrase}\r\nContent-Length: 0\r\n\r\n`, async (port) => {
      const out = await fetchUrl(`http://127.0.0.1:${port}/`, fetchOptions);
      const message = out.kind === 'error' ? out.message : '';
      assert.ok(message.startsWith('HTTP 404 Gone [2J[31mFAKE: all good ]0;owned[0m'), message);
      assert.doesNotMatch(message, /\p{Cc}/u);
      assert.ok(message.length <= 'HTTP 404 '.length + 200, `${message.length} characters`);
    });
  });

  it('Retry-After of a day is reported as such (the fetch stage caps it at limits.retryAfterMs)', async () => {
    await rawServer('HTTP/1.1 503 Busy\r\nRetry-After: 86400\r\nContent-Length: 0\r\n\r\n', async (port) => {
      const out = await fetchUrl(`http://127.0.0.1:${port}/`, fetchOptions);
      assert.deepEqual(out.kind === 'error' && [out.errorKind, out.retryAfterMs], ['temporary', 86_400_000]);
      assert.ok(parseConfig({ name: 'x', startUrls: [`${SITE}/`] }).limits.retryAfterMs < 86_400_000);
    });
  });
});

const BIN = join(PROJECT_ROOT, 'bin', 'trawl.mjs');
const cwd = mkdtempSync(join(tmpdir(), 'trawl-hostile-'));

function trawl(args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    ),
  );
}

describe('hostile or careless configs: exit 2 with the field path, or answered in linear time', () => {
  const base = { name: 'hostile', startUrls: [`${SITE}/`] };
  // biome-ignore format: one case per line
  const IN_PROCESS: [string, Record<string, unknown>, RegExp][] = [
    ['a backreference in a rule', { rules: [{ match: { atom: { field: 'path', kind: 'inside', value: '(a)\\1' } }, actions: ['ignore'] }] }, /rules\.0\.match\.atom\.value: .*backreferences/],
    ['more rules than limits.ruleCount', { limits: { ruleCount: 2 }, rules: [1, 2, 3].map((i) => ({ match: { path: `/${i}` }, actions: ['ignore'] })) }, /rules: 3 rules, more than limits\.ruleCount \(2\)/],
    ['a bad allowPrivateNetworks entry', { fetch: { allowPrivateNetworks: ['10.0.0.0/40'] } }, /fetch\.allowPrivateNetworks\.0: .*not a valid CIDR/],
  ];
  for (const [label, extra, message] of IN_PROCESS) {
    it(label, () => {
      const load = () => createUrlDecider(parseConfig({ ...base, ...extra }));
      assert.throws(load, (err: unknown) => err instanceof ConfigError && message.test(err.message));
    });
  }

  it('a lookbehind in scope.exclude: the CLI exits 2 naming the field', async () => {
    writeFileSync(
      join(cwd, 'lookbehind.json'),
      JSON.stringify({ ...base, scope: { exclude: ['(?<=/)admin'] } }),
    );
    const r = await trawl(['explain', '-c', 'lookbehind.json', `${SITE}/x`]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /lookbehind\.json: scope\.exclude\.0: invalid regular expression .*lookaround/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  it('(a+)+$ as an exclude on a 2,000-character path (as long as a kept URL gets): explain answers', async () => {
    writeFileSync(join(cwd, 'redos.json'), JSON.stringify({ ...base, scope: { exclude: ['(a+)+$'] } }));
    const r = await trawl(['explain', '-c', 'redos.json', `${SITE}/${'a'.repeat(2000)}!`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).accepted, true);
  });

  it('a URL with credentials is never logged as is: the real logger masks user info', () => {
    const lines: string[] = [];
    // Powertools writes warnings to stderr (console.warn), info to stdout: both are captured
    const streams = [process.stdout, process.stderr];
    const writes = streams.map((s) => s.write);
    for (const stream of streams)
      stream.write = ((chunk: string | Uint8Array) => lines.push(String(chunk)) > 0) as typeof stream.write;
    try {
      logger.warn('seed rejected http://alice:s3cret@site.test/', {
        rejected: ['http://bob:hunter2@x.test/a: offsite'],
      });
    } finally {
      streams.forEach((stream, i) => {
        stream.write = writes[i] as typeof stream.write;
      });
    }
    const out = lines.join('');
    assert.match(out, /http:\/\/\*\*\*@site\.test\//);
    assert.doesNotMatch(out, /s3cret|hunter2/);
    assert.equal(
      maskUserInfo('see http://alice:s3cret@site.test/x and https://b@c.test'),
      'see http://***@site.test/x and https://***@c.test',
    );
  });
});
