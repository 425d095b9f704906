/**
 * Ctrl-C and SIGTERM for `trawl crawl` / `trawl refresh`: the first signal stops taking work and
 * gives back what is held; running handlers get a short grace period to finish what they write;
 * the command then prints its summary and exits 130 (SIGINT) or 143 (SIGTERM). A second signal,
 * or the deadline, exits at once: nothing is lost either way, since every lease ends by itself.
 */
import { leaseSeconds } from '../../shared/stages/fetch-leases.ts';
import { commandRunning } from '../emulator.ts';
import { signalExitCode } from '../processes.ts';
import type { LocalRunner } from '../runner.ts';
import { type CrawlSession, eachState } from '../session.ts';

export interface StopRequest {
  signal: 'SIGINT' | 'SIGTERM';
  exitCode: number;
}

/** Running handlers may finish within this long after the signal (their output is then kept). */
const GRACE_MS = 2000;
/** The process exits by this time after the first signal whatever it is doing (the promise is 5 s). */
const FORCE_EXIT_MS = 4500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Until the run's own handlers are installed (starting the emulator, restoring its state, creating
 * the crawl's resources): a signal exits at once with its code, saying so. Node's default exit
 * said nothing.
 */
export function onEarlySignal(kind: 'crawl' | 'refresh'): { dispose(): void } {
  const handler = (signal: 'SIGINT' | 'SIGTERM') => {
    process.stderr.write(`trawl: ${signal} before the ${kind} started: exiting; nothing was fetched\n`);
    process.exit(signalExitCode(signal));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    dispose() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}

/** Installs the handlers; `settle(work)` resolves when the work ends or a signal's grace is over. */
export function onStopSignal(runner: LocalRunner) {
  let request: StopRequest | null = null;
  let forced: NodeJS.Timeout | undefined;
  let wake = () => {};
  const signalled = new Promise<void>((r) => {
    wake = r;
  });
  /** The work ended by itself: a signal now only waits for the summary and the save (`finishing`). */
  let done = false;
  let late: StopRequest | null = null;
  const handler = (signal: 'SIGINT' | 'SIGTERM') => {
    if (done) {
      if (late) {
        process.stderr.write(`trawl: ${signal} again: exiting now, the emulator's state not saved\n`);
        process.exit(late.exitCode);
      }
      late = { signal, exitCode: signalExitCode(signal) };
      process.stderr.write(
        `trawl: ${signal}: the run is done; finishing its summary and saving the emulator's state (Ctrl-C again to exit at once)\n`,
      );
      return;
    }
    if (request) {
      process.stderr.write(`trawl: ${signal} again: exiting now\n`);
      process.exit(request.exitCode);
    }
    request = { signal, exitCode: signalExitCode(signal) };
    process.stderr.write(
      `trawl: ${signal}: stopping, giving back held work (Ctrl-C again to exit at once)\n`,
    );
    const code = request.exitCode;
    forced = setTimeout(() => process.exit(code), FORCE_EXIT_MS);
    forced.unref();
    runner.stop().catch(() => undefined);
    wake();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    async settle(work: Promise<void>): Promise<StopRequest | null> {
      // An error after a stop request is the stop's doing (an aborted handler): not reported.
      const guarded = work.catch((err) => {
        if (!request) throw err;
      });
      await Promise.race([guarded, signalled.then(() => Promise.race([guarded, sleep(GRACE_MS)]))]);
      return request;
    },
    /**
     * The work is handed back and the summary printed: what is left is saving the emulator's state,
     * which a second signal skips; the forced exit no longer applies.
     */
    saving(): void {
      clearTimeout(forced);
    },
    /**
     * The work ended by itself (no signal): a signal from now on does not stop anything (there is
     * nothing to give back) but lets the summary and the save finish, and a second one exits at
     * once. Until 2026-11-28 one during the save exited 130 silently, the save cut short, and one
     * before it said "stopping, giving back held work" of a finished run.
     */
    finishing(): void {
      done = true;
    },
    /** A signal that came while finishing, if any. */
    lateSignal(): StopRequest | null {
      return late;
    },
    dispose() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}

/** On a crawl that was interrupted (work still queued), says so before carrying on. */
export async function reportResume(session: CrawlSession): Promise<void> {
  const depths = await session.runner.queueDepths();
  const queued = Object.values(depths).reduce((n, d) => n + d.visible + d.inFlight + d.delayed, 0);
  if (queued === 0) return;
  let pending = 0;
  let errors = 0;
  let documents = 0;
  for await (const item of eachState(session)) {
    if (item.state === 'pending') pending++;
    else if (item.state === 'error') errors++;
    if (item.docBulk) documents++;
  }
  process.stderr.write(`trawl: resuming: ${pending} pending, ${errors} in error, ${documents} documents\n`);
  // Held by a run that did not give them back (killed: no handler ran), and by no command running
  // now: they come back when their lease ends. The resumed run seemed to stall until then, unsaid.
  const held = Object.values(depths).reduce((n, d) => n + d.inFlight, 0);
  if (held > 0 && (await commandRunning(session.config.name)) === false)
    process.stderr.write(
      `trawl: ${held} message(s) are still held by an earlier run that ended without giving them back (killed?); they come back when its lease ends, within ${leaseSeconds()} s, and are taken then\n`,
    );
}
