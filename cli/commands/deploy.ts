/**
 * `trawl deploy|destroy -c FILE [--local]`: the real CDK CLI deploys the stack in infra/ to the
 * local cloud (--local), or wherever the AWS SDK's endpoint and credentials point (AWS, LocalStack).
 * After a deploy the config goes into the stack's bucket, the seed function starts the crawl, and
 * .trawl/deployments/<crawl>.json remembers where, for every later command.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { createHostTable } from '../../shared/aws/host-table.ts';
import { createPageStore } from '../../shared/aws/page-store.ts';
import { type CrawlConfig, storedConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { CONFIG_KEY } from '../../shared/layout.ts';
import { envSecretPaths } from '../../shared/net/auth.ts';
import { indexName, searchClient } from '../../shared/search/opensearch-sink.ts';
import { pendingPolicyChange } from '../../shared/stages/refresh-review.ts';
import { resourceNames } from '../../shared/topology.ts';
import { loadConfigFile } from '../config-file.ts';
import { isDemoConfig, startBackgroundDemoSite, stopBackgroundDemoSite } from '../demo-site.ts';
import {
  type Deployment,
  forgetDeployment,
  functionNames,
  listDeployments,
  loadDeployment,
  StackGoneError,
  type StackOutputs,
  saveDeployment,
  useDeployment,
} from '../deployment.ts';
import { PROJECT_ROOT, stateDir } from '../emulator.ts';
import { withFileLock } from '../file-lock.ts';
import {
  ensureLocalCloud,
  type LocalCloud,
  localCloudEnv,
  localCloudStatus,
  saveLocalCloud,
  stopLocalCloud,
} from '../local-cloud.ts';
import { signalExitCode } from '../processes.ts';
import { searchEngineStatus } from '../search-engine.ts';
import { requireSearchEndpoint, searchDeployContext } from './search.ts';

/** A step outside Trawl failed (the CDK CLI): its message, exit code 1, no stack trace. */
export class CommandFailed extends Error {
  readonly exitCode = 1;
}

export interface DeployOptions {
  config: string;
  local?: boolean;
  /** serve the bundled demo site in the background (default: when FILE is demo/trawl.json) */
  demo?: boolean;
  /** the local cloud's port (default: a free one) */
  port?: string;
}

/** The CDK CLI running now, for a Ctrl-C to end (onDeploySignal). */
let running: ChildProcess | null = null;

/** Ends the CDK CLI and everything it started (its process group). */
function killGroup(child: ChildProcess | null): void {
  if (!child?.pid) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL'); // the group is gone already
  }
}

async function cdk(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const bin = join(PROJECT_ROOT, 'node_modules', '.bin', 'cdk');
  // The CDK CLI's own output goes to stderr: trawl's stdout stays the command's answer. Not
  // spawnSync: a signal's handler must run while it works (the CLI itself finishes a bootstrap
  // before it heeds Ctrl-C: 40 s).
  // Node 24 (the project's, node_modules/.bin/node) runs the CLI and the app it synthesizes: the
  // system Node 20 made every deploy print the SDK's Node-version warning twice. Its own process
  // group: a Ctrl-C ends the app and bundlers the CLI started too (they were left orphaned).
  const bins = join(PROJECT_ROOT, 'node_modules', '.bin');
  const child = spawn(bin, [...args, '--no-notices'], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', process.stderr, process.stderr],
    env: { ...env, PATH: `${bins}${delimiter}${env.PATH ?? ''}`, CDK_DISABLE_CLI_TELEMETRY: 'true' },
    detached: true,
  });
  running = child;
  const r = await new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((done, fail) => {
    child.once('error', fail);
    child.once('exit', (status, signal) => done({ status, signal }));
  }).finally(() => {
    running = null;
  });
  if (r.status !== 0) {
    throw new CommandFailed(`cdk ${args[0]} failed (exit ${r.status ?? r.signal}); its output is above`);
  }
}

/**
 * Each stack synthesizes into a folder of its own: two deploys (or destroys) of different crawls
 * at once shared `cdk.out`, and the CDK CLI refused the second ("Another CLI is currently synthing
 * to cdk.out"). The folder is in the working folder's `.trawl/`, beside the deployment's record:
 * until 2026-11-29 it was the package's own (cdk runs there), which fails on a read-only install
 * and let two working folders deploying the same crawl name overwrite each other's (helper-43).
 */
function assemblyDir(stackName: string): string[] {
  return ['--output', join(stateDir(), 'cdk.out', stackName)];
}

function parsePort(port: string | undefined): number {
  if (port === undefined) return 0;
  const n = Number(port);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new ConfigError(`--port ${port}: not a TCP port`);
  return n;
}

/** Deploys and seeds; a local cloud this call started is stopped again if anything fails. */
export async function deployCommand(opts: DeployOptions): Promise<void> {
  let config = loadConfigFile(opts.config); // a bad config fails before anything starts
  // `{"env": NAME}` reads the environment of whatever runs the fetch stage: here that is this
  // process, deployed it is the function's, which has no such variable. Such a deploy seeded a
  // crawl whose every fetch invocation failed, said only in the functions' logs.
  const fromEnv = envSecretPaths(config.fetch);
  if (fromEnv.length > 0)
    throw new ConfigError(
      `${opts.config}: ${fromEnv.join(', ')}: {"env": …} is read from the environment of the process that fetches, and a deployed function has no such variable: use {"secretArn": …} (AWS Secrets Manager) for a deployed crawl`,
    );
  const port = parsePort(opts.port);
  // A search endpoint that does not answer: the deployed index function would retry its batches
  // without end (the crawl never drains, said only in the functions' log). Checked before anything starts.
  if (opts.local) await requireSearchEndpoint(config);
  else await requireCredentials(opts.config);
  const demo = opts.demo ?? isDemoConfig(opts.config);
  const ensuring = opts.local
    ? ensureLocalCloud({ port })
    : Promise.resolve({ cloud: null as LocalCloud | null, started: false });
  const interrupt = onDeploySignal(ensuring, demo);
  let cloud: LocalCloud | null = null;
  let started = false;
  try {
    ({ cloud, started } = await ensuring);
    if (cloud && !started && port && new URL(cloud.endpoint).port !== String(port))
      process.stderr.write(
        `trawl: --port ${port} is not used: the local cloud already runs at ${cloud.endpoint} (trawl destroy the crawls deployed there to stop it)\n`,
      );
    // The bundled demo config names the demo site: it is served in the background for the functions.
    if (demo) config = await startBackgroundDemoSite(opts.config, config);
    const search = await searchDeployContext(config, Boolean(cloud));
    const d = await deployStack(opts.config, config.name, cloud, search);
    Object.assign(process.env, cloud ? localCloudEnv(cloud) : {});
    const clients = createAwsClients({ count: false });
    await createPageStore({ client: clients.s3, bucket: d.outputs.BucketName }).putJson(
      CONFIG_KEY,
      storedConfig(config),
    );
    const seed = functionNames(d.outputs).seed;
    await clients.lambda.send(new InvokeCommand({ FunctionName: seed, InvocationType: 'Event' }));
    process.stdout.write(
      `deployed ${d.stackName} to ${d.endpoint ?? 'AWS'}; crawl "${config.name}" seeded (trawl status -c ${opts.config} --wait)\n`,
    );
    await noticeDeployedChange(config, d.outputs.HostsTableName, opts.config);
  } catch (err) {
    // A Ctrl-C while the CDK CLI ran ends it and lands here: the signal's handler does the rest.
    if (interrupt.signalled()) await interrupt.done;
    if (demo) stopBackgroundDemoSite();
    if (started) await stopLocalCloud();
    throw err;
  } finally {
    interrupt.dispose();
  }
}

/**
 * Ctrl-C or SIGTERM during a deploy: the CDK CLI is ended (it would finish a bootstrap first), but
 * the local cloud runs detached, and a cloud that this deploy started would be left running with no
 * deployment that names it. It is stopped (once it has started, if it was starting), and the
 * command exits 130 / 143 saying so. A CDK step cut short is undone by the next deploy.
 */
function onDeploySignal(
  ensuring: Promise<{ started: boolean }>,
  demo: boolean,
): { signalled(): boolean; done: Promise<void>; dispose(): void } {
  let signal: NodeJS.Signals | null = null;
  let finish: () => void = () => {};
  const done = new Promise<void>((r) => {
    finish = r;
  });
  const handler = (sig: NodeJS.Signals) => {
    if (signal) return;
    signal = sig;
    killGroup(running);
    void (async () => {
      const { started } = await ensuring.catch(() => ({ started: false }));
      process.stderr.write(
        `trawl: ${sig}: deploy stopped${started ? '; stopping the local cloud it started' : ''}\n`,
      );
      if (demo) stopBackgroundDemoSite();
      if (started) await stopLocalCloud().catch(() => false);
      finish();
      process.exit(signalExitCode(sig));
    })();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signalled: () => signal !== null,
    done,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}

/**
 * A deploy without `--local` goes where the SDK's credentials point; with none, the CDK CLI failed
 * with "Unable to resolve AWS account to use", then "cdk bootstrap failed", and no word of --local.
 */
async function requireCredentials(file: string): Promise<void> {
  try {
    await defaultProvider()();
  } catch (err) {
    throw new ConfigError(
      `deploy: no AWS credentials found (${(err as Error).message.split('\n')[0]}): set them as for the AWS CLI (AWS_PROFILE, AWS_ACCESS_KEY_ID…) to deploy to AWS or AWS_ENDPOINT_URL's emulator, or run "trawl deploy -c ${file} --local" to deploy to the project's local cloud`,
    );
  }
}

async function deployStack(
  file: string,
  crawl: string,
  cloud: LocalCloud | null,
  search: string[] = [],
): Promise<Deployment> {
  const env = { ...process.env, ...(cloud ? localCloudEnv(cloud) : {}) };
  const stackName = resourceNames(crawl).stack;
  const context = ['-c', `config=${resolve(file)}`, ...assemblyDir(stackName)];
  if (!cloud?.bootstrapped) {
    // Two deploys at once to a new local cloud bootstrapped it twice (one failed): they take turns,
    // and the second finds it done.
    await withFileLock(join(stateDir(), 'bootstrap.lock'), async () => {
      if (cloud && (await localCloudStatus())?.bootstrapped) return;
      await cdk(['bootstrap', ...context], env);
      if (cloud) saveLocalCloud({ ...cloud, bootstrapped: true });
    });
  }
  const outputsFile = join(stateDir(), `cdk-outputs-${crawl}.json`);
  rmSync(outputsFile, { force: true });
  // --outputs-file is what DescribeStacks answered after the deploy.
  await cdk(
    [
      'deploy',
      stackName,
      ...context,
      ...search,
      '--require-approval',
      'never',
      '--outputs-file',
      outputsFile,
    ],
    env,
  );
  const all = existsSync(outputsFile) ? JSON.parse(readFileSync(outputsFile, 'utf8')) : {};
  const outputs = all[stackName] as StackOutputs | undefined;
  if (!outputs?.BucketName || !outputs.QueueUrls || !outputs.FunctionNames) {
    throw new CommandFailed(`cdk deploy returned no outputs for ${stackName} (${outputsFile})`);
  }
  const d: Deployment = {
    crawl,
    stackName,
    endpoint: cloud?.endpoint ?? process.env.AWS_ENDPOINT_URL ?? null,
    region: cloud?.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    local: Boolean(cloud),
    ...(cloud ? { cloudStartedAt: cloud.startedAt } : {}),
    outputs,
    deployedAt: new Date().toISOString(),
  };
  saveDeployment(d);
  return d;
}

/** Destroys the stack (URL table and bucket are retained: they are data) and forgets the deployment. */
export async function destroyCommand(opts: { config: string; local?: boolean }): Promise<void> {
  const config = loadConfigFile(opts.config);
  const d = loadDeployment(config.name);
  if (opts.local && !d?.local)
    throw new ConfigError(`crawl "${config.name}" is not deployed to the local cloud`);
  let cloud: LocalCloud | null = null;
  try {
    cloud = d ? await useDeployment(d, opts.config) : null;
  } catch (err) {
    // Its local cloud stopped (or was started again) and took the stack with it, or the stack was
    // deleted outside trawl: only the deployment record is left, which kept every other command
    // pointing at a stack that is gone.
    const gone = err instanceof StackGoneError;
    if (!(gone || (d?.local && err instanceof ConfigError))) throw err;
    forgetDeployment(config.name);
    if (d?.local) await dropLocalIndex(config);
    const why = gone
      ? 'the stack is gone (deleted outside trawl); its retained URL table and bucket are left as they are'
      : `the local cloud it was deployed to (${d?.endpoint}) is no longer running, or was started again, and kept nothing of it`;
    process.stdout.write(`forgot the deployment of ${resourceNames(config.name).stack}: ${why}\n`);
    return;
  }
  const env = { ...process.env, ...(cloud ? localCloudEnv(cloud) : {}) };
  const stack = resourceNames(config.name).stack;
  await cdk(
    ['destroy', stack, '-c', `config=${resolve(opts.config)}`, ...assemblyDir(stack), '--force'],
    env,
  );
  forgetDeployment(config.name);
  // The local cloud holds every crawl deployed to it: it stops with the last of them.
  const others = cloud
    ? listDeployments()
        .filter((o) => o.local && o.endpoint === cloud.endpoint)
        .map((o) => o.crawl)
    : [];
  if (cloud && others.length === 0) await stopLocalCloud();
  if (cloud) {
    await dropLocalIndex(config);
    removeFunctionCopies(stack);
  }
  // The demo site serves the demo crawl's functions (deploy --demo, or the bundled config).
  if (isDemoConfig(opts.config) || listDeployments().length === 0) stopBackgroundDemoSite();
  const after = !cloud
    ? ''
    : others.length === 0
      ? ' and stopped the local cloud'
      : `; the local cloud keeps running for ${others.map((c) => `"${c}"`).join(', ')}`;
  process.stdout.write(`destroyed ${resourceNames(config.name).stack}${after}\n`);
  // A stopped local cloud took them with it; anywhere else they are the crawl's data, kept.
  if (d && !(cloud && others.length === 0)) process.stdout.write(retainedNote(d, cloud));
}

/**
 * An update whose config changes what the crawl's pages were read under (the scope, rules, refresh
 * times, what makes documents) says so, as `trawl crawl` does: the stack applies it at its next
 * refresh cycle, which can be an hour off, and `status --wait` showed an idle crawl meanwhile
 * (helper-43's audit). A first deploy has nothing recorded to differ from.
 */
async function noticeDeployedChange(config: CrawlConfig, hostsTable: string, file: string): Promise<void> {
  const hosts = createHostTable({ client: createAwsClients({ count: false }).ddb, tableName: hostsTable });
  const change = await pendingPolicyChange({ hosts }, config).catch(() => null);
  if (change)
    process.stderr.write(
      `trawl: the config changed since this crawl's pages were read (${change}); the stack's next scheduled refresh cycle applies it to them, or "trawl refresh -c ${file}" now\n`,
    );
}

/**
 * The local cloud unpacks each function's code into a temporary folder a container
 * (`ministack-lambda-<function name>-…`) and leaves them: 373 MB after a few deploys of one crawl
 * (helper-43's audit). The stack's go with it.
 */
function removeFunctionCopies(stack: string): void {
  // The logical ID after the stack's name starts upper-case; a crawl name is lower-case, so the
  // stack of a crawl "site-two" is not taken for one of crawl "site"'s functions.
  const prefix = `ministack-lambda-${stack}-`;
  let names: string[] = [];
  try {
    names = readdirSync(tmpdir()).filter((n) => n.startsWith(prefix) && /[A-Z]/.test(n[prefix.length] ?? ''));
  } catch {
    return;
  }
  for (const n of names) rmSync(join(tmpdir(), n), { recursive: true, force: true });
}

/**
 * A crawl deployed to the local cloud searched through the embedded engine, which outlives the
 * stack: its index, left there, answered the next deploy's searches with the destroyed crawl's
 * pages. The local cloud keeps nothing of a destroyed stack; the index goes with it.
 */
async function dropLocalIndex(config: CrawlConfig): Promise<void> {
  if (config.index.sink !== 'opensearch' || config.index.opensearch.endpoint) return;
  const engine = await searchEngineStatus();
  if (!engine) return;
  const index = indexName(config);
  const res = await searchClient(engine.endpoint)
    .indices.delete({ index }, { ignore: [404] })
    .catch((err: Error) => {
      process.stderr.write(`trawl: could not delete search index ${index}: ${err.message}\n`);
      return null;
    });
  if (res?.statusCode === 200)
    process.stdout.write(
      `deleted search index ${index} from the embedded search engine (${engine.endpoint})\n`,
    );
}

/**
 * Where the destroyed stack's retained URL table and bucket are, and how to delete them: with the
 * endpoint and region they live at (run as printed, the commands answered "You must specify a
 * region", or with AWS credentials set went to AWS), and the local cloud's credentials.
 */
function retainedNote(d: Deployment, cloud: LocalCloud | null): string {
  const { UrlsTableName: table, BucketName: bucket } = d.outputs;
  const env = cloud ? `AWS_ACCESS_KEY_ID=${cloud.accessKeyId} AWS_SECRET_ACCESS_KEY=test ` : '';
  const where = `${d.endpoint ? ` --endpoint-url ${d.endpoint}` : ''} --region ${d.region}`;
  return (
    `kept: URL table ${table} and bucket ${bucket} (the crawl's URL states and documents); ` +
    `a new deploy starts the crawl afresh with its own. Delete them when no longer needed: ` +
    `${env}aws dynamodb delete-table${where} --table-name ${table}; ${env}aws s3 rb${where} s3://${bucket} --force\n`
  );
}
