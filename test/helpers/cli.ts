/** The real `trawl` command as a test runs it: the project's Node 24, a folder of its own, no AWS settings. */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin', 'trawl.mjs');
export const NODE = join(ROOT, 'node_modules', '.bin', 'node');

/** The environment `trawl` runs in from `cwd`: HOME there, no AWS endpoint, keys or profile. */
export function cliEnv(cwd: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, HOME: cwd };
  for (const k of ['AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_PROFILE'])
    delete env[k];
  return env;
}

/** `trawl` as a child process that does not block this one. */
export function trawlAsync(cwd: string, extraEnv: Record<string, string>, ...args: string[]) {
  return new Promise<{ code: number | null; out: string; err: string }>((done) => {
    execFile(
      NODE,
      [BIN, ...args],
      { cwd, env: cliEnv(cwd, extraEnv), encoding: 'utf8', timeout: 240_000 },
      (error, out, err) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, out, err }),
    );
  });
}
