/**
 * Ctrl-C, SIGTERM and kill -9 of a real `trawl crawl` child process on a loopback site, then the
 * same `trawl crawl` again: exit codes, nothing lost, none twice, completed pages not fetched
 * again (requests counted at the server), and the resumed run finishing (its duration printed).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { requestsPerPath, startChainSite } from '../helpers/chain-site.ts';
import type { SiteServer } from '../helpers/site-server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin', 'trawl.mjs');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const PAGES = 90;

function cliEnv(cwd: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: cwd };
  for (const k of ['AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_PROFILE'])
    delete env[k];
  return env;
}

function trawlSync(cwd: string, ...args: string[]) {
  const r = spawnSync(NODE, [BIN, ...args], { cwd, env: cliEnv(cwd), encoding: 'utf8', timeout: 240_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

interface Run {
  child: ChildProcess;
  out: string;
  err: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A Node older than 22 on the PATH (the system's), whose `trawl` re-runs itself under Node 24. */
function systemNode(): string | null {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const major = Number(
        execFileSync(candidate, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }),
      );
      if (major < 22) return candidate;
    } catch {}
  }
  return null;
}

function trawlAsync(cwd: string, ...args: (string | { node: string })[]): Run {
  const node = args.find((a) => typeof a === 'object')?.node ?? NODE;
  const argv = args.filter((a): a is string => typeof a === 'string');
  const child = spawn(node, [BIN, ...argv], { cwd, env: cliEnv(cwd) });
  const run: Run = {
    child,
    out: '',
    err: '',
    exited: new Promise((r) => child.on('exit', (code, signal) => r({ code, signal }))),
  };
  child.stdout?.on('data', (d) => {
    run.out += d;
  });
  child.stderr?.on('data', (d) => {
    run.err += d;
  });
  return run;
}

async function waitFor(cond: () => boolean, what: string, limitMs = 120_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const lines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Paths of the URLs whose state says they were fetched. */
function fetchedPaths(cwd: string, config: string): Set<string> {
  const r = trawlSync(cwd, 'urls', '-c', config);
  assert.equal(r.code, 0, r.err);
  return new Set(
    lines(r.out)
      .filter((u) => u.lastFetched)
      .map((u) => new URL(u.url as string).pathname),
  );
}

function assertComplete(cwd: string, config: string): void {
  const docs = lines(trawlSync(cwd, 'docs', '-c', config).out);
  const urls = docs.map((d) => d.url as string);
  assert.equal(new Set(urls).size, urls.length, 'a URL twice in trawl docs');
  assert.equal(urls.length, PAGES, 'every page indexed');
}

/** Starts a crawl, lets it fetch `pagesFirst` pages, stops it with `signal`; then resumes it. */
async function interruptAndResume(
  site: SiteServer,
  cwd: string,
  name: string,
  signal: NodeJS.Signals,
  beforeResume?: (config: string) => void,
) {
  const config = join(cwd, `${name}.json`);
  writeFileSync(
    config,
    JSON.stringify({ name, startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
  );
  const from = site.requests.length;
  const first = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress');
  await waitFor(() => requestsPerPath(site, from).size >= 30, '30 pages fetched');
  const signalled = Date.now();
  first.child.kill(signal);
  const exit = await first.exited;
  process.stdout.write(`# ${signal}: exited after ${Date.now() - signalled} ms (${JSON.stringify(exit)})\n`);
  const done = fetchedPaths(cwd, config);
  beforeResume?.(config);
  const mid = site.requests.length;
  const resumed = Date.now();
  // Not spawnSync: the site is served by this process, whose event loop must keep running.
  const run2 = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress');
  const second = { code: (await run2.exited).code, out: run2.out, err: run2.err };
  process.stdout.write(`# resumed run after ${signal}: ${Date.now() - resumed} ms\n`);
  assert.equal(
    second.code,
    0,
    `first run:\n${first.out}\n${first.err}\nsecond run:\n${second.out}\n${second.err.slice(-3000)}`,
  );
  assert.match(second.err, /resuming: \d+ pending, \d+ in error, \d+ documents/);
  assert.match(second.out, /finished in/);
  assertComplete(cwd, config);
  // The start URL is read again by design: every `trawl crawl` is a discovery cycle (seed 002).
  const again = [...requestsPerPath(site, mid).keys()].filter((p) => done.has(p) && p !== '/');
  return { first, second, exit, done, again, signalled };
}

describe('interrupting and resuming a real trawl crawl', () => {
  let cwd: string;
  let site: SiteServer;
  before(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'trawl-resume-'));
    site = await startChainSite(PAGES, 15);
  });
  after(async () => {
    trawlSync(cwd, 'emulator', 'stop');
    await site.close();
  });

  it('Ctrl-C: exit 130 with the summary and how to resume; the next run fetches no completed page again', async () => {
    // Meanwhile `status --wait` sees the work queued and no command running it: it says how to
    // resume, exit 1, instead of waiting its whole --timeout for a crawl nothing runs.
    let waited: ReturnType<typeof trawlSync> | undefined;
    const r = await interruptAndResume(site, cwd, 'sigint', 'SIGINT', (config) => {
      waited = trawlSync(cwd, 'status', '-c', config, '--wait', '--timeout', '200');
    });
    assert.equal(waited?.code, 1, waited?.err);
    assert.match(
      waited?.err ?? '',
      /status --wait: crawl "sigint" has work queued but no trawl command is running it here; "trawl crawl -c .*sigint\.json" resumes it/,
    );
    assert.equal(JSON.parse(waited?.out ?? '{}').idle, false);
    // A clean stop gave everything back: nothing held for the resumed run to wait for.
    assert.doesNotMatch(r.second.err, /still held by an earlier run/);
    assert.equal(r.exit.code, 130, r.first.err);
    assert.match(r.first.out, /Trawl crawl "sigint" stopped \(SIGINT\) after/);
    assert.match(r.first.out, /Resume with: trawl crawl -c /);
    // The interrupted run's state is saved for a reboot: the forced exit (4.5 s) used to cut the save short.
    assert.match(r.first.err, /saving the emulator's state under \.trawl\//);
    const saved = join(cwd, '.trawl', 'snapshot', 'dynamodb', 'trawl-sigint-urls.json');
    assert.ok(
      existsSync(saved) && statSync(saved).mtimeMs >= r.signalled,
      'the snapshot holds the interrupted run',
    );
    assert.ok(r.done.size > 0, 'some pages completed before the signal');
    assert.deepEqual(r.again, [], 'completed pages fetched again');
  });

  it('SIGTERM: exit 143, same guarantees', async () => {
    const r = await interruptAndResume(site, cwd, 'sigterm', 'SIGTERM');
    assert.equal(r.exit.code, 143, r.first.err);
    assert.deepEqual(r.again, [], 'completed pages fetched again');
  });

  it('through the re-run under Node 24 from an older system Node: SIGTERM to the command stops the crawl (exit 143)', async (t) => {
    // bin/trawl.mjs re-runs itself with node_modules' Node 24 on Node < 22. It died at the signal
    // and left the crawl running on its own, or never passed SIGTERM on.
    const system = systemNode();
    if (!system) return t.skip('no Node older than 22 on this machine: the re-run is not used');
    const config = join(cwd, 'wrapper.json');
    writeFileSync(
      config,
      JSON.stringify({ name: 'wrapper', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    const from = site.requests.length;
    const run = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress', { node: system });
    await waitFor(() => requestsPerPath(site, from).size >= 10, '10 pages fetched');
    run.child.kill('SIGTERM');
    const exit = await run.exited;
    assert.equal(exit.code, 143, run.err);
    assert.match(run.err, /SIGTERM: stopping/);
    const at = site.requests.length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(site.requests.length, at, 'no request after the command exited: nothing left running');

    // kill -9 of the command itself: the re-run under Node 24 sees its parent's pipe close and stops
    // as at SIGTERM. It used to crawl on, detached, beyond Ctrl-C's reach.
    const again = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress', { node: system });
    const resumed = site.requests.length;
    await waitFor(() => site.requests.length >= resumed + 5, '5 more requests');
    again.child.kill('SIGKILL');
    await again.exited;
    await new Promise((r) => setTimeout(r, 3000)); // the stop: handlers finish what they write
    const settled = site.requests.length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(site.requests.length, settled, 'no request once the orphaned re-run stopped');
  });

  it('Ctrl-C while the command starts its emulator: exit 130, says so, and leaves no emulator running', async () => {
    // Before the run's own handlers, Node's default exit said nothing, and the detached emulator
    // it was starting (or restoring) kept running unknown to any command.
    const fresh = mkdtempSync(join(tmpdir(), 'trawl-early-'));
    const config = join(fresh, 'early.json');
    writeFileSync(
      config,
      JSON.stringify({ name: 'early', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    const from = site.requests.length;
    const run = trawlAsync(fresh, 'crawl', '-c', config, '--no-progress');
    // The command makes .trawl/ just before it starts the emulator.
    await waitFor(() => existsSync(join(fresh, '.trawl')), 'the emulator starting');
    run.child.kill('SIGINT');
    const exit = await run.exited;
    assert.equal(exit.code, 130, run.err);
    assert.match(run.err, /SIGINT before the crawl started/);
    assert.match(run.err, /stopping the emulator this command was starting/);
    assert.equal(site.requests.length, from, 'nothing fetched');
    await new Promise((r) => setTimeout(r, 1000));
    const left = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readlinkSync(`/proc/${p}/cwd`) === fresh;
        } catch {
          return false;
        }
      });
    assert.deepEqual(left, [], "a process left running in the command's folder");
  });

  it('kill -9: the next run finishes with every page once, fetching no completed page again', async () => {
    // The killed run never saved: `emulator stop` saves its crawl (and only it: the others were
    // saved by their own runs), and the restarted emulator holds what the killed run wrote.
    const stopAndRestart = (config: string) => {
      const before = trawlSync(cwd, 'urls', '-c', config).out;
      const earlier = existsSync(join(cwd, '.trawl', 'snapshot')); // the earlier tests' runs saved theirs
      const stop = trawlSync(cwd, 'emulator', 'stop');
      assert.match(
        stop.out,
        earlier
          ? /emulator stopped \(saved sigkill in \.trawl\/; the rest was saved already\)/
          : /emulator stopped \(state saved in \.trawl\/\)/,
      );
      const after = trawlSync(cwd, 'urls', '-c', config);
      assert.match(after.err, /restored the emulator's saved state/);
      assert.deepEqual(lines(after.out), lines(before));
    };
    const r = await interruptAndResume(site, cwd, 'sigkill', 'SIGKILL', stopAndRestart);
    assert.equal(r.exit.signal, 'SIGKILL');
    // The restarted emulator queued the pending URLs again: nothing is held.
    assert.doesNotMatch(r.second.err, /still held by an earlier run/);
    assert.deepEqual(r.again, [], 'completed pages fetched again');
  });

  it('Ctrl-C as a finished crawl prints its summary and saves: the save completes, exit 0, said so', async () => {
    // Until 2026-11-28 a signal in the save exited 130 with no word and the save cut short (its
    // marker left), and one just before it said "stopping, giving back held work" of a finished run.
    const config = join(cwd, 'late.json');
    writeFileSync(
      config,
      JSON.stringify({ name: 'late', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    const run = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress');
    await waitFor(() => /finished in/.test(run.out), 'the summary');
    run.child.kill('SIGINT');
    const exit = await run.exited;
    assert.equal(exit.code, 0, `${run.out}\n${run.err}`);
    assert.doesNotMatch(run.err, /giving back held work/);
    assert.doesNotMatch(run.out, /interrupted|Resume with/);
    // The signal came while the command finished (the usual case) or after it exited: either way
    // its state is saved (no unsaved marker of this crawl left).
    const markers = readdirSync(join(cwd, '.trawl', 'unsaved')).filter((f) => f.startsWith('late.'));
    assert.deepEqual(markers, [], run.err);
    if (run.err.includes('the run is done'))
      assert.match(run.err, /stopped after the run \(SIGINT\); it had finished and is saved/);
    process.stdout.write(`# signal while finishing: ${run.err.includes('the run is done')}\n`);
  });

  it('kill -9, then the same command at once: the resumed run says what the killed one still holds, then finishes', async () => {
    // What the killed run held comes back when its lease ends: the resumed run seemed to stall
    // for up to 30 s without a word.
    const r = await interruptAndResume(site, cwd, 'sigkill-held', 'SIGKILL');
    assert.match(
      r.second.err,
      /trawl: \d+ message\(s\) are still held by an earlier run that ended without giving them back \(killed\?\); they come back when its lease ends, within 30 s, and are taken then/,
    );
    assert.deepEqual(r.again, [], 'completed pages fetched again');
  });

  it('crawl --watch: Ctrl-C before the frontier is empty says to resume with --watch', async () => {
    // The resume line named `trawl crawl -c FILE`: run so, it drained and stopped watching.
    const config = join(cwd, 'watch-mid.json');
    writeFileSync(
      config,
      JSON.stringify({
        name: 'watchmid',
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const mark = site.requests.length;
    const run = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress', '--watch');
    await waitFor(
      () => site.requests.slice(mark).filter((r) => r.path !== '/robots.txt').length >= 3,
      'pages fetched',
    );
    run.child.kill('SIGINT');
    const exit = await run.exited;
    assert.equal(exit.code, 130, `${run.out}\n${run.err}`);
    assert.match(run.out, /Resume with: trawl crawl -c \S*watch-mid\.json --watch\n/);
  });

  it('crawl --watch: Ctrl-C once the frontier is empty stops watching, exit 0, with nothing to resume', async () => {
    const config = join(cwd, 'watch.json');
    writeFileSync(
      config,
      JSON.stringify({ name: 'watch', startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } }),
    );
    const run = trawlAsync(cwd, 'crawl', '-c', config, '--no-progress', '--watch');
    await waitFor(() => run.err.includes('trawl: watching'), 'the crawl drained and watches');
    // Its discovery cycle shows while it watches: null until the run ended (its record is written then).
    const status = trawlSync(cwd, 'status', '-c', config);
    assert.ok(Date.parse(JSON.parse(status.out).lastScheduleRuns.discovery) > 0, status.out);
    run.child.kill('SIGINT');
    const exit = await run.exited;
    assert.equal(exit.code, 0, `${run.out}\n${run.err}`);
    assert.match(run.err, /trawl: stopped watching \(SIGINT\); the frontier is empty/);
    assert.doesNotMatch(run.out, /interrupted|Resume with/);
    assert.match(run.out, /finished in/);
  });
});
