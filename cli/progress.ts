/** Live progress on a terminal (cli-progress), plain log lines every few seconds otherwise. */
import cliProgress from 'cli-progress';
import { stageStats } from '../shared/stages/logger.ts';
import { SOURCES } from '../shared/types.ts';
import { onlyDelayed } from './held-hosts.ts';
import type { QueueDepths } from './runner.ts';

export interface Progress {
  tick(depths: QueueDepths): void;
  /**
   * While all the queued work is delayed, the line says what it waits for (`look`, asked at most
   * every LOOK_MS): the held hosts and until when.
   */
  explainWaits(look: () => Promise<string>): void;
  stop(): void;
}

/** How often the held hosts are looked up while only delayed work is queued (a Scan of the hosts table). */
const LOOK_MS = 10_000;

/** The waiting part of the line, kept fresh by `tick`. */
function waitWatcher() {
  let look: (() => Promise<string>) | null = null;
  let text = '';
  let lastLook = 0;
  let looking = false;
  return {
    set(fn: () => Promise<string>) {
      look = fn;
    },
    tick(depths: QueueDepths): string {
      if (!look || !onlyDelayed(depths)) {
        text = '';
        lastLook = 0;
        return text;
      }
      if (!looking && Date.now() - lastLook >= LOOK_MS) {
        looking = true;
        lastLook = Date.now();
        look()
          .then((t) => {
            text = t;
          })
          .catch(() => undefined) // a progress line never fails the run
          .finally(() => {
            looking = false;
          });
      }
      return text;
    },
  };
}

const SHORT: Record<string, string> = {
  user: 'u',
  redir: 'r',
  index: 'i',
  index_follow: 'if',
  follow: 'f',
  refresh: 'rf',
};

function line(depths: QueueDepths, started: number) {
  const fetched = stageStats.fetched ?? 0;
  const errors = Object.entries(stageStats)
    .filter(([k]) => k.startsWith('error:'))
    .reduce((n, [, v]) => n + v, 0);
  // Frontier messages (up to 50 URLs each), waiting, delayed or being fetched: the queue depths
  // SQS gives. Messages in flight were left out, and the line read as URLs ("if:1" for 9 pending).
  const queued = SOURCES.map(
    (s) =>
      `${SHORT[s]}:${(depths[s]?.visible ?? 0) + (depths[s]?.delayed ?? 0) + (depths[s]?.inFlight ?? 0)}`,
  ).join(' ');
  const rate = fetched / Math.max(0.001, (Date.now() - started) / 1000);
  return {
    fetched,
    errors,
    queued,
    rate: rate.toFixed(1),
    indexed: (stageStats.indexed ?? 0) + (stageStats.reindexed ?? 0),
  };
}

/** Creates the progress display. */
export function createProgress(tty: boolean): Progress {
  const started = Date.now();
  const waits = waitWatcher();
  if (tty) {
    const bar = new cliProgress.SingleBar(
      {
        format:
          'fetched {fetched} | indexed {indexed} | messages queued {queued} | errors {errors} | {rate} pages/s{waiting}',
        hideCursor: true,
        stream: process.stderr,
        fps: 5,
      },
      cliProgress.Presets.shades_classic,
    );
    let running = false;
    return {
      tick(depths) {
        const waiting = waits.tick(depths);
        const payload = { ...line(depths, started), waiting: waiting ? ` | ${waiting}` : '' };
        if (!running) {
          bar.start(0, 0, payload);
          running = true;
        } else bar.update(0, payload);
      },
      explainWaits: waits.set,
      stop() {
        if (running) bar.stop();
        running = false;
      },
    };
  }
  let last = 0;
  return {
    tick(depths) {
      const waiting = waits.tick(depths);
      if (Date.now() - last < 5000) return;
      last = Date.now();
      const l = line(depths, started);
      process.stderr.write(
        `progress: fetched ${l.fetched}, indexed ${l.indexed}, messages queued ${l.queued}, errors ${l.errors}, ${l.rate} pages/s${waiting ? `; ${waiting}` : ''}\n`,
      );
    },
    explainWaits: waits.set,
    stop() {},
  };
}
