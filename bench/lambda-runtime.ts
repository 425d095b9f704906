/**
 * One Lambda container for the memory benchmarks, started as Lambda's Node.js runtime starts one:
 * Node with the bootstrap script's flags (gc() exposed, V8's heap sized from the function's
 * memory: a tenth for the young generation, semi-spaces of half that, the rest for the old one)
 * running AWS's own runtime interface client (npm's `aws-lambda-ric`, what the managed runtime's
 * /var/runtime/index.mjs is built from; fetched with `npm pack` into .emulator/ on first use, as a
 * benchmark-only tool it is no dependency of the project) on the handler's bundle. This process
 * plays Lambda's Runtime API on loopback: it hands out one event and reads the container's memory
 * from /proc when the answer comes (VmHWM, the kernel's high-water mark: what Lambda reports as
 * Max Memory Used). The runtime client is in the figure; earlier runs imported the bundle from a
 * script of their own and could not count it. Its native Runtime API client (curl, built by the
 * package's install scripts, which this does not run) is not: the client's own JavaScript one asks
 * for events and `lambda-rapid-shim.cjs` posts the answer. Built and used in its place, the
 * native client added 1 MB to the loaded container (85 MB against 84).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RIC_VERSION = '4.0.2';
const RIC_HOME = join(ROOT, `.emulator/aws-lambda-ric-${RIC_VERSION}`);
const RIC = join(RIC_HOME, 'package/index.mjs');
const SHIM = join(ROOT, 'bench/lambda-rapid-shim.cjs');
const CLOCK_TICKS = 100; // USER_HZ on Linux

export interface ContainerRun {
  /** RSS (MB) once the runtime client has loaded the bundle and asks for its first event */
  loaded: number;
  /** the peak RSS (MB) when the answer comes */
  peak: number;
  /** CPU (ms) the invocation took */
  cpuMs: number;
  wallMs: number;
  /** the handler's answer; null when it failed (error names why) */
  result: unknown;
  error: string | null;
}

export interface ContainerOptions {
  node: string;
  /** the handler's bundle: `index.mjs` exporting `handler` */
  bundle: string;
  memoryMb: number;
  env: NodeJS.ProcessEnv;
  event: unknown;
  timeoutMs?: number;
}

function procStatus(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

function procCpuMs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** The runtime client's package, fetched from the npm registry on first use. */
function ensureRuntimeClient(): void {
  if (existsSync(RIC)) return;
  mkdirSync(RIC_HOME, { recursive: true });
  const tgz = execFileSync('npm', ['pack', `aws-lambda-ric@${RIC_VERSION}`, '--silent'], {
    cwd: RIC_HOME,
    encoding: 'utf8',
  }).trim();
  execFileSync('tar', ['-xzf', tgz, 'package/index.mjs', 'package/LICENSE', 'package/NOTICE'], {
    cwd: RIC_HOME,
  });
  rmSync(join(RIC_HOME, tgz));
}

/** Runs one invocation of the bundle's handler in a container of its own; resolves when it answers. */
export async function runContainer(opts: ContainerOptions): Promise<ContainerRun> {
  ensureRuntimeClient();
  const requestId = 'bench-invocation';
  const timeoutMs = opts.timeoutMs ?? 120_000;
  let child: ChildProcess | null = null;
  let loaded = 0;
  let cpu0 = 0;
  let t0 = 0;
  let settle: (run: ContainerRun) => void = () => undefined;
  const done = new Promise<ContainerRun>((resolve) => {
    settle = resolve;
  });
  // The first call settles; a later one (the exit after the answer) reads nothing of a dead process.
  const finish = (result: unknown, error: string | null) => {
    const pid = child?.pid;
    const alive = pid !== undefined && child?.exitCode === null && child?.signalCode === null;
    settle({
      loaded,
      peak: alive ? procStatus(pid, 'VmHWM') : 0,
      cpuMs: alive ? procCpuMs(pid) - cpu0 : 0,
      wallMs: Date.now() - t0,
      result,
      error,
    });
  };
  const readBody = (req: http.IncomingMessage) =>
    new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      req
        .on('data', (c: Buffer) => chunks.push(c))
        .on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  let handedOut = false;
  const api = http.createServer(async (req, res) => {
    const path = req.url ?? '';
    if (req.method === 'GET' && path.endsWith('/runtime/invocation/next')) {
      // The second call comes after the answer: Lambda would freeze the container; it waits here.
      if (handedOut) return;
      handedOut = true;
      const pid = child?.pid as number;
      loaded = procStatus(pid, 'VmRSS');
      cpu0 = procCpuMs(pid);
      t0 = Date.now();
      res.writeHead(200, {
        'content-type': 'application/json',
        'lambda-runtime-aws-request-id': requestId,
        'lambda-runtime-deadline-ms': String(t0 + timeoutMs),
        'lambda-runtime-invoked-function-arn': 'arn:aws:lambda:us-east-1:000000000000:function:trawl-bench',
        'lambda-runtime-trace-id': 'Root=1-00000000-000000000000000000000000;Sampled=0',
      });
      res.end(JSON.stringify(opts.event));
      return;
    }
    const body = await readBody(req);
    res.writeHead(202).end('{}');
    if (path.endsWith(`/invocation/${requestId}/response`)) finish(JSON.parse(body || 'null'), null);
    else if (path.endsWith('/error')) finish(null, body);
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const { port } = api.address() as AddressInfo;
  const newSpace = Math.floor(opts.memoryMb / 10);
  child = spawn(
    opts.node,
    [
      '--expose-gc',
      `--max-semi-space-size=${Math.floor(newSpace / 2)}`,
      `--max-old-space-size=${opts.memoryMb - newSpace}`,
      '--require',
      SHIM,
      RIC,
    ],
    {
      env: {
        ...opts.env,
        AWS_LAMBDA_RUNTIME_API: `127.0.0.1:${port}`,
        _HANDLER: 'index.handler',
        LAMBDA_TASK_ROOT: dirname(opts.bundle),
        AWS_LAMBDA_FUNCTION_NAME: 'trawl-bench',
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(opts.memoryMb),
        AWS_LAMBDA_LOG_GROUP_NAME: '/aws/lambda/trawl-bench',
        AWS_LAMBDA_LOG_STREAM_NAME: 'bench',
        AWS_LAMBDA_NODEJS_USE_ALTERNATIVE_CLIENT_1: 'true',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  child.once('exit', (code, signal) =>
    finish(null, `the container exited (${signal ?? code}): out of memory?`),
  );
  const timer = setTimeout(() => finish(null, `no answer within ${timeoutMs} ms`), timeoutMs + 10_000);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
    api.closeAllConnections();
    api.close();
  }
}
