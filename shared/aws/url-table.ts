/**
 * The URL table: visited links, per-URL state and error state in one DynamoDB item per URL.
 * The table is the truth; queues only carry work (docs/design-facts.md).
 */

import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  type PutCommandInput,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mapLimit } from '../crawl/state/concurrency.ts';
import { keepLaterStamps, LATER_KEPT } from '../crawl/state/url-state.ts';
import { MAX_STORED_URL_BYTES } from '../crawl/url/scope.ts';
import { TABLES } from '../topology.ts';
import type { UrlItem, UrlTask } from '../types.ts';
import { withKeyLock } from './key-lock.ts';

/** BatchGetItem takes at most 100 keys, BatchWriteItem 25 requests (AWS limits). */
const BATCH_GET_MAX = 100;
const BATCH_WRITE_MAX = 25;
/** A positive cache of URLs known to be in the table: a warm container skips re-reading them. */
const KNOWN_CACHE_MAX = 500_000;
/** Entries expire: another instance may forget a URL (refresh, clear-errors); then a new link to it counts again. */
const KNOWN_TTL_MS = 10 * 60_000;
/** Conditional puts in flight at once (the SDK's socket pool is 50 by default). */
const CLAIM_CONCURRENCY = 32;

/** Decides which new (never claimed) URLs enter the frontier; the stopped ones are recorded with `extra`. */
export type ClaimGate = (
  candidates: UrlTask[],
  /** whether a candidate has a row already (a stopped URL judged again: `reopen`) */
  known: (task: UrlTask) => boolean,
) => Promise<{ admitted: UrlTask[]; stopped: { task: UrlTask; extra: Partial<UrlItem> }[] }>;

/** Options of {@link UrlTable.claim}. */
export interface ClaimOptions {
  /** orphans: known URLs last reached before this time get `reachedAt = now` (one write unit each) */
  stampBefore?: string;
  /** may stop some of the new URLs (crawler traps), recorded as it says */
  gate?: ClaimGate;
  /**
   * a known URL the gate stopped under caps the config has changed since: it goes through the gate
   * again (and, admitted, into the frontier), so a raised cap brings back what the old one stopped
   */
  reopen?: (item: UrlItem) => boolean;
}

export interface UrlTable {
  /** The tasks this claimer holds the claim of; those it claimed before come back marked `redelivered`. */
  claim(tasks: UrlTask[], claimer: string, now: string, opts?: ClaimOptions): Promise<UrlTask[]>;
  getMany(urls: string[]): Promise<Map<string, UrlItem>>;
  /** Removes attributes from a URL's item (e.g. its document pointer when the document is deleted). */
  removeFields(url: string, fields: string[]): Promise<void>;
  /** Moves a table-kept URL's refresh time from `from` to `to`; false when it changed since (refetched). */
  moveRefresh(url: string, from: string, to: string): Promise<boolean>;
  forget(url: string): Promise<void>;
  scan(): AsyncGenerator<UrlItem>;
  /** Marks URLs as known after their claims were sent (saves the read next time they are found). */
  markKnown(urls: string[]): void;
  /**
   * Drops what this table object knows when `epoch` (stages/forget-epoch.ts) differs from the
   * last one given: another container forgot URLs since, and a link to them must claim them again.
   */
  syncForgets(epoch: string | null): void;
  /** Puts and deletes whole items, 25 a request (BatchWriteItem: unconditional, same units, far fewer calls). */
  writeMany(puts: UrlItem[], deletes: string[]): Promise<void>;
  /**
   * Puts whole items made from states read earlier, each keeping the table's later link stamps
   * (`reachedAt`, `linksReadAt`: url-state.ts LATER_KEPT) — a conditional PutItem each, the same
   * write unit as a batch put; only when a stamp landed since is the item put again, folded.
   */
  putStates(items: UrlItem[]): Promise<void>;
}

/** A conditional write's outcome: false when its condition did not hold, any other failure thrown. */
async function conditionHeld(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

/** Creates the adapter; `tableName` from the topology's resource names. */
export function createUrlTable({
  client,
  tableName,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
}): UrlTable {
  // URL → until when it is known, and who claimed it: a claimer's own claims are never skipped,
  // so its retry (the same container, after a failed send) finds and re-sends them.
  const known = new Map<string, { until: number; claimer?: string }>();
  let forgetEpoch: string | null | undefined;
  const remember = (url: string, claimer?: string) => {
    if (known.size >= KNOWN_CACHE_MAX) known.clear();
    known.set(url, { until: Date.now() + KNOWN_TTL_MS, claimer });
  };
  // When each cached URL was last reached (orphans): a cached URL is read again once its stamp is due.
  const reached = new Map<string, string>();
  const noteReached = (url: string, at: string | undefined) => {
    if (reached.size >= KNOWN_CACHE_MAX) reached.clear();
    if (at) reached.set(url, at);
  };
  const isKnown = (url: string, claimer: string) => {
    const entry = known.get(url);
    if (entry === undefined) return false;
    if (entry.until > Date.now()) return entry.claimer !== claimer;
    known.delete(url);
    return false;
  };

  async function getMany(urls: string[]): Promise<Map<string, UrlItem>> {
    const found = new Map<string, UrlItem>();
    const unique = [...new Set(urls)];
    for (let i = 0; i < unique.length; i += BATCH_GET_MAX) {
      let keys: Record<string, unknown>[] = unique.slice(i, i + BATCH_GET_MAX).map((url) => ({ url }));
      // UnprocessedKeys (throttling, a response over 16 MB) must be retried; bounded, then the read
      // fails: a key left out would read as "no item" (never claimed, or forgotten) to the caller.
      for (let attempt = 0; keys.length > 0; attempt++) {
        if (attempt >= 8) throw new Error(`BatchGetItem left ${keys.length} key(s) unprocessed`);
        if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
        const res = await client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: keys } } }));
        for (const item of (res.Responses?.[tableName] ?? []) as UrlItem[]) found.set(item.url, item);
        keys = (res.UnprocessedKeys?.[tableName]?.Keys ?? []) as Record<string, unknown>[];
      }
    }
    return found;
  }

  async function claimOne(
    task: UrlTask,
    claimer: string,
    now: string,
    extra: Partial<UrlItem> = {},
    /** the note of the capped item this claim replaces (reopen): only while the item still has it */
    replacing?: string,
  ): Promise<boolean> {
    const item: UrlItem = {
      url: task.url,
      state: 'pending',
      depth: task.depth,
      queue: task.queue,
      index: task.index,
      follow: task.follow,
      priority: task.priority,
      source: task.source ?? null,
      addMeta: task.addMeta,
      claimedBy: claimer,
      discoveredAt: now,
      temporaryErrors: 0,
      ...(task.kind ? { kind: task.kind } : {}),
      ...extra,
    };
    // The write that makes "enters the frontier once per crawl" true across concurrent workers.
    // A redelivered message (same claimer) wins again, so a crash between claim and send loses nothing.
    // withKeyLock: the emulator's workaround (key-lock.ts); one process's claims of a URL take turns.
    // A capped item reopened: one claimer wins it, the one whose condition sees the old note.
    const condition: Pick<
      PutCommandInput,
      'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
    > =
      replacing === undefined
        ? {
            ConditionExpression: 'attribute_not_exists(#u) OR claimedBy = :me',
            ExpressionAttributeNames: { '#u': TABLES.urls.partitionKey },
            ExpressionAttributeValues: { ':me': claimer },
          }
        : {
            ConditionExpression: '#n = :old',
            ExpressionAttributeNames: { '#n': 'note' },
            ExpressionAttributeValues: { ':old': replacing },
          };
    return conditionHeld(
      withKeyLock(`${tableName}|${task.url}`, () =>
        client.send(new PutCommand({ TableName: tableName, Item: item, ...condition })),
      ),
    );
  }

  /**
   * Puts a whole item unless the table holds a later link stamp than the item; then folds the
   * table's (the failed put returns it) and puts again. The condition makes the put and a stamp
   * landing at the same time take turns: whichever comes second keeps the later value.
   */
  async function putState(item: UrlItem): Promise<void> {
    let next = item;
    for (let attempt = 0; ; attempt++) {
      const names: Record<string, string> = {};
      const values: Record<string, string> = {};
      const conditions = LATER_KEPT.map((key, i) => {
        names[`#s${i}`] = key;
        const v = next[key];
        if (!v) return `attribute_not_exists(#s${i})`;
        values[`:s${i}`] = v;
        return `(attribute_not_exists(#s${i}) OR #s${i} <= :s${i})`;
      });
      try {
        await withKeyLock(`${tableName}|${item.url}`, () =>
          client.send(
            new PutCommand({
              TableName: tableName,
              Item: next,
              ConditionExpression: conditions.join(' AND '),
              ExpressionAttributeNames: names,
              ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            }),
          ),
        );
        return;
      } catch (err) {
        // A stamp can only move forward: a few rounds settle it; more would be a bug, not a race.
        if (!(err instanceof ConditionalCheckFailedException) || attempt >= 4) throw err;
        const current = err.Item
          ? (unmarshall(err.Item) as UrlItem)
          : (await getMany([item.url])).get(item.url);
        next = keepLaterStamps(next, current);
      }
    }
  }

  /** Stamps `reachedAt` on a known URL; never re-creates a URL forgotten meanwhile, never goes back. */
  async function stampOne(url: string, now: string): Promise<void> {
    await conditionHeld(
      withKeyLock(`${tableName}|${url}`, () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { url },
            UpdateExpression: 'SET reachedAt = :now',
            ConditionExpression:
              'attribute_exists(#u) AND (attribute_not_exists(reachedAt) OR reachedAt < :now)',
            ExpressionAttributeNames: { '#u': TABLES.urls.partitionKey },
            ExpressionAttributeValues: { ':now': now },
          }),
        ),
      ),
    );
    noteReached(url, now);
  }

  /** Known URLs that need no read: cached, and (with stamps) stamped recently enough. */
  const skips = (url: string, claimer: string, stampBefore: string | undefined) =>
    isKnown(url, claimer) && (!stampBefore || (reached.get(url) ?? '') >= stampBefore);

  return {
    async claim(tasks, claimer, now, opts = {}) {
      const { stampBefore, gate, reopen } = opts;
      const byUrl = new Map<string, UrlTask>();
      for (const t of tasks)
        if (!skips(t.url, claimer, stampBefore) && !byUrl.has(t.url) && keyFits(t.url)) byUrl.set(t.url, t);
      if (byUrl.size === 0) return [];
      // Read before write: a failed conditional write still costs its write unit (docs/design-facts.md).
      const existing = await getMany([...byUrl.keys()]);
      const fresh: UrlTask[] = [];
      const stale: string[] = [];
      const reopened = new Map<UrlTask, string>();
      const candidates = [...byUrl.values()].filter((t) => {
        const item = existing.get(t.url);
        if (!item) return true;
        if (gate && reopen?.(item) && item.note) {
          reopened.set(t, item.note);
          return true;
        }
        // Claimed by this claimer before: a copy of its message (the task says it may have been
        // sent), but not what a gate stopped (recorded `ignored`).
        const gated = item.state === 'ignored' && item.note?.startsWith('trap: ') === true;
        if (item.claimedBy === claimer && !gated) fresh.push({ ...t, redelivered: true });
        else remember(t.url, item.claimedBy);
        const reach = item.reachedAt ?? item.discoveredAt;
        if (stampBefore && (reach ?? '') < stampBefore) stale.push(t.url);
        else noteReached(t.url, reach);
        return false;
      });
      const { admitted, stopped } = gate
        ? await gate(candidates, (t) => reopened.has(t))
        : { admitted: candidates, stopped: [] };
      await mapLimit(stopped, CLAIM_CONCURRENCY, (s) =>
        claimOne(s.task, claimer, now, s.extra, reopened.get(s.task)),
      );
      for (const s of stopped) remember(s.task.url, claimer);
      const results = await mapLimit(admitted, CLAIM_CONCURRENCY, (t) =>
        claimOne(t, claimer, now, {}, reopened.get(t)),
      );
      // A lost race: the winner is not known here, so nothing is cached (the next sight reads again).
      admitted.forEach((t, i) => {
        if (results[i]) fresh.push(t);
        noteReached(t.url, now);
      });
      await mapLimit(stale, CLAIM_CONCURRENCY, (url) => stampOne(url, now));
      return fresh;
    },
    getMany,
    async removeFields(url, fields) {
      // "REMOVE " with nothing after it is a ValidationException: no fields, no request.
      if (fields.length === 0) return;
      const names = Object.fromEntries(fields.map((f, i) => [`#r${i}`, f]));
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { url },
          UpdateExpression: `REMOVE ${Object.keys(names).join(', ')}`,
          ExpressionAttributeNames: names,
        }),
      );
    },
    moveRefresh: (url, from, to) =>
      conditionHeld(
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { url },
            UpdateExpression: 'SET nextRefreshAt = :to',
            ConditionExpression: 'nextRefreshAt = :from',
            ExpressionAttributeValues: { ':from': from, ':to': to },
          }),
        ),
      ),
    async forget(url) {
      await client.send(new DeleteCommand({ TableName: tableName, Key: { url } }));
      known.delete(url);
    },
    markKnown(urls) {
      for (const u of urls) remember(u);
    },
    syncForgets(epoch) {
      if (epoch === forgetEpoch) return;
      forgetEpoch = epoch;
      known.clear();
      reached.clear();
    },
    async writeMany(puts, deletes) {
      // DynamoDB refuses two operations on one key in a BatchWriteItem (moto only checks puts and
      // deletes apart): refused for the whole call, before anything is written, on both.
      const twice = firstRepeat([...puts.map((p) => p.url), ...deletes]);
      if (twice !== undefined) throw new Error(`writeMany: ${twice} appears twice in one call`);
      const requests = [
        ...puts.map((Item) => ({ PutRequest: { Item } })),
        ...deletes.map((url) => ({ DeleteRequest: { Key: { url } } })),
      ];
      for (let i = 0; i < requests.length; i += BATCH_WRITE_MAX) {
        let pending: unknown[] = requests.slice(i, i + BATCH_WRITE_MAX);
        // UnprocessedItems (throttling) are retried with back-off; bounded, then the batch fails and SQS retries it.
        for (let attempt = 0; pending.length > 0; attempt++) {
          if (attempt >= 8) throw new Error(`BatchWriteItem left ${pending.length} item(s) unprocessed`);
          if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
          const res = await client.send(
            new BatchWriteCommand({ RequestItems: { [tableName]: pending as never } }),
          );
          pending = res.UnprocessedItems?.[tableName] ?? [];
        }
      }
      for (const item of puts) remember(item.url, item.claimedBy);
      for (const url of deletes) known.delete(url);
    },
    async putStates(items) {
      const twice = firstRepeat(items.map((i) => i.url));
      if (twice !== undefined) throw new Error(`putStates: ${twice} appears twice in one call`);
      await mapLimit(items, CLAIM_CONCURRENCY, putState);
      for (const item of items) remember(item.url, item.claimedBy);
    },
    async *scan() {
      let start: Record<string, unknown> | undefined;
      do {
        const res = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }));
        for (const item of (res.Items ?? []) as UrlItem[]) yield item;
        start = res.LastEvaluatedKey;
      } while (start);
    },
  };
}

/** The first value that occurs a second time, if any. */
function firstRepeat(values: string[]): string | undefined {
  const seen = new Set<string>();
  for (const v of values) {
    if (seen.has(v)) return v;
    seen.add(v);
  }
  return undefined;
}

/**
 * A URL the table can key: the deciders reject longer ones (`url-too-long`); one that came another
 * way is left out here rather than failing the batch's every claim (DynamoDB refuses the request).
 */
function keyFits(url: string): boolean {
  return Buffer.byteLength(url) <= MAX_STORED_URL_BYTES;
}
