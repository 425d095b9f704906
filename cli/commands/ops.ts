/** `trawl emulator start|stop|status`. */
import { ConfigError } from '../../shared/errors.ts';
import { emulatorStatus, ensureBackgroundEmulator, stopBackgroundEmulator } from '../emulator.ts';

/** Starts, stops or shows the background emulator of this working directory. */
export async function emulatorCommand(action: string): Promise<void> {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  if (action === 'start') {
    const s = await ensureBackgroundEmulator();
    out(`emulator running at ${s.endpoint} (pid ${s.pid})`);
  } else if (action === 'stop') {
    const stop = await stopBackgroundEmulator();
    if (!stop.running) out('emulator was not running');
    else if (stop.saved === null) out('emulator stopped (state saved in .trawl/)');
    else if (stop.saved.length === 0) out('emulator stopped (its state was already saved in .trawl/)');
    else out(`emulator stopped (saved ${stop.saved.join(', ')} in .trawl/; the rest was saved already)`);
  } else if (action === 'status') {
    const s = await emulatorStatus();
    out(s ? `running at ${s.endpoint} (pid ${s.pid}, since ${s.startedAt})` : 'not running');
  } else {
    throw new ConfigError(`emulator: unknown action "${action}" (use start, stop or status)`);
  }
}
