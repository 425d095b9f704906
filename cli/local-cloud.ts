/**
 * The local cloud `trawl deploy --local` deploys to: ministack (PyPI, pinned by scripts/setup.sh in
 * .emulator/ministack) runs CloudFormation, SQS, DynamoDB, S3, EventBridge and Lambda without
 * Docker; its Lambda executor runs the bundled Node handlers as subprocesses with the first `node`
 * on PATH, so the project's Node 24 goes first. One per working directory, in the background,
 * on a free loopback port, recorded in .trawl/local-cloud.json.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { ConfigError } from '../shared/errors.ts';
import { freePort, PROJECT_ROOT, stateDir } from './emulator.ts';
import { withFileLock } from './file-lock.ts';
import { alive } from './processes.ts';

const MINISTACK_BIN = join(PROJECT_ROOT, '.emulator', 'ministack', 'bin', 'ministack');

export interface LocalCloud {
  pid: number;
  endpoint: string;
  /** CDK caches the account per access key (~/.cdk/cache): one key per emulator, never reused */
  accessKeyId: string;
  region: string;
  startedAt: string;
  bootstrapped?: boolean;
}

const stateFile = (cwd?: string) => join(stateDir(cwd), 'local-cloud.json');

function healthy(endpoint: string): Promise<boolean> {
  return new Promise((res) => {
    const req = httpRequest(`${endpoint}/_localstack/health`, { timeout: 2000 }, (r) => {
      r.resume();
      res(r.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => res(false));
    req.end();
  });
}

/** Refuses a port another process holds, before anything is started. */
function checkPortFree(port: number): Promise<void> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      rej(new ConfigError(`local cloud: port ${port} on 127.0.0.1 is taken (${err.code}); pick another`)),
    );
    srv.listen(port, '127.0.0.1', () => srv.close(() => res()));
  });
}

/** The running local cloud of this working directory, if any. */
export async function localCloudStatus(cwd?: string): Promise<LocalCloud | null> {
  if (!existsSync(stateFile(cwd))) return null;
  const state = JSON.parse(readFileSync(stateFile(cwd), 'utf8')) as LocalCloud;
  return alive(state.pid) && (await healthy(state.endpoint)) ? state : null;
}

export function saveLocalCloud(state: LocalCloud, cwd?: string): void {
  writeFileSync(stateFile(cwd), JSON.stringify(state, null, 2));
}

/**
 * Starts ministack unless it runs; `started` says whether this call started it (a failed deploy stops
 * what it started and nothing else). `port` 0 or unset: a free one.
 */
export async function ensureLocalCloud(
  opts: { port?: number; cwd?: string } = {},
): Promise<{ cloud: LocalCloud; started: boolean }> {
  // Two deploys at once each started a cloud of their own, the second's record overwriting the
  // first's: one deployed into a cloud nothing pointed at, and stopped it on its failure.
  return withFileLock(join(stateDir(opts.cwd), 'local-cloud.lock'), () => startOrFind(opts));
}

async function startOrFind(opts: {
  port?: number;
  cwd?: string;
}): Promise<{ cloud: LocalCloud; started: boolean }> {
  const running = await localCloudStatus(opts.cwd);
  if (running) return { cloud: running, started: false };
  if (!existsSync(MINISTACK_BIN)) {
    throw new ConfigError(`the local cloud is not installed (${MINISTACK_BIN}): run "npm run setup" first`);
  }
  const port = opts.port || (await freePort());
  await checkPortFree(port);
  mkdirSync(stateDir(opts.cwd), { recursive: true });
  const logFile = join(stateDir(opts.cwd), 'local-cloud.log');
  const { pid, endpoint } = await spawnMinistack(port, { logFile, detached: true, cwd: stateDir(opts.cwd) });
  const cloud: LocalCloud = {
    pid,
    endpoint,
    accessKeyId: `LKIA${randomBytes(8).toString('hex').toUpperCase()}`,
    region: 'us-east-1',
    startedAt: new Date().toISOString(),
  };
  saveLocalCloud(cloud, opts.cwd);
  return { cloud, started: true };
}

/**
 * Starts ministack on `port` and waits until it answers; killed again if it does not. Not detached:
 * it stops with this process's `stop()` (the test helper's use, TRAWL_TEST_EMULATOR=ministack).
 */
export async function spawnMinistack(
  port: number,
  opts: { logFile?: string; detached?: boolean; cwd?: string } = {},
): Promise<{ pid: number; endpoint: string; stop(): Promise<void> }> {
  const out = opts.logFile ? openSync(opts.logFile, 'a') : 'ignore';
  const child = spawn(MINISTACK_BIN, [], {
    detached: Boolean(opts.detached),
    stdio: ['ignore', out, out],
    cwd: opts.cwd,
    env: {
      ...process.env,
      BIND_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      PATH: `${join(PROJECT_ROOT, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}`,
    },
  });
  if (opts.detached) child.unref();
  const endpoint = `http://127.0.0.1:${port}`;
  const pid = child.pid as number;
  for (let i = 0; i < 300 && child.exitCode === null; i++) {
    if (await healthy(endpoint)) {
      const stop = async () => {
        if (alive(pid)) process.kill(pid, 'SIGTERM');
        for (let j = 0; j < 50 && alive(pid); j++) await new Promise((r) => setTimeout(r, 100));
      };
      return { pid, endpoint, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (child.exitCode === null) child.kill('SIGKILL');
  throw new ConfigError(
    `local cloud did not start on ${endpoint}${opts.logFile ? ` (see ${opts.logFile})` : ''}`,
  );
}

/** Stops the local cloud (its Lambda subprocesses are its children and go with it). */
export async function stopLocalCloud(cwd?: string): Promise<boolean> {
  const state = existsSync(stateFile(cwd))
    ? (JSON.parse(readFileSync(stateFile(cwd), 'utf8')) as LocalCloud)
    : null;
  rmSync(stateFile(cwd), { force: true });
  if (!state || !alive(state.pid)) return false;
  // Its own process group (detached): the function subprocesses stop with it.
  try {
    process.kill(-state.pid, 'SIGTERM');
  } catch {
    process.kill(state.pid, 'SIGTERM');
  }
  for (let j = 0; j < 50 && alive(state.pid); j++) await new Promise((r) => setTimeout(r, 100));
  if (alive(state.pid)) process.kill(-state.pid, 'SIGKILL');
  return true;
}

/** The environment an AWS client (ours, the CDK CLI's) needs to talk to the local cloud. */
export function localCloudEnv(cloud: LocalCloud): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: cloud.endpoint,
    AWS_ACCESS_KEY_ID: cloud.accessKeyId,
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: cloud.region,
    AWS_DEFAULT_REGION: cloud.region,
  };
}
