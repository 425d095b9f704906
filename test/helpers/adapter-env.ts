/**
 * The adapter suites' world: one moto server per file, one crawl's resources provisioned
 * directly (shared/aws/provision.ts), and uncounted SDK clients. No stage, no session.
 */
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients.ts';
import { type ProvisionedResources, provision } from '../../shared/aws/provision.ts';
import { resourceNames } from '../../shared/topology.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from './emulator.ts';

export interface AdapterEnv {
  emu: TestEmulator;
  clients: AwsClients;
  crawl: string;
  res: ProvisionedResources;
}

/** Starts the emulator and provisions one crawl's queues, tables and bucket. */
export async function startAdapterEnv(prefix: string): Promise<AdapterEnv> {
  const emu = await startTestEmulator();
  const clients = createAwsClients({ count: false });
  const crawl = uniqueCrawlName(prefix);
  const res = await provision(clients, resourceNames(crawl));
  return { emu, clients, crawl, res };
}

/** An empty bucket of its own on the same emulator (a test that lists everything). */
export async function newBucket(env: AdapterEnv, prefix: string): Promise<string> {
  const bucket = `${resourceNames(uniqueCrawlName(prefix)).bucket}`;
  await env.clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}

let shared: Promise<AdapterEnv> | null = null;
/** The one world of test/integration/adapters.test.ts: started by the first suite that asks. */
export function sharedAdapterEnv(): Promise<AdapterEnv> {
  shared ??= startAdapterEnv('adapters');
  return shared;
}

/** Stops the shared world (the entry file's last hook). */
export async function stopSharedAdapterEnv(): Promise<void> {
  const env = await shared?.catch(() => null);
  await env?.emu.stop();
  shared = null;
}
