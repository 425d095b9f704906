/**
 * `trawl report` as a person looks at it: a small crawl through the real `trawl crawl`, the
 * report written by `trawl report`, opened in a real headless Chromium (system package, driven
 * by playwright-core). The numbers shown must equal what `trawl urls`, `trawl docs` and
 * `trawl changes` print for the same crawl, with no console error; a screenshot is saved.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { launchChromium, systemChromium } from '../helpers/browser.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin', 'trawl.mjs');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const run = promisify(execFile);

const page = (title: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title}</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;

/** The real command, asynchronously: the test site is served by this process and must answer. */
async function trawl(cwd: string, ...args: string[]): Promise<string> {
  const r = await run(NODE, [BIN, ...args], { cwd, env: { ...process.env, HOME: cwd }, maxBuffer: 64 << 20 });
  return r.stdout;
}

const jsonLines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

function countBy(rows: Record<string, unknown>[], key: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    const k = r[key] === null || r[key] === undefined ? 'none' : String(r[key]);
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

const chromiumPath = systemChromium();

describe('trawl report in a real browser', {
  skip: chromiumPath ? false : 'no system chromium: run scripts/setup.sh (apt-get install chromium)',
}, () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let cwd: string;
  before(async () => {
    emu = await startTestEmulator();
    cwd = mkdtempSync(join(tmpdir(), 'trawl-report-'));
    site = await startSiteServer({
      routes: {
        '/': { body: page('Home', ['/a', '/b', '/c', '/missing', '/gone', '/logo.png', '/clip']) },
        '/a': { body: page('A', ['/a/1', '/a/2']) },
        '/a/1': { body: page('A1') },
        '/a/2': { body: page('A2', ['/missing']) },
        '/b': { body: page('B') },
        '/c': { body: page('C') },
        '/missing': { status: 404, body: 'no' },
        '/gone': { status: 410, body: 'gone' },
        '/clip': { headers: { 'content-type': 'video/mp4' }, body: 'not read' },
        '/robots.txt': { status: 404, body: '' },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('shows the same figures as urls, docs and changes, without console errors', async () => {
    const config = join(cwd, 'crawl.json');
    const name = uniqueCrawlName('report');
    writeFileSync(
      config,
      JSON.stringify({ name, startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    await trawl(cwd, 'crawl', '-c', config, '--no-progress');
    const out = join(cwd, 'report.html');
    const read = async (c: string) => jsonLines(await trawl(cwd, c, '-c', config));
    // Nothing changes the crawl any more: the four readers run side by side.
    const [urls, docs, changes] = await Promise.all([
      read('urls'),
      read('docs'),
      read('changes'),
      trawl(cwd, 'report', '-c', config, '-o', out),
    ]);
    assert.ok(statSync(out).size < 2_000_000, 'the report stays small');

    const browser = await launchChromium(chromiumPath as string);
    try {
      const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const problems: string[] = [];
      tab.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
      });
      tab.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      // Anything but the file itself would mean the report is not self-contained.
      tab.on('request', (r) => {
        if (!r.url().startsWith('file:')) problems.push(`network: ${r.url()}`);
      });
      await tab.goto(pathToFileURL(out).href);
      await tab.waitForSelector('body[data-charts="drawn"]');
      const shown = await tab.$$eval('[data-k]', (cells) =>
        Object.fromEntries(cells.map((c) => [c.getAttribute('data-k'), (c.textContent ?? '').trim()])),
      );
      const n = (k: string) => Number((shown[k] ?? 'missing').replace(/,/g, ''));
      const canvases = await tab.$$eval(
        'canvas',
        (cs) => cs.filter((c) => c.width > 0 && c.height > 0).length,
      );
      await tab.screenshot({ path: join(cwd, 'report.png'), fullPage: true });
      assert.deepEqual(problems, []);
      assert.ok(canvases >= 8, `charts drawn: ${canvases}`);

      assert.equal(n('total-urls'), urls.length);
      assert.equal(n('total-documents'), docs.length);
      assert.equal(n('total-upserts'), changes.filter((c) => c.type === 'upsert').length);
      assert.equal(n('total-deletes'), changes.filter((c) => c.type === 'delete').length);
      // Errors by kind, as `trawl status` counts them.
      const kinds = urls.map((u) => ({ kind: u.state === 'error' ? `error/${u.errorKind}` : u.state }));
      for (const [state, count] of Object.entries(countBy(kinds, 'kind')))
        assert.equal(n(`states-${state}`), count, state);
      for (const [status, count] of Object.entries(countBy(urls, 'httpStatus')))
        assert.equal(n(`http-${status}`), count, status);
      for (const [depth, count] of Object.entries(countBy(docs, 'depth')))
        assert.equal(n(`docs-depth-${depth}`), count, `depth ${depth}`);
      const errors = urls.filter((u) => u.state === 'error');
      assert.equal(n('total-errors'), errors.length);
      assert.equal(n(`errhost-${new URL(site.url).host}-permanent`), errors.length);
      // What this site holds, so the comparison above cannot pass on an empty crawl.
      assert.equal(docs.length, 6);
      assert.equal(errors.length, 2);
      assert.equal(n('states-ignored'), 1);
      assert.ok(shown['total-cost']?.startsWith('$'), `cost shown: ${shown['total-cost']}`);
      assert.ok(n('skipped-link rejected: ignored-extension') >= 1);
    } finally {
      await browser.close();
    }
  });
});
