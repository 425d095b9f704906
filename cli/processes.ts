/** Background processes the CLI starts (emulator, local cloud, search engine, demo site). */

/** Whether a process with this pid is running (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
