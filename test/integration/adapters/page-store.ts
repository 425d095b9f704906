/**
 * The bucket adapters called directly against the real emulator: the page store
 * (shared/aws/page-store.ts: gzip JSON lines, JSON objects, listings), the layout's keys
 * (shared/layout.ts), the refresh manifests (shared/aws/refresh-manifest.ts) and the run records
 * (shared/aws/run-records.ts), each written then read back, twice where a retry writes twice.
 * No mocks.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createPageStore, type PageStore } from '../../../shared/aws/page-store.ts';
import {
  currentStates,
  dueLines,
  MANIFEST_LINES,
  recentLines,
  writeStateLines,
} from '../../../shared/aws/refresh-manifest.ts';
import { emptyCounts } from '../../../shared/aws/request-counter.ts';
import { lastRunRecords, saveRunRecord } from '../../../shared/aws/run-records.ts';
import { KEYS, PREFIXES } from '../../../shared/layout.ts';
import { buildRunRecord } from '../../../shared/report/run-record.ts';
import type { UrlItem } from '../../../shared/types.ts';
import { type AdapterEnv, newBucket, sharedAdapterEnv } from '../../helpers/adapter-env.ts';

const AT = Date.parse('2026-03-04T05:06:07.000Z');

describe('bucket adapters', () => {
  let env: AdapterEnv;
  /** A new adapter: a cold container, nothing cached. */
  let fresh: (bucket?: string) => PageStore;
  before(async () => {
    env = await sharedAdapterEnv();
    fresh = (bucket = env.res.bucket) => createPageStore({ client: env.clients.s3, bucket });
  });

  describe('page store adapter', () => {
    it('lines come back as written: one object, gzip JSON lines, newlines and unicode inside values', async () => {
      const records = [
        { a: 1, text: 'line one\nline two\r\n' },
        { b: 'é 日本 \u2028 \u{1F600}' },
        null,
        'str',
        [],
      ];
      const key = KEYS.docBulk(AT, 'lines');
      await fresh().putLines(key, records);
      assert.deepEqual(await fresh().getLines(key), records);
      const head = await env.clients.s3.send(new HeadObjectCommand({ Bucket: env.res.bucket, Key: key }));
      assert.equal(head.ContentEncoding, 'gzip');
      assert.equal(head.ContentType, 'application/x-ndjson');
      await fresh().putLines('docs/empty.jsonl.gz', []);
      assert.deepEqual(await fresh().getLines('docs/empty.jsonl.gz'), []);
    });

    it('a missing key: no lines and no JSON, and the miss is not cached (a reader ahead of the writer)', async () => {
      const store = fresh();
      const key = KEYS.pageBundle(AT, 'later');
      assert.deepEqual(await store.getLines(key), []);
      assert.equal(await store.getJson(key), null);
      await fresh().putLines(key, [{ late: true }]);
      assert.deepEqual(await store.getLines(key), [{ late: true }]);
    });

    it('a bulk is read once per instance (bulks never change once written); a new instance reads it again', async () => {
      const store = fresh();
      const key = KEYS.docBulk(AT, 'cached');
      await store.putLines(key, [{ v: 1 }]);
      assert.deepEqual(await store.getLines(key), [{ v: 1 }]);
      await fresh().putLines(key, [{ v: 2 }]);
      assert.deepEqual(await store.getLines(key), [{ v: 1 }], 'cached');
      assert.deepEqual(await fresh().getLines(key), [{ v: 2 }]);
    });

    it('large objects round-trip whole (~5 MB of incompressible lines)', async () => {
      const records = Array.from({ length: 64 }, (_, i) => ({
        i,
        data: randomBytes(60 * 1024).toString('base64'),
      }));
      const key = KEYS.outcomeSpill(AT, 'large');
      await fresh().putLines(key, records);
      const got = await fresh().getLines<{ i: number; data: string }>(key);
      assert.equal(got.length, 64);
      assert.ok(got.every((r, i) => r.i === i && r.data === records[i]?.data));
    });

    it('large bodies round-trip whole whether written in slices (base64) or as one line (anything else)', async () => {
      const base64 = randomBytes(1024 * 1024).toString('base64');
      const text = `"quoted" \\ back\nslash ${'é'.repeat(400_000)}`;
      const records = [
        { url: 'a', body: base64, status: 200 },
        { body: base64 },
        { url: 'b', body: text },
        { url: 'c', body: '' },
        { url: 'd', body: base64.slice(0, 300_000), extra: { nested: [1, 'two'] } },
      ];
      const key = KEYS.pageBundle(AT, 'slices');
      await fresh().putLines(key, records);
      assert.deepEqual(await fresh().getLines(key), records);
    });

    it('an object that is not gzip JSON lines is an error, not an empty bulk', async () => {
      const key = KEYS.docBulk(AT, 'corrupt');
      await env.clients.s3.send(
        new PutObjectCommand({ Bucket: env.res.bucket, Key: key, Body: 'plain text' }),
      );
      await assert.rejects(fresh().getLines(key), /header|gzip|incorrect/i);
    });

    it('putJson/getJson round-trip; a put replaces', async () => {
      const store = fresh();
      await store.putJson('config/crawl.json', { name: 'x', n: [1, 2] });
      await store.putJson('config/crawl.json', { name: 'y' });
      assert.deepEqual(await store.getJson('config/crawl.json'), { name: 'y' });
    });

    it('the layout keys sort by day and list under their own prefixes only', async () => {
      const bucket = await newBucket(env, 'adapters-layout');
      const store = fresh(bucket);
      const day1 = Date.parse('2026-03-01T23:59:59.999Z');
      const day2 = Date.parse('2026-03-02T00:00:00.000Z');
      const keys = [
        KEYS.pageBundle(day2, 'p2'),
        KEYS.pageBundle(day1, 'p1'),
        KEYS.docBulk(day1, 'd1'),
        KEYS.outcomeSpill(day1, 's1'),
        KEYS.changes('2026-03-01T00-00-00-000Z', 'c1'),
        KEYS.refreshLines('2026-03-09', '2026-03-01T00-00-00-000Z', 'r1'),
        KEYS.refreshLines('never', '2026-03-01T00-00-00-000Z', 'r2'),
      ];
      for (const k of keys) await store.putJson(k, {});
      const list = async (prefix: string) => {
        const out: string[] = [];
        for await (const k of store.list(prefix)) out.push(k);
        return out;
      };
      assert.deepEqual(await list(PREFIXES.pages), [
        'pages/2026-03-01/p1.jsonl.gz',
        'pages/2026-03-02/p2.jsonl.gz',
      ]);
      assert.deepEqual(await list(PREFIXES.docs), [
        'docs/bulks/2026-03-01/d1.jsonl.gz',
        'docs/spill/2026-03-01/s1.jsonl.gz',
      ]);
      assert.deepEqual(await list(PREFIXES.changes), ['changes/2026-03-01T00-00-00-000Z-c1.jsonl.gz']);
      assert.deepEqual(await list(KEYS.refreshDay('2026-03-09')), [
        'refresh/2026-03-09/2026-03-01T00-00-00-000Z-r1.jsonl.gz',
      ]);
      assert.equal((await list('')).length, keys.length, 'every key under one of the prefixes');
      assert.ok((await list('')).every((k) => Object.values(PREFIXES).some((p) => k.startsWith(p))));
    });

    it('list gives key order, not write order, and startAfter skips up to its key', async () => {
      // Pages past 1,000 keys are not made here: moto takes ~12 ms a PutObject (1,050 keys: 13 s).
      const bucket = await newBucket(env, 'adapters-list');
      const store = fresh(bucket);
      const keys = Array.from({ length: 40 }, (_, i) => `refresh/d/${String(i).padStart(5, '0')}`);
      await Promise.all([...keys].reverse().map((k, i) => store.putJson(k, i)));
      await store.putJson('refresh/e/00000', 0);
      const list = async (startAfter?: string) => {
        const out: string[] = [];
        for await (const k of store.list('refresh/d/', startAfter)) out.push(k);
        return out;
      };
      assert.deepEqual(await list(), keys);
      assert.deepEqual(await list('refresh/d/00024'), keys.slice(25));
      assert.deepEqual(await list('refresh/d/00024x'), keys.slice(25), 'a start between keys');
      assert.deepEqual(await list('refresh/d/99999'), []);
    });
  });

  describe('refresh manifests and run records (on the page store)', () => {
    let store: PageStore;
    before(() => {
      store = fresh();
    });

    const state = (
      url: string,
      fetched: string,
      next: string | null,
      extra: Partial<UrlItem> = {},
    ): UrlItem => ({
      url,
      state: 'indexed',
      depth: 1,
      queue: 'index',
      lastFetched: fetched,
      nextRefreshAt: next,
      ...extra,
    });

    it('lines go to their due day (or never); dueLines gives the window, newest line per URL', async () => {
      const t1 = '2026-05-01T10:00:00.000Z';
      const t2 = '2026-05-02T10:00:00.000Z';
      await writeStateLines(
        store,
        [
          state('https://m.test/a', t1, '2026-05-10T08:00:00.000Z'),
          state('https://m.test/b', t1, '2026-05-10T20:00:00.000Z'),
          state('https://m.test/c', t1, '2026-05-11T08:00:00.000Z'),
          state('https://m.test/el', t1, null),
        ],
        t1,
      );
      // A later fetch of a: its newer line wins, though an older one is still in the manifests.
      await writeStateLines(
        store,
        [state('https://m.test/a', t2, '2026-05-10T09:00:00.000Z', { httpStatus: 304 })],
        t2,
      );
      const keys: string[] = [];
      for await (const k of store.list(PREFIXES.refresh)) keys.push(k);
      assert.deepEqual(
        keys.map((k) => k.split('/')[1]),
        ['2026-05-10', '2026-05-10', '2026-05-11', 'never'],
      );
      const due = await dueLines(store, '2026-05-10', '2026-05-10T00:00:00.000Z', '2026-05-10T12:00:00.000Z');
      assert.deepEqual(
        due.map((l) => [l.url, l.lastFetched, l.httpStatus, l.at]),
        [['https://m.test/a', t2, 304, t2]],
      );
    });

    it("a cycle's lines of one day go into objects of at most MANIFEST_LINES, all read back", async () => {
      const at = '2026-07-01T00:00:00.000Z';
      const n = MANIFEST_LINES + 5;
      const lines = Array.from({ length: n }, (_, i) =>
        state(`https://many.test/${i}`, at, '2026-07-03T06:00:00.000Z'),
      );
      await writeStateLines(store, lines, at);
      const keys: string[] = [];
      for await (const k of store.list(`${PREFIXES.refresh}2026-07-03/`)) keys.push(k);
      const sizes = await Promise.all(keys.map(async (k) => (await store.getLines(k)).length));
      assert.deepEqual(
        sizes.sort((a, b) => a - b),
        [5, MANIFEST_LINES],
      );
      const due = await dueLines(store, '2026-07-03', '2026-07-03T00:00:00.000Z', '2026-07-03T12:00:00.000Z');
      assert.equal(new Set(due.map((l) => l.url)).size, n);
    });

    it('the same batch written twice (a retried index batch) reads back as once', async () => {
      const at = '2026-06-01T00:00:00.000Z';
      const batch = [state('https://twice.test/1', at, '2026-06-03T00:00:00.000Z')];
      await writeStateLines(store, batch, at);
      await writeStateLines(store, batch, at);
      // A cycle's window is (from, until]: the line is due at 00:00, in the window that ends then.
      const due = await dueLines(store, '2026-06-03', '2026-06-02T23:00:00.000Z', '2026-06-03T23:59:59.999Z');
      assert.deepEqual(due, [{ ...batch[0], at }]);
      const items: UrlItem[] = [
        {
          url: 'https://twice.test/1',
          state: 'pending',
          depth: 1,
          queue: 'index',
          discoveredAt: '2026-05-31T00:00:00.000Z',
        },
      ];
      const current = await currentStates(store, items);
      assert.equal(current.length, 1);
      assert.equal(current[0]?.state, 'indexed', 'the line, not the claim');
      assert.equal(current[0]?.stored, 'line');
    });

    it('recentLines reads only the manifests written after the time asked for', async () => {
      const early = '2026-07-01T00:00:00.000Z';
      const late = '2026-07-01T01:00:00.000Z';
      const next = '2026-07-05T00:00:00.000Z';
      await writeStateLines(store, [state('https://recent.test/x', early, next, { hash: 'early' })], early);
      await writeStateLines(store, [state('https://recent.test/x', late, next, { hash: 'late' })], late);
      const urls = new Set(['https://recent.test/x']);
      const since = await recentLines(store, urls, ['2026-07-05'], '2026-07-01T00:30:00.000Z');
      assert.equal(since.get('https://recent.test/x')?.hash, 'late');
      const none = await recentLines(store, urls, ['2026-07-05'], '2026-07-01T02:00:00.000Z');
      assert.equal(none.size, 0);
    });

    it('run records: newest `limit`, oldest first; saving the same record twice keeps one', async () => {
      const record = (startedMs: number, kind: 'crawl' | 'refresh' = 'crawl') =>
        buildRunRecord({
          kind,
          crawl: 'c',
          startedMs,
          finishedMs: startedMs + 5_000,
          stats: { fetched: startedMs % 7 },
          counts: emptyCounts(),
          stages: {},
        });
      const base = Date.parse('2026-08-01T00:00:00.000Z');
      const records = [3, 1, 4, 0, 2].map((h) => record(base + h * 3_600_000));
      for (const r of records) await saveRunRecord(store, r);
      const again = await saveRunRecord(store, records[0] as never);
      assert.equal(again, await saveRunRecord(store, records[0] as never), 'one key per record');
      const refresh = record(base + 2 * 3_600_000, 'refresh');
      await saveRunRecord(store, refresh);
      const last = await lastRunRecords(store, 20);
      assert.deepEqual(
        last.map((r) => [r.startedAt.slice(11, 13), r.kind]),
        [
          ['00', 'crawl'],
          ['01', 'crawl'],
          ['02', 'crawl'],
          ['02', 'refresh'],
          ['03', 'crawl'],
          ['04', 'crawl'],
        ],
      );
      assert.deepEqual(
        (await lastRunRecords(store, 2)).map((r) => r.startedAt.slice(11, 13)),
        ['03', '04'],
      );
      assert.deepEqual(await lastRunRecords(store, 20), last, 'reads do not change anything');
    });
  });
});
