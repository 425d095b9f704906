/**
 * S3 adapter. Pages and documents live in bulk objects (gzip JSON lines): one PUT carries
 * many pages, so S3 PUTs per page stay far below one (docs/design-facts.md: one PUT per page alone is $5/M).
 * A URL's document is addressed by a pointer (bulk key + line) kept in its URL item.
 */
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { createGzip, gunzipSync, gzipSync } from 'node:zlib';
import {
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';

/** A bound on unpacked inline pages: a message is ≤ 1 MiB, so more than this is not ours. */
const MAX_UNPACKED_BYTES = 64 * 1024 * 1024;

/** Records as gzip JSON lines in base64: pages carried in an SQS message instead of an S3 object. */
export function packLines(records: unknown[]): string {
  return gzipSync(records.map((r) => JSON.stringify(r)).join('\n')).toString('base64');
}

export function unpackLines<T>(packed: string): T[] {
  const text = gunzipSync(Buffer.from(packed, 'base64'), { maxOutputLength: MAX_UNPACKED_BYTES }).toString(
    'utf8',
  );
  return text ? text.split('\n').map((l) => JSON.parse(l) as T) : [];
}

/** A body field past this many characters is written in slices of this size (gzipLines). */
const LARGE_FIELD = 256 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Records as gzip JSON lines, one line at a time: a page bundle's lines (up to the fetch stage's
 * `flushBytes` of bodies) are never joined into one string nor held twice.
 */
async function gzipLines(records: unknown[]): Promise<Buffer> {
  const gzip = createGzip();
  const out: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => out.push(chunk));
  const done = once(gzip, 'end');
  const write = async (text: string) => {
    if (!gzip.write(text)) await once(gzip, 'drain');
  };
  for (const [i, r] of records.entries()) {
    if (i > 0) await write('\n');
    const body = r !== null && typeof r === 'object' ? (r as { body?: unknown }).body : undefined;
    if (typeof body !== 'string' || body.length < LARGE_FIELD || !BASE64.test(body)) {
      await write(JSON.stringify(r));
      continue;
    }
    // A large base64 body (nothing in it to escape) goes in slices: a 10 MB page is not copied
    // into a line string and again into the line's bytes.
    const rest = JSON.stringify({ ...(r as object), body: undefined });
    await write(`${rest.slice(0, -1)}${rest.length > 2 ? ',' : ''}"body":"`);
    for (let at = 0; at < body.length; at += LARGE_FIELD) await write(body.slice(at, at + LARGE_FIELD));
    await write('"}');
  }
  gzip.end();
  await done;
  return Buffer.concat(out);
}

export interface PageStore {
  putLines(key: string, records: unknown[]): Promise<void>;
  getLines<T>(key: string): Promise<T[]>;
  putJson(key: string, value: unknown): Promise<void>;
  getJson<T>(key: string): Promise<T | null>;
  /** Writes a file of `bytes` bytes as it is, streamed (a large page body: never held in memory). */
  putFile(key: string, path: string, bytes: number): Promise<void>;
  /** An object's bytes as they are; null when there is none. */
  getBytes(key: string): Promise<Uint8Array | null>;
  /** keys under `prefix` in key order; `startAfter` skips the keys up to it (ListObjectsV2 StartAfter) */
  list(prefix: string, startAfter?: string): AsyncGenerator<string>;
}

/** Creates the adapter; bulk objects are read once per container (they never change once written). */
export function createPageStore({ client, bucket }: { client: S3Client; bucket: string }): PageStore {
  const bulkCache = new Map<string, unknown[]>();

  async function getBytes(key: string): Promise<Uint8Array | null> {
    try {
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return (await res.Body?.transformToByteArray()) ?? null;
    } catch (err) {
      if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
      throw err;
    }
  }

  return {
    async putLines(key, records) {
      const body = await gzipLines(records);
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: 'application/x-ndjson',
          ContentEncoding: 'gzip',
        }),
      );
    },
    async getLines<T>(key: string) {
      const cached = bulkCache.get(key);
      if (cached) return cached as T[];
      const bytes = await getBytes(key);
      if (!bytes) return [];
      const text = gunzipSync(bytes).toString('utf8');
      const lines = text ? text.split('\n').map((l) => JSON.parse(l) as T) : [];
      if (bulkCache.size > 64) bulkCache.clear();
      bulkCache.set(key, lines);
      return lines;
    },
    async putJson(key, value) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: JSON.stringify(value),
          ContentType: 'application/json',
        }),
      );
    },
    async putFile(key, path, bytes) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: createReadStream(path),
          ContentLength: bytes,
          ContentType: 'application/octet-stream',
        }),
      );
    },
    getBytes,
    async getJson<T>(key: string) {
      const bytes = await getBytes(key);
      return bytes ? (JSON.parse(Buffer.from(bytes).toString('utf8')) as T) : null;
    },
    async *list(prefix, startAfter) {
      let token: string | undefined;
      do {
        const res = await client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: prefix,
            ContinuationToken: token,
            ...(startAfter && !token ? { StartAfter: startAfter } : {}),
          }),
        );
        for (const o of res.Contents ?? []) if (o.Key) yield o.Key;
        token = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (token);
    },
  };
}
