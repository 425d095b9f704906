/**
 * The embedded AWS emulator: moto server from the project's own virtualenv, started on a free
 * loopback port and left running in the background so state carries from one command to the
 * next (`trawl crawl`, then `trawl docs`). `AWS_ENDPOINT_URL` set by the user wins (LocalStack);
 * with AWS credentials and no endpoint, real AWS is used.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../shared/errors.ts';
import { withFileLock } from './file-lock.ts';
import { alive, signalExitCode } from './processes.ts';
import { restoreSnapshot, saveSnapshot } from './snapshot.ts';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MOTO_BIN = join(PROJECT_ROOT, '.emulator', 'venv', 'bin', 'moto_server');
const MOTO_PYTHON = join(PROJECT_ROOT, '.emulator', 'venv', 'bin', 'python');
/** moto's server with its per-request overheads taken out (the file says which, and why). */
const MOTO_LAUNCHER = join(PROJECT_ROOT, 'cli', 'moto-server.py');

export interface EmulatorState {
  pid: number;
  port: number;
  endpoint: string;
  startedAt: string;
}

export interface Emulator {
  endpoint: string;
  pid: number;
  stop(): Promise<void>;
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

/** `port` on 127.0.0.1 if it is free now, else a free one. */
export function portOr(port: number | undefined): Promise<number> {
  if (port === undefined || !Number.isInteger(port) || port <= 0 || port > 65535) return freePort();
  return new Promise((res) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', () => res(freePort()));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(port)));
  });
}

/** The emulator answers HTTP (a HEAD of the S3 bucket list; small whatever the state). */
function responds(endpoint: string): Promise<boolean> {
  return new Promise((res) => {
    const req = httpRequest(`${endpoint}/`, { method: 'HEAD', timeout: 2000 }, (r) => {
      r.resume();
      res((r.statusCode ?? 500) < 500);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => res(false));
    req.end();
  });
}

/** Starts a moto server; `detached` leaves it running after this process exits. */
export async function startEmulator(
  opts: { logFile?: string; detached?: boolean; onSpawn?: (pid: number) => void } = {},
): Promise<Emulator> {
  if (!existsSync(MOTO_BIN)) {
    throw new ConfigError(`the embedded emulator is not installed (${MOTO_BIN}): run "npm run setup" first`);
  }
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const out = opts.logFile ? openSync(opts.logFile, 'a') : 'ignore';
  const child = spawn(MOTO_PYTHON, [MOTO_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)], {
    detached: Boolean(opts.detached),
    stdio: ['ignore', out, out],
    env: { ...process.env, MOTO_ALLOW_NONEXISTENT_REGION: 'true' },
  });
  if (opts.detached) child.unref();
  const pid = child.pid as number;
  opts.onSpawn?.(pid);
  for (let i = 0; i < 200; i++) {
    if (await responds(endpoint)) {
      return {
        endpoint,
        pid,
        async stop() {
          if (alive(pid)) process.kill(pid, 'SIGTERM');
          for (let j = 0; j < 50 && alive(pid); j++) await new Promise((r) => setTimeout(r, 100));
        },
      };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`moto server did not start on ${endpoint}${opts.logFile ? ` (see ${opts.logFile})` : ''}`);
}

/** The folder where a working directory keeps its emulator state. */
export function stateDir(cwd = process.cwd()): string {
  return join(cwd, '.trawl');
}

function stateFile(cwd?: string): string {
  return join(stateDir(cwd), 'emulator.json');
}

/** The background emulator of this working directory, if it is running. */
export async function emulatorStatus(cwd?: string): Promise<EmulatorState | null> {
  const file = stateFile(cwd);
  if (!existsSync(file)) return null;
  const state = JSON.parse(readFileSync(file, 'utf8')) as EmulatorState;
  if (!alive(state.pid) || !(await responds(state.endpoint))) return null;
  return state;
}

/** Starts the background emulator unless it already runs. */
export async function ensureBackgroundEmulator(cwd?: string): Promise<EmulatorState> {
  const running = await emulatorStatus(cwd);
  if (running) return running;
  mkdirSync(stateDir(cwd), { recursive: true });
  // One start at a time (cli/file-lock.ts): two commands started together each ran an emulator of
  // their own. The second finds the first one's emulator once it holds the lock.
  return withFileLock(
    join(stateDir(cwd), 'start.lock'),
    async () => (await emulatorStatus(cwd)) ?? start(cwd),
    () => process.stderr.write('trawl: waiting for another trawl command starting the emulator\n'),
  );
}

async function start(cwd?: string): Promise<EmulatorState> {
  // A signal while the emulator starts or its state is restored stops it: left running detached and
  // half-restored, it would be an orphan no command knows of (its state file is written last). The
  // snapshot on disk is untouched; the next command restores it again.
  let pid: number | undefined;
  const abandon = (signal: NodeJS.Signals) => {
    process.stderr.write(
      'trawl: stopping the emulator this command was starting (its saved state is untouched)\n',
    );
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGTERM');
    // The command's own handler, when it has one, says the rest and exits.
    if (process.listenerCount(signal) <= 1) process.exit(signalExitCode(signal));
  };
  process.prependListener('SIGINT', abandon);
  process.prependListener('SIGTERM', abandon);
  // A command killed with SIGKILL while it started one (no handler runs) left it behind: its pid
  // is in this file from the spawn until the state file names it.
  const starting = join(stateDir(cwd), 'emulator.starting');
  stopOrphan(starting);
  try {
    const emu = await startEmulator({
      logFile: join(stateDir(cwd), 'emulator.log'),
      detached: true,
      onSpawn: (p) => {
        pid = p;
        writeFileSync(starting, String(p));
      },
    });
    const state = await restoreInto(emu, cwd);
    rmSync(starting, { force: true });
    return state;
  } finally {
    process.off('SIGINT', abandon);
    process.off('SIGTERM', abandon);
  }
}

/** Stops the emulator a killed command was starting, if it still runs (its command line says so). */
function stopOrphan(starting: string): void {
  const pid = existsSync(starting) ? Number(readFileSync(starting, 'utf8')) : 0;
  rmSync(starting, { force: true });
  if (!pid || !alive(pid)) return;
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return; // no /proc: whose pid it is now cannot be told
  }
  if (!cmdline.includes('moto')) return;
  process.stderr.write(`trawl: stopping an emulator a killed command left starting (pid ${pid})\n`);
  process.kill(pid, 'SIGTERM');
}

/** Restores the saved state into a just-started emulator and records it as this folder's. */
async function restoreInto(emu: Emulator, cwd?: string): Promise<EmulatorState> {
  const state = {
    pid: emu.pid,
    port: Number(new URL(emu.endpoint).port),
    endpoint: emu.endpoint,
    startedAt: new Date().toISOString(),
  };
  useEmulatorEnv(emu.endpoint);
  const pending = await restoreSnapshot(emu.endpoint, snapshotDir(cwd)).catch(async (err) => {
    await emu.stop();
    throw new Error(`could not restore .trawl/snapshot into the emulator: ${(err as Error).message}`, {
      cause: err,
    });
  });
  // The emulator now holds what the snapshot holds: nothing is unsaved (markUnsaved).
  rmSync(unsavedDir(cwd), { recursive: true, force: true });
  mkdirSync(unsavedDir(cwd), { recursive: true });
  if (existsSync(snapshotDir(cwd))) {
    process.stderr.write(
      `trawl: restored the emulator's saved state from .trawl/snapshot (${pending} pending URL(s) re-queued)\n`,
    );
  }
  writeFileSync(stateFile(cwd), JSON.stringify(state, null, 2));
  return state;
}

function snapshotDir(cwd?: string): string {
  return join(stateDir(cwd), 'snapshot');
}

/**
 * `.trawl/unsaved/`: one empty file per command that changes a crawl, `<crawl>.<pid>`, from before
 * its first write until its save (`persistEmbeddedState`). `trawl emulator stop` saves only the
 * crawls named there (a command killed before its save, or one still running): every other crawl
 * is in the snapshot as the emulator holds it. The folder is made when the emulator starts; an
 * emulator started without it (an older Trawl) is saved whole.
 */
function unsavedDir(cwd?: string): string {
  return join(stateDir(cwd), 'unsaved');
}

const markerName = (crawl: string) => `${encodeURIComponent(crawl)}.${process.pid}`;

/** This command is about to change `crawl` in this folder's embedded emulator (see unsavedDir). */
export async function markUnsaved(crawl: string, cwd?: string): Promise<void> {
  const state = await emulatorStatus(cwd);
  if (!state || process.env.AWS_ENDPOINT_URL !== state.endpoint) return;
  mkdirSync(unsavedDir(cwd), { recursive: true });
  writeFileSync(join(unsavedDir(cwd), markerName(crawl)), '');
}

/** The crawls changed since their last save; null when the emulator keeps no record of them. */
function unsavedCrawls(cwd?: string): Set<string> | null {
  if (!existsSync(unsavedDir(cwd))) return null;
  return new Set(readdirSync(unsavedDir(cwd)).map((f) => decodeURIComponent(f.slice(0, f.lastIndexOf('.')))));
}

/** Saves the background emulator's state (after a command changed it), so a reboot loses nothing. */
export async function persistEmbeddedState(
  cwd?: string,
  crawl?: string,
  announce?: () => void,
): Promise<void> {
  const state = await emulatorStatus(cwd);
  if (!state || process.env.AWS_ENDPOINT_URL !== state.endpoint) return;
  announce?.();
  // The markers of this crawl that commands killed before their save left (dead before this save
  // starts: all they wrote is in it). Left there, every later `emulator stop` saved the crawl again.
  const dead = crawl === undefined ? [] : deadMarkers(crawl, cwd);
  await saveSnapshot(state.endpoint, snapshotDir(cwd), crawl === undefined ? undefined : [crawl]);
  if (crawl !== undefined) rmSync(join(unsavedDir(cwd), markerName(crawl)), { force: true });
  for (const f of dead) rmSync(join(unsavedDir(cwd), f), { force: true });
}

/**
 * Whether a command in this folder is changing `crawl` now (a live process holds a marker of it:
 * `trawl crawl`, `refresh`, `clear-errors`…); null when the crawl is not on this folder's embedded
 * emulator (LocalStack, AWS: no record is kept of who runs it).
 */
export async function commandRunning(crawl: string, cwd?: string): Promise<boolean | null> {
  const state = await emulatorStatus(cwd);
  if (!state || process.env.AWS_ENDPOINT_URL !== state.endpoint) return null;
  return otherMarkers(crawl, cwd).some((m) => alive(m.pid));
}

/** `crawl`'s markers whose commands are no longer running. */
function deadMarkers(crawl: string, cwd?: string): string[] {
  return otherMarkers(crawl, cwd)
    .filter((m) => !alive(m.pid))
    .map((m) => m.file);
}

/** `crawl`'s markers (see unsavedDir) of other commands than this one: each file and its command's pid. */
function otherMarkers(crawl: string, cwd?: string): { file: string; pid: number }[] {
  if (!existsSync(unsavedDir(cwd))) return [];
  const prefix = `${encodeURIComponent(crawl)}.`;
  return readdirSync(unsavedDir(cwd)).flatMap((file) => {
    if (!file.startsWith(prefix)) return [];
    const pid = Number(file.slice(prefix.length));
    return Number.isInteger(pid) && pid !== process.pid ? [{ file, pid }] : [];
  });
}

/** What `stopBackgroundEmulator` did: not running, or stopped after saving these crawls (all: null). */
export type EmulatorStop = { running: false } | { running: true; saved: string[] | null };

/** Stops the background emulator, saving first what is not saved yet (see unsavedDir). */
export async function stopBackgroundEmulator(cwd?: string): Promise<EmulatorStop> {
  const state = await emulatorStatus(cwd);
  let saved: string[] | null = [];
  if (state) {
    useEmulatorEnv(state.endpoint);
    const unsaved = existsSync(snapshotDir(cwd)) ? unsavedCrawls(cwd) : null;
    saved = unsaved === null ? null : [...unsaved].sort();
    if (saved === null || saved.length > 0)
      await saveSnapshot(state.endpoint, snapshotDir(cwd), saved ?? undefined);
    rmSync(unsavedDir(cwd), { recursive: true, force: true });
  }
  rmSync(stateFile(cwd), { force: true });
  if (!state) return { running: false };
  process.kill(state.pid, 'SIGTERM');
  for (let j = 0; j < 50 && alive(state.pid); j++) await new Promise((r) => setTimeout(r, 100));
  return { running: true, saved };
}

function hasAwsCredentials(env: NodeJS.ProcessEnv): boolean {
  if (env.AWS_ACCESS_KEY_ID || env.AWS_PROFILE || env.AWS_CONTAINER_CREDENTIALS_FULL_URI) return true;
  return existsSync(join(homedir(), '.aws', 'credentials'));
}

/** Where AWS is for this command: the user's endpoint, real AWS, or the embedded emulator. */
export async function resolveAwsEndpoint(
  env: NodeJS.ProcessEnv = process.env,
  say: (msg: string) => void = (m) => process.stderr.write(`${m}\n`),
): Promise<string | null> {
  if (env.AWS_ENDPOINT_URL) return env.AWS_ENDPOINT_URL;
  if (hasAwsCredentials(env)) return null;
  const state = await ensureBackgroundEmulator();
  say(
    `trawl: no AWS endpoint or credentials: using the embedded emulator at ${state.endpoint} (state in .trawl/)`,
  );
  useEmulatorEnv(state.endpoint, env);
  return state.endpoint;
}

/** Points every AWS client of this process at an emulator, with its dummy credentials. */
export function useEmulatorEnv(endpoint: string, env: NodeJS.ProcessEnv = process.env): void {
  env.AWS_ENDPOINT_URL ??= endpoint;
  env.AWS_ACCESS_KEY_ID ??= 'test';
  env.AWS_SECRET_ACCESS_KEY ??= 'test';
  env.AWS_REGION ??= 'us-east-1';
}
