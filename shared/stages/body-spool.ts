/**
 * Where the fetch stage's large bodies are read to (fetch-memory.ts SPOOL_BYTES): files in one
 * folder of the temporary directory (Lambda's /tmp), one per body, each removed once its body is
 * in S3 or its fetch failed. A process that died mid-fetch leaves its files behind (Lambda keeps
 * /tmp between invocations), so the first body of a process removes files untouched for an hour:
 * no fetch reads or writes one that long.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const STALE_MS = 60 * 60 * 1000;
let ready: Promise<string> | null = null;

async function prepare(): Promise<string> {
  const dir = join(tmpdir(), 'trawl-spool');
  await mkdir(dir, { recursive: true });
  const now = Date.now();
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info && now - info.mtimeMs > STALE_MS) await unlink(path).catch(() => {});
  }
  return dir;
}

/** A new file path for one body. */
export async function spoolFile(): Promise<string> {
  ready ??= prepare().catch((err) => {
    ready = null;
    throw err;
  });
  return join(await ready, randomUUID());
}

/** A spooled body's bytes, its file removed. */
export async function takeSpooled(path: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } finally {
    await unlink(path).catch(() => {});
  }
}
