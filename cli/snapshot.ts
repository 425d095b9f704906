/**
 * The embedded emulator keeps state in memory only (docs/design-facts.md), so its crawl state is saved
 * under .trawl/snapshot/ after every command that changes it and on `trawl emulator stop`,
 * and restored when the emulator starts again (after a stop or a reboot). The URL table is
 * the truth: queues are not saved but rebuilt from the URLs still `pending` (docs/design-facts.md).
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import {
  type AttributeValue,
  BatchWriteItemCommand,
  CreateTableCommand,
  DescribeTableCommand,
  ListTablesCommand,
  ScanCommand,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type AwsClients, createAwsClients } from '../shared/aws/clients.ts';
import { createPageStore } from '../shared/aws/page-store.ts';
import { provision } from '../shared/aws/provision.ts';
import { currentStates } from '../shared/aws/refresh-manifest.ts';
import { mapLimit } from '../shared/crawl/state/concurrency.ts';
import { PREFIXES } from '../shared/layout.ts';
import { resourceNames } from '../shared/topology.ts';
import type { UrlItem } from '../shared/types.ts';
import { withFileLock } from './file-lock.ts';
import { sendFrontierTasks, taskOf } from './frontier.ts';

const PREFIX = 'trawl-';
/** Requests a restore keeps in flight. */
const RESTORE_CONCURRENCY = 4;

function clientsFor(endpoint: string): AwsClients {
  return createAwsClients({ endpoint, count: false });
}

async function scanAll(c: AwsClients, table: string): Promise<Record<string, AttributeValue>[]> {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const res = await c.ddbRaw.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...(res.Items ?? []));
    start = res.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * Saves the emulator's Trawl tables and buckets into `dir`: all of them, or with `crawls` only
 * theirs (the others are carried over from the last snapshot unread, unless it lacks them), so a
 * command's save costs its own crawl's size, not every crawl's in the directory (14 s for a few
 * crawls of 1,200 pages, longer than Ctrl-C's exit allowed). The new snapshot replaces the old one
 * by renames: a process killed at any moment leaves one whole snapshot (`dir` or `dir.old`).
 */
export async function saveSnapshot(endpoint: string, dir: string, crawls?: string[]): Promise<void> {
  // One save at a time (cli/file-lock.ts): two at once shared the temporary folder.
  await withFileLock(`${dir}.lock`, () => save(endpoint, dir, crawls), waiting);
}

const waiting = () =>
  process.stderr.write('trawl: waiting for another trawl command saving .trawl/snapshot\n');

async function save(endpoint: string, dir: string, crawls?: string[]): Promise<void> {
  const c = clientsFor(endpoint);
  const tmp = `${dir}.tmp`;
  const previous = existsSync(dir) ? dir : existsSync(`${dir}.old`) ? `${dir}.old` : null;
  const mine =
    crawls === undefined
      ? null
      : new Set(
          crawls.flatMap((crawl) => {
            const n = resourceNames(crawl);
            return [n.urlsTable, n.hostsTable, n.bucket];
          }),
        );
  const carried = (kind: 'dynamodb' | 's3', name: string): string | null => {
    if (mine === null || mine.has(name) || previous === null) return null;
    const file = join(previous, kind, kind === 'dynamodb' ? `${name}.json` : name);
    return existsSync(file) ? file : null;
  };
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, 'dynamodb'), { recursive: true });
  mkdirSync(join(tmp, 's3'), { recursive: true });
  const tables = (await c.ddbRaw.send(new ListTablesCommand({}))).TableNames ?? [];
  for (const table of tables.filter((t) => t.startsWith(PREFIX))) {
    const old = carried('dynamodb', table);
    if (old) {
      copyFileSync(old, join(tmp, 'dynamodb', `${table}.json`));
      continue;
    }
    const desc = (await c.ddbRaw.send(new DescribeTableCommand({ TableName: table }))).Table;
    writeFileSync(
      join(tmp, 'dynamodb', `${table}.json`),
      JSON.stringify({ desc, items: await scanAll(c, table) }),
    );
  }
  const buckets = (await c.s3.send(new ListBucketsCommand({}))).Buckets ?? [];
  for (const { Name } of buckets.filter((b) => b.Name?.startsWith(PREFIX))) {
    const old = carried('s3', Name as string);
    if (old) {
      cpSync(old, join(tmp, 's3', Name as string), { recursive: true });
      continue;
    }
    const store = createPageStore({ client: c.s3, bucket: Name as string });
    mkdirSync(join(tmp, 's3', Name as string), { recursive: true });
    for await (const key of store.list('')) {
      // Page bundles are transient work between fetch and extract; the index and state are what matter.
      if (key.startsWith(PREFIXES.pages)) continue;
      const res = await c.s3.send(new GetObjectCommand({ Bucket: Name, Key: key }));
      const file = join(tmp, 's3', Name as string, key);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, await (res.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())));
    }
  }
  mkdirSync(dirname(dir), { recursive: true });
  rmSync(`${dir}.old`, { recursive: true, force: true });
  if (existsSync(dir)) renameSync(dir, `${dir}.old`);
  renameSync(tmp, dir);
  rmSync(`${dir}.old`, { recursive: true, force: true });
}

function createTableInput(d: TableDescription) {
  return {
    TableName: d.TableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: d.AttributeDefinitions,
    KeySchema: d.KeySchema,
    GlobalSecondaryIndexes: d.GlobalSecondaryIndexes?.length
      ? d.GlobalSecondaryIndexes.map((g) => ({
          IndexName: g.IndexName,
          KeySchema: g.KeySchema,
          Projection: g.Projection,
        }))
      : undefined,
  };
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Restores a snapshot into a fresh emulator and re-enqueues the URLs that were still pending. */
export async function restoreSnapshot(endpoint: string, snapshot: string): Promise<number> {
  return withFileLock(`${snapshot}.lock`, () => restore(endpoint, snapshot), waiting);
}

async function restore(endpoint: string, snapshot: string): Promise<number> {
  // A save killed between its two renames leaves the previous snapshot as `.old`.
  const dir = existsSync(snapshot) ? snapshot : `${snapshot}.old`;
  if (!existsSync(dir)) return 0;
  const c = clientsFor(endpoint);
  let pending = 0;
  const urlTables: { crawl: string; items: Record<string, AttributeValue>[] }[] = [];
  for (const file of filesUnder(join(dir, 'dynamodb'))) {
    const { desc, items } = JSON.parse(readFileSync(file, 'utf8')) as {
      desc: TableDescription;
      items: Record<string, AttributeValue>[];
    };
    await c.ddbRaw.send(new CreateTableCommand(createTableInput(desc)));
    const batches = Array.from({ length: Math.ceil(items.length / 25) }, (_, b) =>
      items.slice(b * 25, b * 25 + 25).map((Item) => ({ PutRequest: { Item } })),
    );
    // A few requests at once: the emulator parses one while the next is on its way.
    await mapLimit(batches, RESTORE_CONCURRENCY, (batch) =>
      c.ddbRaw.send(new BatchWriteItemCommand({ RequestItems: { [desc.TableName as string]: batch } })),
    );
    const crawl = desc.TableName?.match(/^trawl-(.+)-urls$/)?.[1];
    if (crawl) urlTables.push({ crawl, items });
  }
  for (const bucketDir of existsSync(join(dir, 's3')) ? readdirSync(join(dir, 's3')) : []) {
    await c.s3.send(new CreateBucketCommand({ Bucket: bucketDir })).catch(() => undefined);
    await mapLimit(filesUnder(join(dir, 's3', bucketDir)), RESTORE_CONCURRENCY, (file) => {
      const key = relative(join(dir, 's3', bucketDir), file)
        .split('\\')
        .join('/');
      return c.s3.send(new PutObjectCommand({ Bucket: bucketDir, Key: key, Body: readFileSync(file) }));
    });
  }
  // States kept in manifest lines are in S3: the buckets are back before pending URLs are sought.
  for (const { crawl, items } of urlTables) pending += await requeuePending(c, crawl, items);
  return pending;
}

async function requeuePending(
  c: AwsClients,
  crawl: string,
  raw: Record<string, AttributeValue>[],
): Promise<number> {
  const res = await provision(c, resourceNames(crawl));
  const store = createPageStore({ client: c.s3, bucket: res.bucket });
  const states = await currentStates(
    store,
    raw.map((r) => unmarshall(r) as UrlItem),
  );
  const tasks = states.filter((i) => i.state === 'pending').map(taskOf);
  await sendFrontierTasks(c, res.queueUrls, tasks);
  return tasks.length;
}
