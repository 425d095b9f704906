/**
 * `trawl deploy|destroy -c FILE [--local]`: the real CDK CLI deploys the stack in infra/ to the
 * local cloud (--local), or wherever the AWS SDK's endpoint and credentials point (AWS, LocalStack).
 * After a deploy the config goes into the stack's bucket, the seed function starts the crawl, and
 * .trawl/deployments/<crawl>.json remembers where, for every later command.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { createPageStore } from '../../shared/aws/page-store.ts';
import { storedConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { CONFIG_KEY } from '../../shared/layout.ts';
import { resourceNames } from '../../shared/topology.ts';
import { loadConfigFile } from '../config-file.ts';
import { startBackgroundDemoSite, stopBackgroundDemoSite } from '../demo-site.ts';
import {
  type Deployment,
  forgetDeployment,
  functionNames,
  loadDeployment,
  type StackOutputs,
  saveDeployment,
  useDeployment,
} from '../deployment.ts';
import { PROJECT_ROOT, stateDir } from '../emulator.ts';
import {
  ensureLocalCloud,
  type LocalCloud,
  localCloudEnv,
  saveLocalCloud,
  stopLocalCloud,
} from '../local-cloud.ts';
import { searchDeployContext } from './search.ts';

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

function cdk(args: string[], env: NodeJS.ProcessEnv): void {
  const bin = join(PROJECT_ROOT, 'node_modules', '.bin', 'cdk');
  // The CDK CLI's own output goes to stderr: trawl's stdout stays the command's answer.
  const r = spawnSync(bin, [...args, '--no-notices'], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', process.stderr, process.stderr],
    env: { ...env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (r.status !== 0) {
    throw new CommandFailed(`cdk ${args[0]} failed (exit ${r.status ?? r.signal}); its output is above`);
  }
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
  const port = parsePort(opts.port);
  const demo = opts.demo ?? resolve(opts.config) === join(PROJECT_ROOT, 'demo', 'trawl.json');
  let cloud: LocalCloud | null = null;
  let started = false;
  if (opts.local) ({ cloud, started } = await ensureLocalCloud({ port }));
  try {
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
  } catch (err) {
    if (demo) stopBackgroundDemoSite();
    if (started) await stopLocalCloud();
    throw err;
  }
}

async function deployStack(
  file: string,
  crawl: string,
  cloud: LocalCloud | null,
  search: string[] = [],
): Promise<Deployment> {
  const env = { ...process.env, ...(cloud ? localCloudEnv(cloud) : {}) };
  const context = ['-c', `config=${resolve(file)}`];
  if (!cloud?.bootstrapped) {
    cdk(['bootstrap', ...context], env);
    if (cloud) saveLocalCloud({ ...cloud, bootstrapped: true });
  }
  const stackName = resourceNames(crawl).stack;
  const outputsFile = join(stateDir(), `cdk-outputs-${crawl}.json`);
  rmSync(outputsFile, { force: true });
  // --outputs-file is what DescribeStacks answered after the deploy.
  cdk(
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
    outputs,
    deployedAt: new Date().toISOString(),
  };
  saveDeployment(d);
  return d;
}

/** Destroys the stack (the bucket is retained: documents are data) and forgets the deployment. */
export async function destroyCommand(opts: { config: string; local?: boolean }): Promise<void> {
  const config = loadConfigFile(opts.config);
  const d = loadDeployment(config.name);
  if (opts.local && !d?.local)
    throw new ConfigError(`crawl "${config.name}" is not deployed to the local cloud`);
  const cloud = d ? await useDeployment(d) : null;
  const env = { ...process.env, ...(cloud ? localCloudEnv(cloud) : {}) };
  cdk(['destroy', resourceNames(config.name).stack, '-c', `config=${resolve(opts.config)}`, '--force'], env);
  forgetDeployment(config.name);
  if (cloud) await stopLocalCloud();
  stopBackgroundDemoSite();
  process.stdout.write(
    `destroyed ${resourceNames(config.name).stack}${cloud ? ' and stopped the local cloud' : ''}\n`,
  );
}
