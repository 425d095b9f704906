/** Background processes the CLI starts (emulator, local cloud, search engine, demo site). */
import { constants } from 'node:os';

/** The exit code of a command a signal stopped, as a shell reports it: 128 + the signal's number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/** Whether a process with this pid is running (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
