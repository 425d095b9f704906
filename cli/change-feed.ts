/**
 * Reads a crawl's change feed: the gzip JSON-lines objects the index and refresh stages write
 * under `changes/` (one object per batch), in the order a search index would apply them.
 */

import { PREFIXES } from '../shared/layout.ts';
import { ChangeFold, type ChangeRecord } from '../shared/stages/change-feed.ts';
import type { CrawlSession } from './session.ts';

export type { ChangeRecord };

export interface ReadChangesOptions {
  /** only records at or after this ISO time */
  since?: string;
  /** every record as written, the copies a failure left too (tests, debugging) */
  copies?: boolean;
}

/**
 * Every change, oldest first (by `at`, then by object key, then by line), each once: the copies a
 * failure left are folded (`ChangeFold`).
 */
export async function readChanges(
  session: Pick<CrawlSession, 'store'>,
  opts: ReadChangesOptions = {},
): Promise<ChangeRecord[]> {
  const keys: string[] = [];
  for await (const key of session.store.list(PREFIXES.changes)) keys.push(key);
  // Keys start with the batch time, so key order is time order across objects.
  keys.sort();
  const all: ChangeRecord[] = [];
  for (const key of keys) all.push(...(await session.store.getLines<ChangeRecord>(key)));
  // A stable sort: records of one batch keep their line order.
  all.sort((a, b) => a.at.localeCompare(b.at));
  const fold = new ChangeFold();
  return all.filter(
    (record) => (opts.copies || fold.keep(record)) && (!opts.since || record.at >= opts.since),
  );
}

/**
 * Every change one object at a time, in key order (the batch's newest fetch time), copies folded
 * (`ChangeFold`): `trawl report`'s aggregates, without holding the records.
 */
export async function* eachChange(session: Pick<CrawlSession, 'store'>): AsyncGenerator<ChangeRecord> {
  const fold = new ChangeFold();
  for await (const key of session.store.list(PREFIXES.changes)) {
    for (const record of await session.store.getLines<ChangeRecord>(key)) if (fold.keep(record)) yield record;
  }
}
