/**
 * The embedded search engine (index.sink "opensearch" with no endpoint): the OpenSearch that
 * scripts/setup.sh installs under .emulator/, started on a free loopback port with its data
 * under .trawl/search-engine/. OpenSearch refuses to run as root, so as root it runs as the
 * unprivileged system user setup creates.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { ConfigError } from '../shared/errors.ts';
import { freePort, PROJECT_ROOT, portOr, stateDir } from './emulator.ts';
import { alive } from './processes.ts';

export const OPENSEARCH_HOME = join(PROJECT_ROOT, '.emulator', 'opensearch-2.19.1');
const RUN_AS = 'trawl-search';
export const ENGINE_HELP =
  'the search engine is not installed: it needs Java 11..23 and Maven on the PATH (e.g. apt-get install openjdk-17-jre-headless maven), then `npm run setup`; or set index.opensearch.endpoint to a running OpenSearch';

export interface SearchEngine {
  endpoint: string;
  pid: number;
  stop(): Promise<void>;
}

export function engineInstalled(): boolean {
  return existsSync(join(OPENSEARCH_HOME, 'bin', 'opensearch'));
}

/**
 * Up and serving: a started engine answers `red` while it recovers its indices' shards, and a
 * search then failed (search_phase_execution_exception) where the same command run again worked.
 * One node holds no replicas: `yellow` is as good as it gets with indices.
 */
async function healthy(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint}/_cluster/health`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return false;
    const { status } = (await res.json()) as { status?: string };
    return status === 'green' || status === 'yellow';
  } catch {
    return false;
  }
}

export const JAVA_HELP =
  'the embedded search engine needs Java 11..23 (e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME); the crawl itself needs no Java: keep index.sink "feed", or set index.opensearch.endpoint to a running OpenSearch';

/** The system Java's home (the integ-test zip bundles no JDK): JAVA_HOME, else `java` on the PATH. */
export function javaHome(): string {
  const env = process.env.JAVA_HOME;
  if (env) {
    if (existsSync(join(env, 'bin', 'java'))) return env;
    throw new ConfigError(`no Java at JAVA_HOME=${env}: ${JAVA_HELP}`);
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const bin = join(dir, 'java');
    if (existsSync(bin)) return dirname(dirname(realpathSync(bin)));
  }
  throw new ConfigError(`no Java on the PATH: ${JAVA_HELP}`);
}

/** uid/gid of the unprivileged user when running as root, else null (run as ourselves). */
function runAs(): { uid: number; gid: number } | null {
  if (userInfo().uid !== 0) return null;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${RUN_AS}:`));
  if (!line) throw new ConfigError(`running as root and no user ${RUN_AS}: run \`npm run setup\``);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Where the unprivileged user keeps its data when it cannot reach the asked-for folder. */
const FALLBACK_ROOT = '/var/lib/trawl-search';

/** True when every folder above dir lets others through (mkdtemp makes 0700 folders). */
function othersCanReach(dir: string): boolean {
  for (let d = dirname(dir); ; d = dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return false;
    if (d === dirname(d)) return true;
  }
}

/**
 * The folder the engine really uses: dataDir, or — as root, when the unprivileged user cannot
 * traverse a folder above it — one under /var/lib/trawl-search named after dataDir (the
 * user's folders' permissions are left as they are).
 */
function engineHome(dataDir: string, user: { uid: number; gid: number } | null): string {
  if (!user || othersCanReach(dataDir)) return dataDir;
  mkdirSync(FALLBACK_ROOT, { recursive: true, mode: 0o755 });
  accessSync(FALLBACK_ROOT, constants.W_OK);
  return join(FALLBACK_ROOT, createHash('sha256').update(dataDir).digest('hex').slice(0, 16));
}

/**
 * The engine's install folder as the unprivileged user can read it: the one under .emulator/, or
 * — when a folder above the project is closed to others — a copy under /var/lib/trawl-search.
 */
function readableInstall(user: { uid: number; gid: number } | null): string {
  if (!user || othersCanReach(join(OPENSEARCH_HOME, 'bin'))) return OPENSEARCH_HOME;
  const copy = join(FALLBACK_ROOT, 'opensearch-2.19.1');
  if (!existsSync(join(copy, 'bin', 'opensearch'))) {
    mkdirSync(FALLBACK_ROOT, { recursive: true, mode: 0o755 });
    cpSync(OPENSEARCH_HOME, `${copy}.tmp`, { recursive: true });
    rmSync(copy, { recursive: true, force: true });
    renameSync(`${copy}.tmp`, copy);
  }
  // As setup does for the original: jvm.options writes logs/gc.log under the install, whoever runs it.
  chmodSync(join(copy, 'logs'), 0o1777);
  return copy;
}

/** Starts OpenSearch in dataDir and waits for its health; `detached` leaves it running. */
export async function startSearchEngine(
  asked: string,
  opts: { detached?: boolean; port?: number } = {},
): Promise<SearchEngine> {
  if (!engineInstalled()) throw new ConfigError(ENGINE_HELP);
  const java = javaHome();
  const user = runAs();
  const dataDir = engineHome(asked, user);
  const home = readableInstall(user);
  for (const d of [dataDir, join(dataDir, 'data'), join(dataDir, 'logs')]) {
    mkdirSync(d, { recursive: true });
    if (user) chownSync(d, user.uid, user.gid);
  }
  // Its own config folder: the engine writes its keystore there at start.
  const conf = join(dataDir, 'config');
  if (!existsSync(conf)) cpSync(join(home, 'config'), conf, { recursive: true });
  if (user)
    for (const f of readdirSync(conf, { recursive: true }))
      chownSync(join(conf, String(f)), user.uid, user.gid);
  if (user) chownSync(conf, user.uid, user.gid);
  // The port asked for (the one it had before, in this folder) when it is free: a crawl running
  // meanwhile keeps the endpoint it started with.
  const port = await portOr(opts.port);
  const transport = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const out = openSync(join(dataDir, 'engine.log'), 'a');
  const child = spawn(
    join(home, 'bin', 'opensearch'),
    [
      '-Ediscovery.type=single-node',
      // A Trawl index is made with its mapping (analyzers, `.intl`), never by a bulk that finds it
      // gone (it got the default mapping, and searches missed in silence): trawl-* not auto-created.
      '-Eaction.auto_create_index=-trawl-*,+*',
      '-Enetwork.host=127.0.0.1',
      `-Ehttp.port=${port}`,
      `-Etransport.port=${transport}`,
      `-Epath.data=${join(dataDir, 'data')}`,
      `-Epath.logs=${join(dataDir, 'logs')}`,
    ],
    {
      cwd: dataDir, // jvm.options writes logs/gc.log relative to here
      detached: Boolean(opts.detached),
      stdio: ['ignore', out, out],
      env: {
        ...process.env,
        OPENSEARCH_JAVA_HOME: java,
        OPENSEARCH_PATH_CONF: conf,
        OPENSEARCH_JAVA_OPTS: '-Xms256m -Xmx256m',
        ...(user ? { HOME: dataDir } : {}),
      },
      ...(user ?? {}),
    },
  );
  if (opts.detached) child.unref();
  const pid = child.pid as number;
  const stop = async () => {
    if (alive(pid)) process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  };
  for (let i = 0; i < 600; i++) {
    if (await healthy(endpoint)) return { endpoint, pid, stop };
    if (!alive(pid) || child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`the search engine did not start: see ${join(dataDir, 'engine.log')}`);
}

interface EngineState {
  pid: number;
  endpoint: string;
  startedAt: string;
}

const engineDir = (cwd?: string) => join(stateDir(cwd), 'search-engine');
const engineFile = (cwd?: string) => join(stateDir(cwd), 'search-engine.json');
/** The port the folder's engine last listened on: started again, it takes it back if it is free. */
const portFile = (cwd?: string) => join(stateDir(cwd), 'search-engine.port');

function lastPort(cwd?: string): number | undefined {
  if (!existsSync(portFile(cwd))) return undefined;
  const port = Number(readFileSync(portFile(cwd), 'utf8').trim());
  return Number.isInteger(port) ? port : undefined;
}

export async function searchEngineStatus(cwd?: string): Promise<EngineState | null> {
  if (!existsSync(engineFile(cwd))) return null;
  const state = JSON.parse(readFileSync(engineFile(cwd), 'utf8')) as EngineState;
  return alive(state.pid) && (await healthy(state.endpoint)) ? state : null;
}

/** The background engine of this working directory, started if needed; sets TRAWL_SEARCH_ENDPOINT. */
export async function ensureSearchEngine(cwd?: string): Promise<EngineState> {
  let state = await searchEngineStatus(cwd);
  if (!state) {
    // Stopped and started again (`trawl search-engine stop`, `start`) while a crawl runs: on the
    // same port, the crawl's index stage reaches it again and its failed batches go through on
    // their retries. On a new port they failed every retry into the dead-letter queue.
    const engine = await startSearchEngine(engineDir(cwd), { detached: true, port: lastPort(cwd) });
    state = { pid: engine.pid, endpoint: engine.endpoint, startedAt: new Date().toISOString() };
    mkdirSync(stateDir(cwd), { recursive: true });
    writeFileSync(engineFile(cwd), `${JSON.stringify(state)}\n`);
    writeFileSync(portFile(cwd), `${new URL(engine.endpoint).port}\n`);
  }
  process.env.TRAWL_SEARCH_ENDPOINT = state.endpoint;
  return state;
}

export async function stopSearchEngine(cwd?: string): Promise<boolean> {
  const state = await searchEngineStatus(cwd);
  rmSync(engineFile(cwd), { force: true });
  if (!state) return false;
  process.kill(state.pid, 'SIGTERM');
  for (let i = 0; i < 100 && alive(state.pid); i++) await new Promise((r) => setTimeout(r, 100));
  return true;
}
