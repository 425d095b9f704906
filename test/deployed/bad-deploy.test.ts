/**
 * A bad deploy ends with a clear message and exit code and leaves no process behind: an invalid
 * config (nothing started), a taken port (nothing started); a CDK failure (the local cloud this
 * deploy started is stopped again: not tested yet, no real CDK failure found that is cheap to cause).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../cli/emulator.ts';

const BIN = join(PROJECT_ROOT, 'bin', 'trawl.mjs');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function trawl(cwd: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { ...env, ...extraEnv }, timeout: 300_000, encoding: 'utf8' },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

function dir(config: unknown): string {
  const cwd = mkdtempSync(join(tmpdir(), 'trawl-bad-deploy-'));
  writeFileSync(join(cwd, 'crawl.json'), typeof config === 'string' ? config : JSON.stringify(config));
  return cwd;
}

const good = { name: 'baddeploy', startUrls: ['http://127.0.0.1:9/'], fetch: { allowPrivateNetworks: true } };

describe('trawl deploy --local, failing', { timeout: 600_000 }, () => {
  it('an invalid config: exit 2 naming the field, no local cloud started', async () => {
    const cwd = dir({ name: 'x', startUrls: 'not-a-list' });
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /crawl\.json.*startUrls/s);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
  });

  it('a port already taken: exit 2 naming the port, nothing started', async () => {
    const cwd = dir(good);
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local', '--port', String(port)]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`port ${port} .*taken`));
      assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
    } finally {
      blocker.close();
    }
  });

  it('status on a crawl never deployed from here: exit 2 saying so', async () => {
    const cwd = dir(good);
    const r = await trawl(cwd, ['status', '-c', 'crawl.json']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /crawl "baddeploy" is not deployed from here: run "trawl deploy -c crawl\.json" first/,
    );
  });
});
