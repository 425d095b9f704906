#!/usr/bin/env node
// Runs the test suites with node's own test runner (TypeScript through tsx).
// `all` = unit + infra + integration + deployed; integration suites start their own emulator and sites,
// `deployed` deploys the stack to the local cloud (ministack) with the real CDK CLI.
//
// `all` runs two suites at once (TRAWL_TEST_LANES to change), each a `node --test` process of its
// own, taken from one queue longest first (test/durations.json, the seconds each took in a
// recorded run; a suite not named there counts as 30 s). A lane that ends takes the next suite,
// so the two cores stay busy until the queue is empty: the run takes about half the sum of the
// suites. Every suite has its own emulator, site, ports and working directory, so any two can
// run side by side. Each suite's output is printed whole when it ends; the exit code is non-zero
// if any failed. `--record` writes the measured seconds back to test/durations.json.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const suites = {
  unit: ['test/unit'],
  infra: ['test/infra'],
  integration: ['test/integration'],
  deployed: ['test/deployed'],
};
/** Directories of quick suites that run as one `node --test` process each in `all`. */
const GROUPED = ['test/unit', 'test/infra'];
const DURATIONS = 'test/durations.json';
const UNKNOWN_SECONDS = 30;

const args = process.argv.slice(2);
const record = args.includes('--record');
const positional = args.filter((a) => a !== '--record');
const which = positional[0] ?? 'all';
const dirs = which === 'all' ? Object.values(suites).flat() : suites[which];
if (!dirs) {
  console.error(`unknown suite ${which}; use one of: all, ${Object.keys(suites).join(', ')}`);
  process.exit(2);
}

function collect(dir) {
  if (dir.endsWith('.test.ts')) return [dir];
  let out = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries.sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out = out.concat(collect(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const extra = positional.slice(1);
const files = dirs.flatMap(collect).concat(extra);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

function nodeTest(testFiles, stdio) {
  const argv = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...testFiles];
  return spawn(process.execPath, argv, {
    stdio,
    env: { POWERTOOLS_LOG_LEVEL: 'WARN', ...process.env, TRAWL_TEST: '1' },
  });
}

if (which !== 'all' || extra.length > 0) {
  const child = nodeTest(files, ['ignore', 'inherit', 'inherit']);
  child.on('close', (code) => process.exit(code ?? 1));
} else {
  await runAll();
}

/** One job: a grouped directory or one integration/deployed file. */
function jobsOf(all) {
  const grouped = new Map(GROUPED.map((dir) => [dir, []]));
  const single = [];
  for (const f of all) {
    const dir = GROUPED.find((d) => f.startsWith(`${d}/`));
    if (dir) grouped.get(dir).push(f);
    else single.push(f);
  }
  return [
    ...[...grouped].filter(([, fs]) => fs.length > 0).map(([name, fs]) => ({ name, files: fs })),
    ...single.map((f) => ({ name: f, files: [f] })),
  ];
}

function readDurations() {
  try {
    return JSON.parse(readFileSync(DURATIONS, 'utf8'));
  } catch {
    return {};
  }
}

/** Runs one job, its output captured; resolves to what it printed, its exit code and seconds. */
function runJob(job) {
  const started = Date.now();
  const child = nodeTest(job.files, ['ignore', 'pipe', 'pipe']);
  const chunks = [];
  child.stdout.on('data', (c) => chunks.push(c));
  child.stderr.on('data', (c) => chunks.push(c));
  return new Promise((resolve) =>
    child.on('close', (code) =>
      resolve({
        ...job,
        code: code ?? 1,
        seconds: (Date.now() - started) / 1000,
        output: Buffer.concat(chunks),
      }),
    ),
  );
}

/** The spec reporter's closing counts (`ℹ tests 12`, `ℹ pass 12`, …) of one job's output. */
function counts(output) {
  const text = output.toString('utf8');
  const out = {};
  for (const key of ['tests', 'pass', 'fail', 'skipped', 'todo', 'cancelled']) {
    const m = text.match(new RegExp(`^ℹ ${key} (\\d+)$`, 'm'));
    out[key] = m ? Number(m[1]) : 0;
  }
  return out;
}

async function runAll() {
  const started = Date.now();
  const known = readDurations();
  const estimate = (job) => known[job.name] ?? UNKNOWN_SECONDS;
  const queue = jobsOf(files).sort((a, b) => estimate(b) - estimate(a));
  const lanes = Math.max(1, Number(process.env.TRAWL_TEST_LANES ?? 2));
  const results = [];
  async function lane() {
    for (let job = queue.shift(); job; job = queue.shift()) {
      const result = await runJob(job);
      results.push(result);
      const c = counts(result.output);
      console.log(
        `\n==== ${result.name}: ${result.code === 0 ? 'passed' : `FAILED (exit ${result.code})`}, ${c.tests} tests, ${result.seconds.toFixed(0)} s ====`,
      );
      process.stdout.write(result.output);
    }
  }
  await Promise.all(Array.from({ length: lanes }, lane));

  const total = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
  for (const r of results) for (const [k, v] of Object.entries(counts(r.output))) total[k] += v;
  const failed = results.filter((r) => r.code !== 0);
  const seconds = Math.round((Date.now() - started) / 1000);
  const busiest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
  console.log('\n==== the slowest suites ====');
  for (const r of busiest) console.log(`${r.seconds.toFixed(0).padStart(5)} s  ${r.name}`);
  console.log(
    `\ntests: ${results.length} suites in ${lanes} lanes, ${total.tests} tests, ${total.pass} passed, ${total.fail} failed, ${total.cancelled} cancelled, ${total.skipped} skipped; ${Math.floor(seconds / 60)} min ${seconds % 60} s`,
  );
  // Why each failed, once more at the end: a log cut to its tail still says it.
  for (const r of failed) {
    const text = r.output.toString('utf8');
    const at = text.lastIndexOf('✖ failing tests:');
    const why = at >= 0 ? text.slice(at) : text.slice(-4000);
    console.log(`\n==== why ${r.name} failed ====\n${why.slice(0, 12_000).trimEnd()}`);
  }
  if (failed.length > 0) console.log(`failed suites: ${failed.map((r) => r.name).join(', ')}`);
  if (record) {
    const measured = Object.fromEntries(
      results.sort((a, b) => b.seconds - a.seconds).map((r) => [r.name, Math.round(r.seconds)]),
    );
    writeFileSync(DURATIONS, `${JSON.stringify(measured, null, 2)}\n`);
    console.log(`recorded ${results.length} suites' seconds in ${DURATIONS}`);
  }
  process.exit(failed.length > 0 ? 1 : 0);
}
