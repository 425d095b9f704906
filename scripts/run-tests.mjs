#!/usr/bin/env node
// Runs the test suites with node's own test runner (TypeScript through tsx).
// `all` = unit + infra + integration + deployed; integration suites start their own emulator and sites,
// `deployed` deploys the stack to the local cloud (ministack) with the real CDK CLI.
//
// `all` runs in two lanes at once, each one file at a time: the suites that spend most of their
// time waiting (the deployed stack waits for its 1-minute schedule, the resume test for leases,
// the fault test for redeliveries) beside everything else, so the two cores are used and the run
// takes minutes less. Every suite has its own emulator, site, ports and working directory. The
// wait lane's output is printed after the main lane's; the exit code is non-zero if either failed.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const suites = {
  unit: ['test/unit'],
  infra: ['test/infra'],
  integration: ['test/integration'],
  deployed: ['test/deployed'],
};
/** Suites that mostly wait (schedules, leases, redeliveries): the second lane of `all`. */
const WAITING = [
  'test/deployed',
  'test/integration/interrupt-resume.test.ts',
  'test/integration/fault-injection.test.ts',
  'test/integration/cli.test.ts',
  // polite hosts' gaps, visibility timeouts and leases: mostly waiting too (moved here 2026-11-26,
  // when the main lane took 12.9 min and this one 8.1)
  'test/integration/politeness.test.ts',
  'test/integration/redelivery.test.ts',
  'test/integration/many-hosts.test.ts',
  'test/integration/fetch-leases.test.ts',
  'test/integration/adaptive-refresh.test.ts',
  // moved 2026-11-27, when the main lane took 15.7 min and this one 9.2: time-travelled refresh
  // cycles and two CLI processes at once (2.5 min together)
  'test/integration/refresh-policy.test.ts',
  'test/integration/cli-concurrent.test.ts',
  'test/integration/orphans.test.ts',
  'test/integration/clock-travel.test.ts',
  'test/unit',
  'test/infra',
];

const which = process.argv[2] ?? 'all';
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

const extra = process.argv.slice(3);
const files = dirs.flatMap(collect).concat(extra);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

/** One lane: the files one at a time; resolves to the exit code. */
function lane(laneFiles, stdout) {
  const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...laneFiles];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', stdout ?? 'inherit', stdout ?? 'inherit'],
    env: { POWERTOOLS_LOG_LEVEL: 'WARN', ...process.env, TRAWL_TEST: '1' },
  });
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

const started = Date.now();
if (which !== 'all' || extra.length > 0) process.exit(await lane(files));

const waiting = new Set(WAITING.flatMap(collect));
const main = files.filter((f) => !waiting.has(f));
const second = files.filter((f) => waiting.has(f));
const logPath = join(mkdtempSync(join(tmpdir(), 'trawl-tests-')), 'waiting-lane.log');
const log = createWriteStream(logPath);
await new Promise((resolve) => log.on('open', resolve));
const [mainCode, secondCode] = await Promise.all([lane(main), lane(second, log)]);
log.end();
await new Promise((resolve) => log.on('close', resolve));
console.log(
  `\n==== the second lane (${second.length} files: unit, infra, deployed, resume, faults, cli, politeness, redelivery, leases, refresh) ====\n`,
);
process.stdout.write(readFileSync(logPath));
const seconds = Math.round((Date.now() - started) / 1000);
console.log(
  `\ntests: main lane exit ${mainCode}, second lane exit ${secondCode}; ${Math.floor(seconds / 60)} min ${seconds % 60} s`,
);
process.exit(mainCode !== 0 ? mainCode : secondCode);
