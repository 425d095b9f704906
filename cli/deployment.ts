/**
 * Where a crawl was deployed: `trawl deploy` writes .trawl/deployments/<crawl>.json (endpoint,
 * region, stack name and its outputs; never a secret), and every command reading or driving the
 * crawl finds its resources there instead of guessing names the stack never used.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { createAwsClients } from '../shared/aws/clients.ts';
import { createPageStore } from '../shared/aws/page-store.ts';
import type { ProvisionedResources } from '../shared/aws/provision.ts';
import type { CrawlConfig } from '../shared/config.ts';
import { ConfigError } from '../shared/errors.ts';
import { CONFIG_KEY } from '../shared/layout.ts';
import type { QueueUrls } from '../shared/topology.ts';
import { isDemoConfig } from './demo-site.ts';
import { stateDir } from './emulator.ts';
import { type LocalCloud, localCloudEnv, localCloudStatus } from './local-cloud.ts';

export interface StackOutputs {
  BucketName: string;
  UrlsTableName: string;
  HostsTableName: string;
  /** JSON: { frontier: {source: url}, extract: url, index: url } */
  QueueUrls: string;
  /** JSON: { stage: function name } */
  FunctionNames: string;
  /** JSON, same shape as QueueUrls: each queue's dead-letter queue */
  DeadLetterQueueUrls?: string;
  /** index.sink "opensearch": the engine the index function feeds */
  SearchEndpoint?: string;
}

export interface Deployment {
  crawl: string;
  stackName: string;
  /** null: real AWS as the SDK's chain finds it */
  endpoint: string | null;
  region: string;
  local: boolean;
  /** the local cloud's start (`local`): one started since holds none of this stack */
  cloudStartedAt?: string;
  outputs: StackOutputs;
  deployedAt: string;
}

const file = (crawl: string, cwd?: string) => join(stateDir(cwd), 'deployments', `${crawl}.json`);

export function saveDeployment(d: Deployment, cwd?: string): void {
  mkdirSync(join(stateDir(cwd), 'deployments'), { recursive: true });
  writeFileSync(file(d.crawl, cwd), JSON.stringify(d, null, 2));
}

export function loadDeployment(crawl: string, cwd?: string): Deployment | null {
  return existsSync(file(crawl, cwd))
    ? (JSON.parse(readFileSync(file(crawl, cwd), 'utf8')) as Deployment)
    : null;
}

/** Every deployment this folder remembers. */
export function listDeployments(cwd?: string): Deployment[] {
  const dir = join(stateDir(cwd), 'deployments');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Deployment);
}

export function forgetDeployment(crawl: string, cwd?: string): void {
  rmSync(file(crawl, cwd), { force: true });
}

/** The deployed stack's resources in the shape the local session uses. */
export function deployedResources(outputs: StackOutputs): ProvisionedResources {
  const queueUrls = JSON.parse(outputs.QueueUrls) as QueueUrls;
  const dlqUrls = outputs.DeadLetterQueueUrls
    ? (JSON.parse(outputs.DeadLetterQueueUrls) as QueueUrls)
    : ({ frontier: {} } as QueueUrls);
  return {
    queueUrls,
    dlqUrls,
    bucket: outputs.BucketName,
    urlsTable: outputs.UrlsTableName,
    hostsTable: outputs.HostsTableName,
  };
}

export function functionNames(outputs: StackOutputs): Record<string, string> {
  return JSON.parse(outputs.FunctionNames) as Record<string, string>;
}

/** The stack of a deployment is gone: deleted outside trawl (the console, `cdk destroy`). */
export class StackGoneError extends ConfigError {}

/**
 * Points this process's AWS clients where `d` lives, once its stack answers. A local deployment
 * needs its local cloud running (same endpoint): its state lives in that process. With the config
 * the command read (`config`), a FILE edited since the deploy is said: the functions crawl the
 * config `trawl deploy` uploaded.
 */
export async function useDeployment(
  d: Deployment,
  /** the config file the user named, for the commands a message gives */
  file = 'FILE',
  config?: CrawlConfig,
): Promise<LocalCloud | null> {
  const cloud = await pointAt(d, file);
  await requireStack(d, file);
  if (config) await warnIfEdited(file, config, d);
  return cloud;
}

async function pointAt(d: Deployment, file: string): Promise<LocalCloud | null> {
  if (!d.local) {
    if (d.endpoint) process.env.AWS_ENDPOINT_URL = d.endpoint;
    process.env.AWS_REGION ??= d.region;
    return null;
  }
  const cloud = await localCloudStatus();
  if (!cloud || cloud.endpoint !== d.endpoint) {
    throw new ConfigError(
      `crawl "${d.crawl}" was deployed to the local cloud at ${d.endpoint}, which is not running any more and kept nothing of it: "trawl deploy -c ${file} --local" deploys it afresh (the crawl starts over), "trawl destroy -c ${file} --local" forgets the deployment`,
    );
  }
  // The same address, started again: a local cloud keeps nothing when it stops, and every call
  // to the stack's queues and bucket failed with a stack trace.
  if (d.cloudStartedAt && cloud.startedAt !== d.cloudStartedAt) {
    throw new ConfigError(
      `crawl "${d.crawl}" was deployed to the local cloud at ${d.endpoint} before it was started again (${cloud.startedAt}), and a local cloud keeps nothing when it stops: run "trawl deploy -c ${file} --local" again (the crawl starts over), or "trawl destroy -c ${file} --local" to forget the deployment`,
    );
  }
  Object.assign(process.env, localCloudEnv(cloud));
  return cloud;
}

/**
 * The stack's extract queue answers (one request). A stack deleted outside trawl left every command
 * failing in AWS's words (`QueueDoesNotExist`, `Function not found`) or, for `docs` and `urls`,
 * reading the tables the stack retains as if the crawl were running.
 */
async function requireStack(d: Deployment, file: string): Promise<void> {
  const queue = (JSON.parse(d.outputs.QueueUrls) as QueueUrls).extract;
  try {
    await createAwsClients({ count: false }).sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue, AttributeNames: ['QueueArn'] }),
    );
  } catch (err) {
    const name = (err as Error).name;
    if (name !== 'QueueDoesNotExist' && name !== 'AWS.SimpleQueueService.NonExistentQueue') throw err;
    throw new StackGoneError(
      `crawl "${d.crawl}" was deployed as stack ${d.stackName}${d.endpoint ? ` at ${d.endpoint}` : ''}, which is gone (deleted outside trawl?): "trawl deploy -c ${file}${d.local ? ' --local' : ''}" deploys it again, "trawl destroy -c ${file}${d.local ? ' --local' : ''}" forgets the deployment (its retained URL table and bucket are left as they are)`,
    );
  }
}

/**
 * The deployed functions read the config `trawl deploy` uploaded: a FILE edited since (a start URL
 * added, a rule changed) is not what they crawl, and nothing said so.
 */
async function warnIfEdited(file: string, config: CrawlConfig, d: Deployment): Promise<void> {
  if (isDemoConfig(file)) return; // its URLs are swapped at deploy
  const store = createPageStore({
    client: createAwsClients({ count: false }).s3,
    bucket: d.outputs.BucketName,
  });
  const deployed = await store.getJson<{ config?: unknown }>(CONFIG_KEY).catch(() => null);
  if (deployed?.config && !isDeepStrictEqual(deployed.config, JSON.parse(JSON.stringify(config))))
    process.stderr.write(
      `trawl: warning: ${file} differs from the config deployed to ${d.stackName}, which its functions use: run "trawl deploy -c ${file}" to apply it\n`,
    );
}
