/** Background processes the CLI starts (emulator, local cloud, search engine, demo site). */
import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';

/** The exit code of a command a signal stopped, as a shell reports it: 128 + the signal's number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/** Whether a process with this pid is running (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // An exited process whose parent is gone is a zombie until init reaps it, which some inits (a
  // container's) do only every second or two: it answers signal 0 but runs no more.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return !existsSync('/proc/self/stat'); // gone meanwhile; without /proc (macOS) signal 0 is all there is
  }
}
