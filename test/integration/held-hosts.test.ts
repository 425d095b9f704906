/**
 * A crawl whose only work left waits for a host says so, through the real CLI: a 503 with
 * `Retry-After: 3600` held the run with "messages queued … 0.0 pages/s" for an hour and nothing
 * said why. The progress line now names the host, until when and why, and `trawl status` lists
 * it in `heldHosts`; Ctrl-C then keeps the work for a later run.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, cliEnv, NODE, trawlAsync } from '../helpers/cli.ts';
import { linkPage } from '../helpers/crawl-env.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('a crawl waiting only for a held host', () => {
  let cwd: string;
  let site: SiteServer;
  before(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'trawl-held-'));
    site = await startSiteServer({
      routes: {
        '/': { body: linkPage('Home', ['/a', '/busy']) },
        '/a': { body: linkPage('A') },
        '/busy': { status: 503, headers: { 'Retry-After': '3600' }, body: 'busy' },
        '/robots.txt': { status: 404, body: '' },
      },
    });
    writeFileSync(
      join(cwd, 'held.json'),
      JSON.stringify({ name: 'held', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
  });
  after(async () => {
    await trawlAsync(cwd, {}, 'emulator', 'stop');
    await site?.close();
  });

  it('the progress line and `trawl status` name the host, until when and why; Ctrl-C keeps the work', async () => {
    const child = spawn(NODE, [BIN, 'crawl', '-c', 'held.json', '--no-progress'], { cwd, env: cliEnv(cwd) });
    let err = '';
    let out = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.stdout.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const host = new URL(site.url).host;
    const waiting = new RegExp(
      `waiting for ${host.replace(/\./g, '\\.')} until \\d\\d:\\d\\d:\\d\\d UTC, in (59|60) min \\(a 429/503 back-off, Retry-After\\); Ctrl-C keeps it for a later run`,
    );
    const until = Date.now() + 120_000;
    while (!waiting.test(err) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    assert.match(err, waiting);
    assert.ok(
      site.requests.some((r) => r.path === '/a'),
      'the rest of the site was crawled',
    );

    const status = await trawlAsync(cwd, {}, 'status', '-c', 'held.json');
    assert.equal(status.code, 0, status.err);
    const held = JSON.parse(status.out).heldHosts;
    assert.equal(held.count, 1);
    assert.equal(held.hosts[0].host, host);
    assert.equal(held.hosts[0].reason, 'backed-off');
    const left = Date.parse(held.hosts[0].until) - Date.now();
    assert.ok(left > 3_000_000 && left <= 3_600_000, `held for another ${left} ms`);

    child.kill('SIGINT');
    assert.equal(await exited, 130, err);
    assert.match(`${out}${err}`, /Resume with: trawl crawl -c held\.json/);
    // The page that got the 503 is still queued for the next run.
    const after = await trawlAsync(cwd, {}, 'status', '-c', 'held.json');
    assert.equal(JSON.parse(after.out).urls.pending, 1, after.out);
  });

  it("after a `refresh --now` two days ahead, `trawl status` reads the politeness slots on the crawl's clock", async () => {
    // The cycle booked the host's turns on the moved clock; status read them on the real one and
    // listed the host held by politeness for two days (helper-61).
    writeFileSync(
      join(cwd, 'polite.json'),
      JSON.stringify({
        name: 'polite',
        startUrls: [`${site.url}/a`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 1000 },
      }),
    );
    const crawled = await trawlAsync(cwd, {}, 'crawl', '-c', 'polite.json', '--no-progress');
    assert.equal(crawled.code, 0, crawled.err);
    const later = new Date(Date.now() + 49 * 3_600_000).toISOString();
    const refreshed = await trawlAsync(
      cwd,
      {},
      'refresh',
      '-c',
      'polite.json',
      '--now',
      later,
      '--no-progress',
    );
    assert.equal(refreshed.code, 0, refreshed.err);
    assert.ok(site.requests.filter((r) => r.path === '/a').length >= 2, 'the cycle fetched the page again');
    await new Promise((r) => setTimeout(r, 1500)); // past the last turn's gap
    const status = await trawlAsync(cwd, {}, 'status', '-c', 'polite.json');
    assert.equal(status.code, 0, status.err);
    assert.deepEqual(JSON.parse(status.out).heldHosts.hosts, [], status.out);
  });
});
