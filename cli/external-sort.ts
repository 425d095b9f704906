/**
 * An external merge sort for the CLI's listings: values are buffered up to a byte budget, each full
 * buffer is sorted and written as a run (JSON lines) to a temporary folder, and the runs are merged
 * (shared/crawl/state/sorted-runs.ts). A crawl that fits one buffer never touches the disk; a
 * million URLs take a few runs. The folder is removed when the stream ends or its reader stops.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { type Compare, mergeSorted } from '../shared/crawl/state/sorted-runs.ts';

export interface ExternalSortOptions {
  /** JSON bytes buffered before a run is written (the heap holds about three times this) */
  runBytes?: number;
  /** runs merged at once; more are first merged into one bigger run */
  fanIn?: number;
  /** where the temporary folder goes (default: os.tmpdir()) */
  dir?: string;
}

const DEFAULT_RUN_BYTES = 16 * 1024 * 1024;
const DEFAULT_FAN_IN = 64;

async function* readRun<T>(file: string): AsyncGenerator<T> {
  // Small reads: a merge holds one read-ahead chunk per run (up to fanIn of them).
  const input = createReadStream(file, { highWaterMark: 16 * 1024 });
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) yield JSON.parse(line) as T;
  } finally {
    lines.close();
  }
}

async function writeRun(file: string, lines: Iterable<string> | AsyncIterable<string>): Promise<void> {
  const out = createWriteStream(file);
  for await (const line of lines) {
    if (!out.write(`${line}\n`)) await new Promise<void>((ok) => out.once('drain', () => ok()));
  }
  out.end();
  await finished(out);
}

/** `input` sorted by `cmp` (stable), in bounded memory. */
export async function* externalSort<T>(
  input: AsyncIterable<T>,
  cmp: Compare<T>,
  opts: ExternalSortOptions = {},
): AsyncGenerator<T> {
  const runBytes = opts.runBytes ?? DEFAULT_RUN_BYTES;
  const fanIn = Math.max(2, opts.fanIn ?? DEFAULT_FAN_IN);
  let buffer: { value: T; json: string }[] = [];
  let bytes = 0;
  let dir: string | undefined;
  const runs: string[] = [];
  let made = 0;
  const sorted = () => buffer.sort((a, b) => cmp(a.value, b.value));
  const newRun = () => {
    dir ??= mkdtempSync(join(opts.dir ?? tmpdir(), 'trawl-sort-'));
    return join(dir, `run-${made++}.jsonl`);
  };
  const merged = (files: string[]) =>
    mergeSorted(
      files.map((f) => readRun<T>(f)),
      cmp,
    );
  try {
    for await (const value of input) {
      const json = JSON.stringify(value);
      buffer.push({ value, json });
      bytes += json.length;
      if (bytes < runBytes) continue;
      const file = newRun();
      await writeRun(
        file,
        sorted().map((e) => e.json),
      );
      runs.push(file);
      [buffer, bytes] = [[], 0];
      if (runs.length >= fanIn) {
        // Too many open files to merge at once: fold them into one run first.
        const all = runs.splice(0);
        const big = newRun();
        await writeRun(big, mapJson(merged(all)));
        for (const f of all) rmSync(f, { force: true });
        runs.push(big);
      }
    }
    if (runs.length === 0) {
      for (const e of sorted()) yield e.value;
      return;
    }
    const tail = (async function* () {
      for (const e of sorted()) yield e.value;
    })();
    yield* mergeSorted([...runs.map((f) => readRun<T>(f)), tail], cmp);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

async function* mapJson<T>(values: AsyncIterable<T>): AsyncGenerator<string> {
  for await (const v of values) yield JSON.stringify(v);
}
