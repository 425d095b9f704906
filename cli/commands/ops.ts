/** `trawl deploy|destroy` (thin wrappers over the CDK CLI) and `trawl emulator start|stop|status`. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { CONFIG_KEY, createPageStore } from '../../shared/aws/page-store.ts';
import { ConfigError } from '../../shared/errors.ts';
import { resourceNames } from '../../shared/topology.ts';
import { loadConfigFile } from '../config-file.ts';
import {
  emulatorStatus,
  ensureBackgroundEmulator,
  PROJECT_ROOT,
  stateDir,
  stopBackgroundEmulator,
} from '../emulator.ts';

/** Runs `cdk deploy|destroy` for the stack in infra/; after a deploy, uploads the config and seeds the crawl. */
export async function deployCommand(action: 'deploy' | 'destroy', opts: { config?: string }): Promise<void> {
  const config = opts.config ? loadConfigFile(opts.config) : null;
  const cdk = join(PROJECT_ROOT, 'node_modules', '.bin', 'cdk');
  mkdirSync(stateDir(), { recursive: true });
  const outputs = join(stateDir(), 'cdk-outputs.json');
  const args = [
    action,
    '--no-notices',
    ...(action === 'destroy' ? ['--force'] : ['--require-approval', 'never', '--outputs-file', outputs]),
  ];
  if (opts.config) args.push('-c', `config=${resolve(opts.config)}`);
  const r = spawnSync(cdk, args, {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (r.status !== 0) throw new ConfigError(`cdk ${action} failed (exit ${r.status ?? r.signal})`);
  if (action === 'destroy' || !config || !existsSync(outputs)) return;
  // The functions read their config from the bucket (TRAWL_CONFIG_KEY); then the seed function starts the crawl.
  const stack = (JSON.parse(readFileSync(outputs, 'utf8')) as Record<string, Record<string, string>>)[
    resourceNames(config.name).stack
  ];
  if (!stack?.BucketName)
    throw new ConfigError(`cdk outputs have no BucketName for ${resourceNames(config.name).stack}`);
  const clients = createAwsClients({ count: false });
  await createPageStore({ client: clients.s3, bucket: stack.BucketName }).putJson(CONFIG_KEY, config);
  const names = JSON.parse(stack.FunctionNames ?? '{}') as Record<string, string>;
  if (names.seed)
    await clients.lambda.send(new InvokeCommand({ FunctionName: names.seed, InvocationType: 'Event' }));
  process.stdout.write(
    `config uploaded to s3://${stack.BucketName}/${CONFIG_KEY}; crawl "${config.name}" seeded\n`,
  );
}

/** Starts, stops or shows the background emulator of this working directory. */
export async function emulatorCommand(action: string): Promise<void> {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  if (action === 'start') {
    const s = await ensureBackgroundEmulator();
    out(`emulator running at ${s.endpoint} (pid ${s.pid})`);
  } else if (action === 'stop') {
    out(
      (await stopBackgroundEmulator())
        ? 'emulator stopped (state saved in .trawl/)'
        : 'emulator was not running',
    );
  } else if (action === 'status') {
    const s = await emulatorStatus();
    out(s ? `running at ${s.endpoint} (pid ${s.pid}, since ${s.startedAt})` : 'not running');
  } else {
    throw new ConfigError(`emulator: unknown action "${action}" (use start, stop or status)`);
  }
}
