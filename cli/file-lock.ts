/**
 * A lock between the commands of one folder (`.trawl/`): two `trawl` commands at once must not
 * save the emulator's snapshot over each other, nor start two emulators. Both once happened: two
 * saves shared one temporary folder, one deleted what the other was writing, and the snapshot
 * came out without its tables (every crawl of the folder lost at the next restart); two starts
 * each ran a crawl on an emulator of its own, the site fetched twice over, politeness halved.
 *
 * The lock is a directory (`mkdir` is atomic) holding its owner's pid. A lock whose owner is gone
 * (a command killed with SIGKILL) is taken over; a live owner is waited for.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { alive } from './processes.ts';

const POLL_MS = 100;
/** A lock with no owner file yet is being taken: after this long its taker died in between. */
const OWNERLESS_MS = 10_000;

function owner(lock: string): number | null {
  try {
    return Number(readFileSync(join(lock, 'pid'), 'utf8')) || null;
  } catch {
    return null;
  }
}

/** True when the lock at `lock` was taken here; false when another live process holds it. */
function tryTake(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Not nested within one process: a lock naming this pid was left by a killed process whose
    // pid came round again.
    const pid = owner(lock);
    const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
    const abandoned = pid === null ? Date.now() - since > OWNERLESS_MS : pid === process.pid || !alive(pid);
    if (!abandoned) return false;
    rmSync(lock, { recursive: true, force: true });
    return tryTake(lock);
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  return true;
}

/**
 * Runs `fn` holding the lock `lock` (a path), waiting while another live command holds it;
 * `onWait` is called once when it has to wait.
 */
export async function withFileLock<T>(lock: string, fn: () => Promise<T>, onWait?: () => void): Promise<T> {
  // Within one process the callers take turns first (the file names the process, not the caller).
  const before = inProcess.get(lock) ?? Promise.resolve();
  let release = () => {};
  const mine = new Promise<void>((r) => {
    release = r;
  });
  inProcess.set(lock, mine);
  await before;
  try {
    return await held(lock, fn, onWait);
  } finally {
    if (inProcess.get(lock) === mine) inProcess.delete(lock);
    release();
  }
}

/** The last caller in line for each lock in this process. */
const inProcess = new Map<string, Promise<void>>();

async function held<T>(lock: string, fn: () => Promise<T>, onWait?: () => void): Promise<T> {
  let told = false;
  mkdirSync(dirname(lock), { recursive: true });
  while (!tryTake(lock)) {
    if (!told) onWait?.();
    told = true;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
