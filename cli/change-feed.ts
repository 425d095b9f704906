/**
 * Reads a crawl's change feed: the gzip JSON-lines objects the index and refresh stages write
 * under `changes/` (one object per batch), in the order a search index would apply them.
 */

import { PREFIXES } from '../shared/layout.ts';
import type { ChangeRecord } from '../shared/stages/change-feed.ts';
import type { CrawlSession } from './session.ts';

export type { ChangeRecord };

export interface ReadChangesOptions {
  /** only records at or after this ISO time */
  since?: string;
}

/** Every change record, oldest first (by `at`, then by object key, then by line). */
export async function readChanges(
  session: Pick<CrawlSession, 'store'>,
  opts: ReadChangesOptions = {},
): Promise<ChangeRecord[]> {
  const keys: string[] = [];
  for await (const key of session.store.list(PREFIXES.changes)) keys.push(key);
  // Keys start with the batch time, so key order is time order across objects.
  keys.sort();
  const out: ChangeRecord[] = [];
  for (const key of keys) {
    for (const record of await session.store.getLines<ChangeRecord>(key)) {
      if (!opts.since || record.at >= opts.since) out.push(record);
    }
  }
  // A stable sort: records of one batch keep their line order.
  return out.sort((a, b) => a.at.localeCompare(b.at));
}

/** Every change record one object at a time (unsorted across objects): `trawl report`'s aggregates. */
export async function* eachChange(session: Pick<CrawlSession, 'store'>): AsyncGenerator<ChangeRecord> {
  for await (const key of session.store.list(PREFIXES.changes)) {
    for (const record of await session.store.getLines<ChangeRecord>(key)) yield record;
  }
}
