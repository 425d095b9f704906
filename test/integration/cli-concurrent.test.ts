/**
 * Two `trawl` commands in one folder at once, through the real CLI: they share one background
 * emulator (two starts ran one each: the site crawled twice over, politeness halved), and their
 * saves of `.trawl/snapshot` take turns (two at once shared the temporary folder, and the
 * snapshot came out without its tables: every crawl of the folder lost at the next restart).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { alive } from '../../cli/processes.ts';
import { BIN, cliEnv, NODE, trawlAsync } from '../helpers/cli.ts';
import { linkPage } from '../helpers/crawl-env.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = Array.from({ length: 12 }, (_, i) => `/p${i}`);

const trawl = (cwd: string, ...args: string[]) => trawlAsync(cwd, {}, ...args);

describe('two trawl commands in one folder at once', () => {
  let cwd: string;
  let site: SiteServer;
  before(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'trawl-two-'));
    site = await startSiteServer({
      routes: Object.fromEntries([
        ['/', { body: linkPage('Home', PAGES) }],
        ['/robots.txt', { status: 404, body: '' }],
        ...PAGES.map((p) => [p, { body: linkPage(`Page ${p}`) }]),
      ]),
    });
    for (const name of ['alpha', 'beta'])
      writeFileSync(
        join(cwd, `${name}.json`),
        JSON.stringify({ name, startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
      );
  });
  after(async () => {
    await trawl(cwd, 'emulator', 'stop');
    await site?.close();
  });

  /** How many times each page was requested since `mark`. */
  const requestsSince = (mark: number) => {
    const counts = new Map<string, number>();
    for (const r of site.requests.slice(mark)) counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
    return counts;
  };

  it('the same crawl started twice with no emulator running: one emulator, the site crawled once', async () => {
    const mark = site.requests.length;
    const [a, b] = await Promise.all([
      trawl(cwd, 'crawl', '-c', 'alpha.json', '--no-progress'),
      trawl(cwd, 'crawl', '-c', 'alpha.json', '--no-progress'),
    ]);
    assert.equal(a.code, 0, a.err);
    assert.equal(b.code, 0, b.err);
    const counts = requestsSince(mark);
    // With an emulator each, every page was fetched twice; sharing one, its claims let each page
    // go once (the start page, seeded by both, may go twice).
    const twice = PAGES.filter((p) => (counts.get(p) ?? 0) > 1);
    assert.deepEqual(twice, [], `pages fetched twice: ${twice.join(' ')}`);
    const docs = await trawl(cwd, 'docs', '-c', 'alpha.json');
    assert.equal(docs.out.trim().split('\n').length, PAGES.length + 1);
  });

  it('two crawls saving at once, then a restart: both crawls are still there', async () => {
    const [a, b] = await Promise.all([
      trawl(cwd, 'crawl', '-c', 'alpha.json', '--no-progress'),
      trawl(cwd, 'crawl', '-c', 'beta.json', '--no-progress'),
    ]);
    assert.equal(a.code, 0, a.err);
    assert.equal(b.code, 0, b.err);
    const stopped = await trawl(cwd, 'emulator', 'stop');
    assert.equal(stopped.code, 0, stopped.err);
    // The next command restores the snapshot into a new emulator.
    for (const name of ['alpha', 'beta']) {
      const docs = await trawl(cwd, 'docs', '-c', `${name}.json`);
      assert.equal(docs.code, 0, docs.err);
      assert.equal(docs.out.trim().split('\n').length, PAGES.length + 1, `${name}: ${docs.err}`);
    }
  });

  it('status --wait for a crawl started a moment later waits for it to start, then for it to end', async () => {
    writeFileSync(
      join(cwd, 'gamma.json'),
      JSON.stringify({ name: 'gamma', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    // The emulator is running (the tests above): status finds no state for gamma at once.
    const status = trawl(cwd, 'status', '-c', 'gamma.json', '--wait', '--timeout', '120');
    await new Promise((r) => setTimeout(r, 3000));
    const crawl = await trawl(cwd, 'crawl', '-c', 'gamma.json', '--no-progress');
    assert.equal(crawl.code, 0, crawl.err);
    const waited = await status;
    assert.equal(waited.code, 0, waited.err);
    assert.match(waited.err, /status --wait: no state yet, waiting for the crawl to start/);
    const s = JSON.parse(waited.out);
    assert.equal(s.crawl, 'gamma');
    assert.equal(s.idle, true);
    assert.equal(s.documents, PAGES.length + 1);
  });

  it('a command killed (SIGKILL) while it starts the emulator leaves none behind: the next one stops it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-killed-'));
    const child = spawn(NODE, [BIN, 'docs', '-c', join(cwd, 'alpha.json')], {
      cwd: dir,
      env: cliEnv(dir),
      stdio: 'ignore',
    });
    const starting = join(dir, '.trawl', 'emulator.starting');
    for (let i = 0; i < 300 && !existsSync(starting); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(starting), 'the command started an emulator');
    const orphan = Number(readFileSync(starting, 'utf8'));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.ok(alive(orphan), 'SIGKILL runs no handler: the emulator it was starting is left');
    const next = await trawl(dir, 'docs', '-c', join(cwd, 'alpha.json'));
    assert.match(
      next.err,
      new RegExp(`stopping an emulator a killed command left starting \\(pid ${orphan}\\)`),
    );
    for (let i = 0; i < 50 && alive(orphan); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(orphan), false);
    await trawl(dir, 'emulator', 'stop');
  });
});
