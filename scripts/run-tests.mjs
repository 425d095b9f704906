#!/usr/bin/env node
// Runs the test suites with node's own test runner (TypeScript through tsx).
// `all` = unit + infra + integration + deployed; integration suites start their own emulator and sites,
// `deployed` deploys the stack to the local cloud (ministack) with the real CDK CLI.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const suites = {
  unit: ['test/unit'],
  infra: ['test/infra'],
  integration: ['test/integration'],
  deployed: ['test/deployed'],
};
const which = process.argv[2] ?? 'all';
const dirs = which === 'all' ? Object.values(suites).flat() : suites[which];
if (!dirs) {
  console.error(`unknown suite ${which}; use one of: all, ${Object.keys(suites).join(', ')}`);
  process.exit(2);
}

function collect(dir) {
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

const files = dirs.flatMap(collect).concat(process.argv.slice(3));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files];
const r = spawnSync(process.execPath, args, {
  stdio: 'inherit',
  env: { POWERTOOLS_LOG_LEVEL: 'WARN', ...process.env, TRAWL_TEST: '1' },
});
process.exit(r.status ?? 1);
