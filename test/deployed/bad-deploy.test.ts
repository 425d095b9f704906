/**
 * A bad deploy ends with a clear message and exit code and leaves no process behind: an invalid
 * config (nothing started), a taken port (nothing started), a CDK failure (the local cloud this
 * deploy started is stopped again).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../cli/emulator.ts';
import { ensureLocalCloud, stopLocalCloud } from '../../cli/local-cloud.ts';
import { alive } from '../../cli/processes.ts';
import { engineInstalled, searchEngineStatus } from '../../cli/search-engine.ts';
import { searchClient } from '../../shared/search/opensearch-sink.ts';

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

/**
 * Writes the local deployment record of crawl "baddeploy" (a stack it names need not exist), as
 * `trawl deploy --local` leaves it; its path.
 */
function writeDeployment(cwd: string, endpoint: string, more: Record<string, unknown> = {}): string {
  mkdirSync(join(cwd, '.trawl', 'deployments'), { recursive: true });
  const outputs = {
    BucketName: 'b',
    UrlsTableName: 'u',
    HostsTableName: 'h',
    QueueUrls: '{}',
    FunctionNames: '{}',
  };
  const record = {
    crawl: 'baddeploy',
    stackName: 'Trawl-baddeploy',
    endpoint,
    region: 'us-east-1',
    local: true,
    outputs,
    deployedAt: '2026-01-01T00:00:01.000Z',
    ...more,
  };
  const file = join(cwd, '.trawl', 'deployments', 'baddeploy.json');
  writeFileSync(file, JSON.stringify(record));
  return file;
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

  it('a secret read from the environment: exit 2 naming the field and the way that deploys, nothing started', async () => {
    // The deployed functions have no such variable: the crawl was seeded and never fetched a page.
    const auth = [{ urlPrefix: 'https://intranet.test/', basic: { username: 'u', password: { env: 'PW' } } }];
    const cwd = dir({ ...good, fetch: { ...good.fetch, auth } });
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local'], { PW: 'hunter2-value' });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /fetch\.auth\.0\.basic\.password: \{"env": …\} .*use \{"secretArn": …\}/);
    assert.ok(!r.stderr.includes('hunter2-value'), 'the value is never printed');
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
  });

  it("fetch.proxy's password read from the environment: exit 2 naming the field, nothing started", async () => {
    const proxy = { host: '127.0.0.1', port: 3128, username: 'crawler', password: { env: 'PROXY_PW' } };
    const cwd = dir({ ...good, fetch: { ...good.fetch, proxy } });
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local'], { PROXY_PW: 'hunter3-value' });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /fetch\.proxy\.password: \{"env": …\} .*use \{"secretArn": …\}/);
    assert.ok(!r.stderr.includes('hunter3-value'), 'the value is never printed');
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
  });

  it('a deploy to AWS with no credentials: exit 2 saying so and naming --local, nothing started', async () => {
    // The CDK CLI said "Unable to resolve AWS account to use", then "cdk bootstrap failed".
    const cwd = dir(good);
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json'], { HOME: cwd });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /deploy: no AWS credentials found .*"trawl deploy -c crawl\.json --local"/);
    assert.doesNotMatch(r.stderr, /cdk/);
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

  it('Ctrl-C during the CDK step: exit 130 saying so; the local cloud it started is stopped', async () => {
    // Before, Node's default exit said nothing and left the detached local cloud running, named
    // by no deployment: neither destroy nor any other command could stop it.
    const cwd = dir(good);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')));
    // Its own process group, as a terminal's: Ctrl-C reaches the CDK CLI too.
    const child = spawn(process.execPath, [BIN, 'deploy', '-c', 'crawl.json', '--local'], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const record = join(cwd, '.trawl', 'local-cloud.json');
    for (let i = 0; i < 600 && !existsSync(record); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(existsSync(record), `the local cloud never started:\n${stderr}`);
    const cloud = JSON.parse(readFileSync(record, 'utf8'));
    await new Promise((r) => setTimeout(r, 1500)); // the CDK CLI at work
    process.kill(-(child.pid as number), 'SIGINT');
    assert.equal(await exited, 130, stderr.slice(-3000));
    assert.match(stderr, /trawl: SIGINT: deploy stopped; stopping the local cloud it started/);
    assert.equal(alive(cloud.pid), false, 'the local cloud was left running');
    assert.equal(existsSync(record), false);
  });

  it('a deployment record from before the local cloud was started again: exit 2 saying so, no stack trace', async () => {
    // The cloud at the same address holds none of the stack: every call failed with QueueDoesNotExist
    // or NoSuchBucket and a stack trace.
    const cwd = dir(good);
    const { cloud } = await ensureLocalCloud({ cwd });
    try {
      writeDeployment(cwd, cloud.endpoint, {
        region: cloud.region,
        cloudStartedAt: '2026-01-01T00:00:00.000Z',
      });
      const r = await trawl(cwd, ['docs', '-c', 'crawl.json']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /before it was started again .*run "trawl deploy -c crawl\.json --local" again/);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    } finally {
      await stopLocalCloud(cwd);
    }
  });

  it('destroy of a deployment whose local cloud is gone forgets the record; the other commands then say so', async () => {
    // Every command, destroy too, used to exit 2 pointing at the cloud that was gone: only a new
    // deploy (and then a destroy) or deleting the record by hand got out of it.
    const cwd = dir(good);
    const file = writeDeployment(cwd, 'http://127.0.0.1:9', { cloudStartedAt: '2026-01-01T00:00:00.000Z' });
    const docs = await trawl(cwd, ['docs', '-c', 'crawl.json']);
    assert.equal(docs.code, 2, docs.stderr);
    assert.match(
      docs.stderr,
      /not running any more .*"trawl destroy -c crawl\.json --local" forgets the deployment/,
    );
    const r = await trawl(cwd, ['destroy', '-c', 'crawl.json', '--local']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^forgot the deployment of Trawl-baddeploy: the local cloud it was deployed to \(http:\/\/127\.0\.0\.1:9\) is no longer running/,
    );
    assert.equal(existsSync(file), false);
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false, 'no local cloud started');
    const again = await trawl(cwd, ['destroy', '-c', 'crawl.json', '--local']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /is not deployed to the local cloud/);
  });

  it("destroy --local drops the crawl's index from the embedded search engine, which outlives the stack", {
    skip: !engineInstalled() && 'no engine',
  }, async () => {
    // The next deploy of the same crawl started afresh, but its searches answered with the
    // destroyed crawl's pages. (Here the cloud is gone: the same path as a destroyed stack's.)
    const cwd = dir({ ...good, index: { sink: 'opensearch' } });
    writeDeployment(cwd, 'http://127.0.0.1:9');
    const started = await trawl(cwd, ['search-engine', 'start']);
    assert.equal(started.code, 0, started.stderr);
    try {
      const engine = await searchEngineStatus(cwd);
      assert.ok(engine, 'the engine runs');
      const client = searchClient(engine.endpoint);
      // Made as Trawl makes it (the embedded engine creates no trawl-* index by itself).
      await client.indices.create({ index: 'trawl-baddeploy' });
      await client.index({
        index: 'trawl-baddeploy',
        id: '1',
        body: { url: 'http://x.test/old' },
        refresh: true,
      });
      const r = await trawl(cwd, ['destroy', '-c', 'crawl.json', '--local']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /deleted search index trawl-baddeploy from the embedded search engine/);
      assert.equal((await client.indices.exists({ index: 'trawl-baddeploy' })).body, false);
    } finally {
      await trawl(cwd, ['search-engine', 'stop']);
    }
  });

  it('a search endpoint that does not answer: exit 2 naming it, nothing started', async () => {
    // The deployed index function retried its batches without end; the crawl never drained.
    const cwd = dir({
      ...good,
      index: { sink: 'opensearch', opensearch: { endpoint: 'http://127.0.0.1:9' } },
    });
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /index\.opensearch\.endpoint http:\/\/127\.0\.0\.1:9 does not answer/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
  });

  it('status on a crawl neither deployed nor crawled from here: exit 2 saying so', async () => {
    const cwd = dir(good);
    const r = await trawl(cwd, ['status', '-c', 'crawl.json']);
    await trawl(cwd, ['emulator', 'stop']); // status looked in the embedded emulator
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /crawl "baddeploy" has no state here: run "trawl crawl -c crawl\.json" \(or "trawl deploy -c crawl\.json"\) first/,
    );
  });

  it('a CDK failure: exit 1 saying which cdk step failed; the local cloud it started is stopped', async () => {
    const cwd = dir(good);
    // A real failure inside the CDK CLI: its home folder (account cache) cannot exist.
    const r = await trawl(cwd, ['deploy', '-c', 'crawl.json', '--local'], { CDK_HOME: '/dev/null/cdk-home' });
    assert.equal(r.code, 1, r.stderr.slice(-2000));
    assert.match(r.stderr, /trawl: cdk bootstrap failed \(exit \d+\); its output is above\n$/);
    assert.equal(existsSync(join(cwd, '.trawl', 'local-cloud.json')), false);
    // The local cloud had started (its log names its pid) and is gone again.
    const log = readFileSync(join(cwd, '.trawl', 'local-cloud.log'), 'utf8');
    const pid = Number(/\[(\d+)\] \[INFO\] Running on/.exec(log)?.[1]);
    assert.ok(pid > 0, 'the local cloud started');
    assert.equal(alive(pid), false);
  });
});
