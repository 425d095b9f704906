/**
 * Glue between the change feed and the search sink: the index and refresh stages hand it the
 * changes they wrote to the feed; with `index.sink: "opensearch"` it sends them as one bulk.
 * Upserts read their documents from the extract stage's bulks (one GET per bulk key).
 */
import type { PageStore } from '../aws/page-store.ts';
import type { CrawlConfig } from '../config.ts';
import type { ChangeRecord, CrawlDocument } from '../types.ts';
import {
  type BulkResult,
  ensureIndex,
  IndexMissing,
  indexName,
  type SinkDelete,
  type SinkUpsert,
  searchClient,
  searchEndpoint,
  writeBulk,
} from './opensearch-sink.ts';

/** The changes a batch sinks: the change feed's records. */
export type SinkChange = ChangeRecord;

/** Sends the batch's changes to the search engine; a no-op with the feed sink. */
export async function sinkChanges(
  store: PageStore,
  config: CrawlConfig,
  changes: SinkChange[],
): Promise<BulkResult | null> {
  if (config.index.sink !== 'opensearch' || changes.length === 0) return null;
  const endpoint = searchEndpoint(config);
  if (!endpoint)
    throw new Error(
      'index.sink is "opensearch" but no endpoint: set index.opensearch.endpoint or start the engine',
    );
  // Of several changes to one URL in a batch, the last one is its state.
  const last = new Map<string, SinkChange>();
  for (const c of changes) last.set(c.url, c);
  const bulks = new Map<string, Record<string, unknown>[]>();
  for (const c of last.values()) if (c.type === 'upsert' && c.bulk) bulks.set(c.bulk, []);
  for (const key of bulks.keys()) bulks.set(key, await store.getLines<Record<string, unknown>>(key));
  const upserts: SinkUpsert[] = [];
  const deletes: SinkDelete[] = [];
  for (const c of last.values()) {
    // The fetch time of the outcome that made the change, else its own time (a refresh cycle's deletions).
    const version = c.version ?? Date.parse(c.at);
    if (c.type === 'delete') {
      deletes.push({ url: c.url, version, reason: c.reason ?? 'deleted' });
      continue;
    }
    const raw = c.bulk ? bulks.get(c.bulk)?.[c.line ?? 0] : undefined;
    if (!raw) throw new Error(`document ${c.bulk}#${c.line} of ${c.url} not found`);
    // The bulks hold documents with their own field names (index.mapping renames only on output).
    upserts.push({ doc: { ...(raw as unknown as CrawlDocument), url: c.url }, version });
  }
  const client = searchClient(endpoint);
  const index = indexName(config);
  await ensureIndex(client, index);
  try {
    return await writeBulk(client, index, upserts, deletes, config.name);
  } catch (err) {
    if (!(err instanceof IndexMissing)) throw err;
    // Deleted since it was last seen: made again with its mapping, then the same bulk once more.
    await ensureIndex(client, index, true);
    return writeBulk(client, index, upserts, deletes, config.name);
  }
}
