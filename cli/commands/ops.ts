/** `trawl deploy|destroy` (thin wrappers over the CDK CLI) and `trawl emulator start|stop|status`. */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../shared/errors.ts';
import { emulatorStatus, ensureBackgroundEmulator, PROJECT_ROOT, stopBackgroundEmulator } from '../emulator.ts';

/** Runs `cdk deploy|destroy` for the stack in infra/, with the config passed as context. */
export async function deployCommand(action: 'deploy' | 'destroy', opts: { config?: string }): Promise<void> {
  const cdk = join(PROJECT_ROOT, 'node_modules', '.bin', 'cdk');
  const args = [action, '--no-notices', ...(action === 'destroy' ? ['--force'] : ['--require-approval', 'never'])];
  if (opts.config) args.push('-c', `config=${resolve(opts.config)}`);
  const r = spawnSync(cdk, args, {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (r.status !== 0) throw new ConfigError(`cdk ${action} failed (exit ${r.status ?? r.signal})`);
}

/** Starts, stops or shows the background emulator of this working directory. */
export async function emulatorCommand(action: string): Promise<void> {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  if (action === 'start') {
    const s = await ensureBackgroundEmulator();
    out(`emulator running at ${s.endpoint} (pid ${s.pid})`);
  } else if (action === 'stop') {
    out((await stopBackgroundEmulator()) ? 'emulator stopped' : 'emulator was not running');
  } else if (action === 'status') {
    const s = await emulatorStatus();
    out(s ? `running at ${s.endpoint} (pid ${s.pid}, since ${s.startedAt})` : 'not running');
  } else {
    throw new ConfigError(`emulator: unknown action "${action}" (use start, stop or status)`);
  }
}
