/**
 * DynamoDB on-demand capacity estimated per call from the request and the response, as AWS
 * bills it (developer guide, "Read/write capacity mode"): a write is 1 unit per 1 KB of the
 * larger of the item before and after, a failed conditional write still costs its write, an
 * eventually consistent read is ½ unit per 4 KB, and a key that is not there still costs ½ unit.
 * moto does not report consumed capacity, so the benchmark keeps a model of item sizes.
 */
import { TABLES } from '../shared/topology.ts';

type Attr = Record<string, unknown>;
type Item = Record<string, unknown>;

export interface UnitTally {
  /** "urls.PutItem" → units */
  read: Record<string, number>;
  write: Record<string, number>;
  /** "urls.BatchGetItem" → keys (items) read or written */
  items: Record<string, number>;
  conditionalFailures: number;
  maxItemBytes: number;
}

export function emptyTally(): UnitTally {
  return { read: {}, write: {}, items: {}, conditionalFailures: 0, maxItemBytes: 0 };
}

const bytes = (s: string) => Buffer.byteLength(s);

const AV_TYPES = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'L', 'M', 'SS', 'NS', 'BS']);

/** A value in either form: marshalled (`{ S: "x" }`, raw client) or native (document client). */
function isAttributeValue(v: unknown): v is Attr {
  if (!v || typeof v !== 'object' || Array.isArray(v) || v instanceof Uint8Array) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && AV_TYPES.has(keys[0] as string);
}

const numberSize = (n: string) => Math.ceil(n.replace(/[-.e+]/gi, '').length / 2) + 1;

/** DynamoDB attribute value size: strings and binaries by bytes, numbers ~ 1 byte per 2 digits + 1. */
export function valueSize(v: unknown): number {
  if (typeof v === 'string') return bytes(v);
  if (typeof v === 'number' || typeof v === 'bigint') return numberSize(String(v));
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (v instanceof Uint8Array) return v.byteLength;
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + valueSize(x), 0);
  if (v instanceof Set) return [...v].reduce((n: number, x) => n + valueSize(x), 0);
  if (!isAttributeValue(v)) return 3 + itemSize(v as Item);
  const [type, inner] = Object.entries(v)[0] as [string, unknown];
  if (type === 'N') return numberSize(String(inner));
  if (type === 'NS') return (inner as string[]).reduce((n, x) => n + numberSize(x), 0);
  if (type === 'M') return 3 + itemSize(inner as Item);
  return valueSize(inner);
}

/** DynamoDB item size: attribute names plus values. */
export function itemSize(item: Record<string, unknown> | undefined): number {
  if (!item) return 0;
  return Object.entries(item).reduce((n, [k, v]) => n + bytes(k) + valueSize(v), 0);
}

const writeUnits = (size: number) => Math.max(1, Math.ceil(size / 1024));
const readUnits = (size: number) => Math.max(1, Math.ceil(size / 4096)) * 0.5;

/** The model: each item's attributes as last written, per table and key. */
export class DynamoUnitModel {
  readonly tally = emptyTally();
  private readonly items = new Map<string, Item>();

  private add(kind: 'read' | 'write' | 'items', key: string, n: number): void {
    this.tally[kind][key] = (this.tally[kind][key] ?? 0) + n;
  }

  private short(table: string | undefined): string {
    return (table ?? '?').endsWith('-urls')
      ? 'urls'
      : (table ?? '?').endsWith('-hosts')
        ? 'hosts'
        : String(table);
  }

  /** Accounts one call: `failed` = a ConditionalCheckFailedException. */
  record(
    op: string,
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    failed: boolean,
  ): void {
    const table = this.short(input.TableName as string | undefined);
    const label = `${table}${keyKind(input.Key as Item | undefined)}.${op}`;
    switch (op) {
      case 'PutItem':
        this.write(label, table, input.Key as Item, input.Item as Item, failed);
        break;
      case 'UpdateItem':
        this.write(label, table, input.Key as Item, this.applyUpdate(table, input), failed);
        break;
      case 'DeleteItem':
        this.write(label, table, input.Key as Item, undefined, failed);
        break;
      case 'GetItem':
        this.add('items', label, 1);
        this.add('read', label, readUnits(itemSize(output?.Item as Item)));
        break;
      case 'BatchGetItem':
        this.batchGet(input, output);
        break;
      case 'BatchWriteItem':
        this.batchWrite(input, output);
        break;
      case 'Query':
      case 'Scan': {
        const found = (output?.Items as Item[] | undefined) ?? [];
        this.add('items', label, found.length);
        this.add('read', label, readUnits(found.reduce((n, i) => n + itemSize(i), 0)));
      }
    }
  }

  private batchGet(input: Record<string, unknown>, output: Record<string, unknown> | undefined): void {
    const requested = (input.RequestItems ?? {}) as Record<string, { Keys: Item[] }>;
    const responses = (output?.Responses ?? {}) as Record<string, Item[]>;
    const unprocessed = (output?.UnprocessedKeys ?? {}) as Record<string, { Keys: Item[] }>;
    for (const [name, { Keys }] of Object.entries(requested)) {
      const label = `${this.short(name)}.BatchGetItem`;
      const found = responses[name] ?? [];
      const missing = Keys.length - found.length - (unprocessed[name]?.Keys.length ?? 0);
      this.add('items', label, Keys.length - (unprocessed[name]?.Keys.length ?? 0));
      this.add(
        'read',
        label,
        found.reduce((n, i) => n + readUnits(itemSize(i)), 0) + 0.5 * Math.max(0, missing),
      );
    }
  }

  /** BatchWriteItem: each put or delete costs what the same PutItem / DeleteItem would (no discount). */
  private batchWrite(input: Record<string, unknown>, output: Record<string, unknown> | undefined): void {
    type Req = { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } };
    const requested = (input.RequestItems ?? {}) as Record<string, Req[]>;
    const unprocessed = (output?.UnprocessedItems ?? {}) as Record<string, Req[]>;
    for (const [name, reqs] of Object.entries(requested)) {
      const table = this.short(name);
      const left = new Set((unprocessed[name] ?? []).map((r) => JSON.stringify(r)));
      for (const r of reqs) {
        if (left.has(JSON.stringify(r))) continue;
        const label = `${table}.BatchWriteItem`;
        if (r.PutRequest) this.write(label, table, undefined, r.PutRequest.Item, false);
        else if (r.DeleteRequest) this.write(label, table, r.DeleteRequest.Key, undefined, false);
      }
    }
  }

  private write(
    label: string,
    table: string,
    key: Item | undefined,
    after: Item | undefined,
    failed: boolean,
  ): void {
    const id = keyId(table, key ?? pickKey(table, after));
    const before = this.items.get(id);
    const size = Math.max(itemSize(before), failed ? 0 : itemSize(after));
    this.add('items', label, 1);
    this.add('write', label, writeUnits(size));
    if (failed) {
      this.tally.conditionalFailures++;
      return;
    }
    this.tally.maxItemBytes = Math.max(this.tally.maxItemBytes, itemSize(after));
    if (after) this.items.set(id, after);
    else this.items.delete(id);
  }

  /** The item after a `SET a = :v, … REMOVE b, …` update (the forms Trawl's adapters write). */
  private applyUpdate(table: string, input: Record<string, unknown>): Item {
    const id = keyId(table, input.Key as Item);
    const item: Item = { ...(this.items.get(id) ?? (input.Key as Item)) };
    const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
    const values = (input.ExpressionAttributeValues ?? {}) as Record<string, Attr>;
    const expr = String(input.UpdateExpression ?? '');
    const set = /SET\s+(.*?)(?=\s+REMOVE\s|$)/s.exec(expr)?.[1] ?? '';
    for (const part of set.split(',')) {
      const [lhs, rhs] = part.split('=').map((s) => s.trim());
      if (!lhs || !rhs) continue;
      item[names[lhs] ?? lhs] = values[rhs] ?? 'x'.repeat(8);
    }
    const remove = /REMOVE\s+(.*?)(?=\s+SET\s|$)/s.exec(expr)?.[1] ?? '';
    for (const n of remove
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean))
      delete item[names[n] ?? n];
    return item;
  }
}

/** One id per item whichever form its key came in. */
function keyId(table: string, key: Item): string {
  const parts = Object.entries(key).map(
    ([k, v]) => `${k}=${isAttributeValue(v) ? String(Object.values(v)[0]) : String(v)}`,
  );
  return `${table}|${parts.sort().join('|')}`;
}

function pickKey(table: string, item: Item | undefined): Item {
  const k = table === 'urls' ? TABLES.urls.partitionKey : TABLES.hosts.partitionKey;
  return item?.[k] ? { [k]: item[k] } : {};
}

/** The kind of a hosts-table key (`slot#h` → "#slot"), so its units are told apart; "" for others. */
function keyKind(key: Item | undefined): string {
  const v = key?.host;
  const s = typeof v === 'string' ? v : isAttributeValue(v) ? String(Object.values(v)[0]) : '';
  const kind = /^([a-z-]+)#/.exec(s)?.[1];
  return kind ? `#${kind}` : '';
}
