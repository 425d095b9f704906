/**
 * Per-host state: the politeness slot (`nextFetchAt`), back-off after 429/503, and the
 * robots.txt cache with its expiry. A conditional write on the host item is a cheap
 * distributed lock: no two workers hit one host closer together than its delay.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { withKeyLock } from './key-lock.ts';

export interface HostItem {
  host: string;
  nextFetchAt?: number;
  /** the source weight of the task that booked the slot last (seed 001 weights) */
  bookedWeight?: number;
  /** a task of this source weight lost the host's turn to a lighter one and comes back by `waitUntil` */
  waitWeight?: number;
  waitUntil?: number;
  /** the host sent nothing back to `silentRequests` requests in a row: held until `silentUntil` */
  silentUntil?: number;
  silentRequests?: number;
  /** the silence is one section's (a first path segment, `/search`), not the whole host's */
  silentSection?: string;
  robots?: string;
  robotsExpiresAt?: number;
  expiresAt?: number;
  value?: string;
}

/** `heldBy` of a host backed off (429/503 Retry-After): heavier than any source. */
export const HELD_BY_SITE = Number.MAX_SAFE_INTEGER;

/**
 * A booking's answer: booked, or how long until the host is free. A refusal also says the source
 * weight of the task that holds the slot (`heldBy`, when it booked with one) and a task waiting
 * for the host (`waiter`); a heavier one's turn comes first.
 */
export type SlotResult =
  | { ok: true; silent?: Silence }
  | {
      ok: false;
      waitMs: number;
      heldBy?: number;
      waiter?: { weight: number; until: number };
      silent?: Silence;
    };

/**
 * A host that sent nothing back to `requests` requests in a row, held until `until` (epoch ms; in
 * the past once the hold is over, until a request to it is answered); with `section`, only the
 * URLs of that section (a first path segment) are held and the rest of the host answers.
 */
export type Silence = { until: number; requests: number; section?: string };

/** When a host's next slot is free (epoch ms, 0 if never taken), and its silence if it was silent. */
export type SlotHold = { freeAt: number; silent?: Silence };

export interface HostTable {
  /**
   * Books the host's slot [now, now + delayMs) if the previous one ended by `now` (may be a planned
   * start); else how long to wait. With `weight` (a page's source weight) the slot is not taken from
   * a heavier task waiting for it (`waitFor`) until that one's time is up, and a booking clears the
   * waiter it satisfies; without (robots.txt), waiters are neither heeded nor cleared.
   */
  acquireSlot(
    host: string,
    now: number,
    delayMs: number,
    weight?: number,
    /** the booker has more tasks for the host, back by then: it waits for the host itself */
    waitUntil?: number,
  ): Promise<SlotResult>;
  /**
   * Says that a task of source weight `weight` lost the host's turn to a lighter task and comes
   * back by `until`: lighter tasks leave it the slots that start before then. One conditional
   * write; false when a heavier (or as heavy, longer) waiter is there already.
   */
  waitFor(host: string, weight: number, until: number, now: number): Promise<boolean>;
  /** A heavier waiter than `weight` whose time is not up at `now`, if any (an eventually consistent read). */
  heavierWaiter(host: string, weight: number, now: number): Promise<{ weight: number; until: number } | null>;
  /**
   * Gives back the unused end of slots booked until `bookedUntil`: the host is free from `freeAt`
   * instead. False (nothing written) when the slot was changed since (a back-off pushed it later).
   */
  releaseSlot(host: string, bookedUntil: number, freeAt: number): Promise<boolean>;
  /**
   * Pushes the host's next slot to at least `until` (Retry-After, back-off); with `silentRequests`,
   * the host is held because it sent nothing back to that many requests in a row.
   */
  backOff(host: string, until: number, silentRequests?: number): Promise<void>;
  /**
   * One section of the host (a first path segment) sent nothing back to `requests` requests in a
   * row: its URLs are held until `until`; the host's slots are not touched. It does not replace a
   * silence of the whole host; one section's replaces another's.
   */
  holdSection(host: string, section: string, until: number, requests: number): Promise<void>;
  /**
   * The host (`section` null) or one of its sections answered again: that silence is forgotten
   * (one write; none when the item holds no such silence).
   */
  clearSilence(host: string, section?: string | null): Promise<void>;
  /** When the host's next slot is free, and its silence if it was silent; an eventually consistent read. */
  slotHold(host: string): Promise<SlotHold>;
  getRobots(host: string, now: number): Promise<string | null>;
  putRobots(host: string, robotsJson: string, expiresAt: number): Promise<void>;
  /** A short lease (e.g. "this worker fetches robots.txt now"): true for the one worker that gets it. */
  lease(key: string, now: number, forMs: number): Promise<boolean>;
  /** Gives a lease taken until `until` back (nothing done under it); false when it is not that one any more. */
  endLease(key: string, until: number): Promise<boolean>;
  /** `consistent`: a strongly consistent read (1 unit instead of ½), for read-then-swap loops */
  getValue(key: string, consistent?: boolean): Promise<string | null>;
  putValue(key: string, value: string): Promise<void>;
  /** Sets a value if it still is `expected` (null: absent); false when another writer changed it first. */
  swapValue(key: string, expected: string | null, value: string): Promise<boolean>;
  /** Adds to named counters (scope.traps caps), one UpdateItem each; returns each counter's value before. */
  addCounts(counts: Map<string, number>): Promise<Map<string, number>>;
  /**
   * Adds named counters, and members to named number sets, to one item (a deployed stack's usage
   * hour) in one UpdateItem; it expires at `expiresAt` (s).
   */
  addToItem(
    key: string,
    counters: Record<string, number>,
    expiresAt: number,
    sets?: Record<string, number[]>,
  ): Promise<void>;
  /** The counters of each present item of `keys` (a set counts its members; the report's reader, not a stage's). */
  getItems(keys: string[]): Promise<Map<string, Record<string, number>>>;
  /**
   * Deletes the politeness slots, leases and cached robots.txt files whose times lie past the
   * given ones (epoch ms): what a run with its clock moved ahead (`trawl refresh --now`) left
   * behind. A Scan of the table: the CLI's, for a local crawl, never a stage's. Returns how many.
   */
  clearAhead(after: { slot: number; lease: number; robots: number }): Promise<number>;
  /**
   * The hosts held past `after` (epoch ms), soonest free first, at most `max` of them (`count` says
   * how many in all): what a crawl with only delayed work waits for. A Scan of the table: the
   * CLI's (progress, `trawl status`), never a stage's.
   */
  heldHosts(after: number, max: number): Promise<{ count: number; hosts: HeldHost[] }>;
}

/** Why a host's next request waits: a back-off (429/503 Retry-After), its silence, or its politeness slots booked ahead. */
export type HeldHost = {
  host: string;
  /** epoch ms, the crawl's clock */
  until: number;
  reason: 'backed-off' | 'not-answering' | 'politeness';
  /** a silent section (first path segment) when only it is held */
  section?: string;
};

/** Creates the adapter around the hosts table. */
export function createHostTable({
  client,
  tableName,
}: {
  client: DynamoDBDocumentClient;
  tableName: string;
}): HostTable {
  /**
   * Every conditional or read-modify write of a key goes through here: withKeyLock is the
   * emulator's workaround (key-lock.ts; moto does not lock between its request threads), free on AWS.
   */
  const locked = <T>(key: string, fn: () => Promise<T>) => withKeyLock(`${tableName}|${key}`, fn);

  /** A conditional UpdateItem on one key: true when the condition held and the write happened. */
  async function tryUpdate(
    key: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
  ): Promise<boolean> {
    return (await tryUpdateOld(key, update, condition, values)) !== false;
  }

  /** tryUpdate, answering the item as it was before the write (no more capacity); false when refused. */
  async function tryUpdateOld(
    key: string,
    update: string,
    condition: string,
    values: Record<string, unknown>,
  ): Promise<HostItem | undefined | false> {
    try {
      const res = await locked(key, () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { host: key },
            UpdateExpression: update,
            ConditionExpression: condition,
            ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
            ReturnValues: 'ALL_OLD',
          }),
        ),
      );
      return res.Attributes as HostItem | undefined;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /** The host's slot item (an eventually consistent read). */
  async function slotItem(host: string): Promise<HostItem | undefined> {
    const res = await client.send(new GetCommand({ TableName: tableName, Key: { host: `slot#${host}` } }));
    return res.Item as HostItem | undefined;
  }

  async function acquireSlot(
    host: string,
    now: number,
    delayMs: number,
    weight?: number,
    waitUntil?: number,
  ): Promise<SlotResult> {
    const values: Record<string, unknown> = {
      ':next': now + delayMs,
      ':now': now,
      ':exp': Math.floor((now + delayMs) / 1000) + 86_400,
    };
    const free = '(attribute_not_exists(nextFetchAt) OR nextFetchAt <= :now)';
    // A heavier waiter keeps the slots that start before its time is up; the booking that heeds
    // it (its own, or a later one) clears it in the same write, or waits itself for its next tasks.
    const booking = 'SET nextFetchAt = :next, expiresAt = :exp, bookedWeight = :w';
    const took =
      weight === undefined
        ? await tryUpdateOld(`slot#${host}`, 'SET nextFetchAt = :next, expiresAt = :exp', free, values)
        : await tryUpdateOld(
            `slot#${host}`,
            waitUntil === undefined
              ? `${booking} REMOVE waitWeight, waitUntil`
              : `${booking}, waitWeight = :w, waitUntil = :until`,
            `${free} AND (attribute_not_exists(waitUntil) OR waitUntil <= :now OR waitWeight <= :w)`,
            { ...values, ':w': weight, ...(waitUntil === undefined ? {} : { ':until': waitUntil }) },
          );
    if (took !== false) {
      // The host's silence comes with the booking (the item as it was): no read of its own.
      const silent = silenceOf(took);
      return silent ? { ok: true, silent } : { ok: true };
    }
    const item = await slotItem(host);
    const next = Number(item?.nextFetchAt ?? now);
    const waiter = activeWaiter(item, now);
    const heavier = weight !== undefined && waiter !== null && waiter.weight > weight ? waiter : null;
    const silent = silenceOf(item);
    return {
      ok: false,
      waitMs: Math.max(1, Math.max(next, heavier?.until ?? 0) - now),
      ...(item?.bookedWeight === undefined ? {} : { heldBy: Number(item.bookedWeight) }),
      ...(waiter ? { waiter } : {}),
      ...(silent ? { silent } : {}),
    };
  }

  return {
    acquireSlot,
    waitFor: (host, weight, until, now) =>
      tryUpdate(
        `slot#${host}`,
        'SET waitWeight = :w, waitUntil = :until, expiresAt = if_not_exists(expiresAt, :exp)',
        'attribute_not_exists(waitUntil) OR waitUntil <= :now OR waitWeight < :w OR (waitWeight = :w AND waitUntil < :until)',
        { ':w': weight, ':until': until, ':now': now, ':exp': Math.floor(until / 1000) + 86_400 },
      ),
    async heavierWaiter(host, weight, now) {
      const waiter = activeWaiter(await slotItem(host), now);
      return waiter && waiter.weight > weight ? waiter : null;
    },
    releaseSlot: (host, bookedUntil, freeAt) =>
      tryUpdate(`slot#${host}`, 'SET nextFetchAt = :free', 'nextFetchAt = :booked', {
        ':free': freeAt,
        ':booked': bookedUntil,
      }),
    async backOff(host, until, silentRequests) {
      // The site holds the host, not a lighter task: a heavier one waits for the back-off too.
      await tryUpdate(
        `slot#${host}`,
        'SET nextFetchAt = :until, bookedWeight = :site',
        'attribute_not_exists(nextFetchAt) OR nextFetchAt < :until',
        { ':until': until, ':site': HELD_BY_SITE },
      );
      if (silentRequests === undefined) return;
      // The silence is said even when the slot was taken later already (a run of slots booked);
      // the whole host's replaces a section's.
      await tryUpdate(
        `slot#${host}`,
        'SET silentUntil = :until, silentRequests = :n, expiresAt = if_not_exists(expiresAt, :exp) REMOVE silentSection',
        'attribute_not_exists(silentRequests) OR attribute_exists(silentSection) OR silentRequests <= :n',
        { ':until': until, ':n': silentRequests, ':exp': Math.floor(until / 1000) + 86_400 },
      );
    },
    async holdSection(host, section, until, requests) {
      await tryUpdate(
        `slot#${host}`,
        'SET silentUntil = :until, silentRequests = :n, silentSection = :s, expiresAt = if_not_exists(expiresAt, :exp)',
        'attribute_not_exists(silentRequests) OR (attribute_exists(silentSection) AND (silentSection <> :s OR silentRequests <= :n))',
        { ':until': until, ':n': requests, ':s': section, ':exp': Math.floor(until / 1000) + 86_400 },
      );
    },
    async clearSilence(host, section = null) {
      await tryUpdate(
        `slot#${host}`,
        'REMOVE silentUntil, silentRequests, silentSection',
        section === null
          ? 'attribute_exists(silentRequests) AND attribute_not_exists(silentSection)'
          : 'silentSection = :s',
        section === null ? {} : { ':s': section },
      );
    },
    async slotHold(host) {
      const item = await slotItem(host);
      const silent = silenceOf(item);
      return { freeAt: Number(item?.nextFetchAt ?? 0), ...(silent ? { silent } : {}) };
    },
    async getRobots(host, now) {
      const res = await client.send(
        new GetCommand({ TableName: tableName, Key: { host: `robots#${host}` } }),
      );
      const item = res.Item as HostItem | undefined;
      if (!item?.robots || (item.robotsExpiresAt ?? 0) <= now) return null;
      return item.robots;
    },
    async putRobots(host, robotsJson, expiresAt) {
      await client.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            host: `robots#${host}`,
            robots: robotsJson,
            robotsExpiresAt: expiresAt,
            expiresAt: Math.floor(expiresAt / 1000) + 86_400,
          },
        }),
      );
    },
    async lease(key, now, forMs) {
      return tryUpdate(
        `lease#${key}`,
        'SET leaseUntil = :until, expiresAt = :exp',
        'attribute_not_exists(leaseUntil) OR leaseUntil <= :now',
        { ':until': now + forMs, ':now': now, ':exp': Math.floor((now + forMs) / 1000) + 3600 },
      );
    },
    endLease: (key, until) =>
      tryUpdate(`lease#${key}`, 'SET leaseUntil = :free', 'leaseUntil = :until', {
        ':free': 0,
        ':until': until,
      }),
    async getValue(key, consistent = false) {
      const res = await client.send(
        new GetCommand({ TableName: tableName, Key: { host: `value#${key}` }, ConsistentRead: consistent }),
      );
      return ((res.Item as HostItem | undefined)?.value as string | undefined) ?? null;
    },
    async putValue(key, value) {
      await client.send(new PutCommand({ TableName: tableName, Item: { host: `value#${key}`, value } }));
    },
    async swapValue(key, expected, value) {
      try {
        await locked(`value#${key}`, () =>
          client.send(
            new PutCommand({
              TableName: tableName,
              Item: { host: `value#${key}`, value },
              ConditionExpression: expected === null ? 'attribute_not_exists(#h)' : '#v = :expected',
              ExpressionAttributeNames: expected === null ? { '#h': 'host' } : { '#v': 'value' },
              ...(expected === null ? {} : { ExpressionAttributeValues: { ':expected': expected } }),
            }),
          ),
        );
        return true;
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return false;
        throw err;
      }
    },
    async addCounts(counts) {
      const before = new Map<string, number>();
      // One atomic ADD per counter and batch (not per URL): concurrent batches each get their own range.
      for (const [key, n] of counts) {
        const res = await locked(key, () =>
          client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: { host: key },
              UpdateExpression: 'ADD urlCount :n',
              ExpressionAttributeValues: { ':n': n },
              ReturnValues: 'UPDATED_NEW',
            }),
          ),
        );
        before.set(key, Number(res.Attributes?.urlCount ?? n) - n);
      }
      return before;
    },
    async addToItem(key, counters, expiresAt, sets = {}) {
      const entries = Object.entries(counters).filter(([, n]) => n !== 0);
      // Counter names hold dots ("call.S3.PutObject"): every name goes through a placeholder.
      const names: Record<string, string> = Object.fromEntries(entries.map(([k], i) => [`#c${i}`, k]));
      const values: Record<string, unknown> = Object.fromEntries(entries.map(([, n], i) => [`:c${i}`, n]));
      const adds = entries.map((_, i) => `#c${i} :c${i}`);
      // Number sets: ADD makes their union (the minutes of an hour some invocation ran in).
      for (const [i, [name, members]] of Object.entries(sets)
        .filter(([, m]) => m.length > 0)
        .entries()) {
        names[`#s${i}`] = name;
        values[`:s${i}`] = new Set(members);
        adds.push(`#s${i} :s${i}`);
      }
      // Locked as addCounts is: the local runner's concurrent invocations lost an ADD on the
      // emulator (a deployed-usage CI run recorded 10 of 11 UpdateItems); free on Lambda.
      await locked(key, () =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { host: key },
            UpdateExpression: `SET expiresAt = :exp${adds.length > 0 ? ` ADD ${adds.join(', ')}` : ''}`,
            ExpressionAttributeNames: adds.length > 0 ? names : undefined,
            ExpressionAttributeValues: { ...values, ':exp': expiresAt },
          }),
        ),
      );
    },
    async clearAhead(after) {
      let cleared = 0;
      let start: Record<string, unknown> | undefined;
      do {
        const res = await client.send(
          new ScanCommand({
            TableName: tableName,
            ProjectionExpression: 'host, nextFetchAt, leaseUntil, robotsExpiresAt',
            ExclusiveStartKey: start,
          }),
        );
        for (const item of (res.Items ?? []) as (HostItem & { leaseUntil?: number })[]) {
          const ahead =
            (item.host.startsWith('slot#') && (item.nextFetchAt ?? 0) > after.slot) ||
            (item.host.startsWith('lease#') && (item.leaseUntil ?? 0) > after.lease) ||
            (item.host.startsWith('robots#') && (item.robotsExpiresAt ?? 0) > after.robots);
          if (!ahead) continue;
          await client.send(new DeleteCommand({ TableName: tableName, Key: { host: item.host } }));
          cleared++;
        }
        start = res.LastEvaluatedKey;
      } while (start);
      return cleared;
    },
    async heldHosts(after, max) {
      const held: HeldHost[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const res = await client.send(
          new ScanCommand({
            TableName: tableName,
            ProjectionExpression:
              'host, nextFetchAt, bookedWeight, silentUntil, silentRequests, silentSection',
            FilterExpression: 'begins_with(host, :slot) AND (nextFetchAt > :after OR silentUntil > :after)',
            ExpressionAttributeValues: { ':slot': 'slot#', ':after': after },
            ExclusiveStartKey: start,
          }),
        );
        for (const item of (res.Items ?? []) as HostItem[]) held.push(heldHost(item, after));
        start = res.LastEvaluatedKey;
      } while (start);
      held.sort((a, b) => a.until - b.until || (a.host < b.host ? -1 : 1));
      return { count: held.length, hosts: held.slice(0, max) };
    },
    async getItems(keys) {
      const out = new Map<string, Record<string, number>>();
      for (let i = 0; i < keys.length; i += 100) {
        let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = {
          [tableName]: { Keys: keys.slice(i, i + 100).map((host) => ({ host })) },
        };
        // Unprocessed keys (throttling) are asked again until none is left.
        while (request && Object.keys(request).length > 0) {
          const res = await client.send(new BatchGetCommand({ RequestItems: request }));
          for (const item of res.Responses?.[tableName] ?? []) {
            const { host, expiresAt: _exp, ...fields } = item as Record<string, unknown> & { host: string };
            const counters: Record<string, number> = {};
            for (const [k, v] of Object.entries(fields)) counters[k] = v instanceof Set ? v.size : Number(v);
            out.set(host, counters);
          }
          request = res.UnprocessedKeys as typeof request;
        }
      }
      return out;
    },
  };
}

/**
 * What the worker that took a lease stores, read every `pollMs` for up to `waitMs` (the robots.txt
 * and soft-404 answers of a host another worker fetches); null when none came.
 */
export async function awaitLeaseHolder<T>(
  read: () => Promise<T | null>,
  waitMs: number,
  pollMs: number,
): Promise<T | null> {
  for (let waited = 0; waited < waitMs; waited += pollMs) {
    await new Promise((r) => setTimeout(r, pollMs));
    const got = await read();
    if (got !== null) return got;
  }
  return null;
}

/** The host item's waiter whose time is not up at `now`, if any. */
function activeWaiter(item: HostItem | undefined, now: number): { weight: number; until: number } | null {
  if (item?.waitUntil === undefined || item.waitWeight === undefined) return null;
  const until = Number(item.waitUntil);
  return until > now ? { weight: Number(item.waitWeight), until } : null;
}

/** A slot item held past `after`, said as `heldHosts` says it. */
function heldHost(item: HostItem, after: number): HeldHost {
  const host = item.host.slice('slot#'.length);
  const silence = silenceOf(item);
  if (silence && silence.until > after)
    return {
      host,
      until: silence.until,
      reason: 'not-answering',
      ...(silence.section ? { section: silence.section } : {}),
    };
  const reason = Number(item.bookedWeight) === HELD_BY_SITE ? 'backed-off' : 'politeness';
  return { host, until: Number(item.nextFetchAt), reason };
}

/** The host's silence as `backOff` with silentRequests (or `holdSection`) said it, until `clearSilence`; else null. */
function silenceOf(item: HostItem | undefined): Silence | null {
  if (item?.silentUntil === undefined || item.silentRequests === undefined) return null;
  const silence: Silence = { until: Number(item.silentUntil), requests: Number(item.silentRequests) };
  if (typeof item.silentSection === 'string') silence.section = item.silentSection;
  return silence;
}
