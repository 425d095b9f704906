/**
 * Reindex without resurrection: the documents go into a fresh physical index, the old index's
 * tombstones (deleted URLs with the version of their deletion) are copied across first, and the
 * name the sink writes to is then switched to the fresh index in one atomic alias change. A
 * dropped tombstone would let a late, redelivered upsert of a deleted page back in.
 */
import type { Client } from '@opensearch-project/opensearch';
import { ensureIndex, type SinkDelete, writeBulk } from './opensearch-sink.ts';

/** Tombstones per scroll page (and per bulk): memory holds one page. */
const PAGE = 500;

/** The physical indices behind a name: its alias targets, itself when concrete, else none. */
export async function physicalIndices(client: Client, name: string): Promise<string[]> {
  if ((await client.indices.existsAlias({ name })).body) {
    const res = await client.indices.getAlias({ name });
    return Object.keys(res.body);
  }
  return (await client.indices.exists({ index: name })).body ? [name] : [];
}

/** A fresh physical index for `name`, with the current mapping. */
export async function freshIndex(client: Client, name: string, now: number): Promise<string> {
  const fresh = `${name}-r${now}`;
  await ensureIndex(client, fresh, true);
  return fresh;
}

interface TombstoneHit {
  _version: number;
  _source: { url: string; deleteReason?: string };
}

/** Copies every tombstone of `from` into `to` with its own version; returns how many. */
export async function copyTombstones(client: Client, from: string[], to: string): Promise<number> {
  let copied = 0;
  for (const index of from) {
    let res = await client.search({
      index,
      scroll: '1m',
      body: { size: PAGE, version: true, query: { term: { deleted: true } } },
    });
    while (res.body.hits.hits.length > 0) {
      const deletes: SinkDelete[] = (res.body.hits.hits as unknown as TombstoneHit[]).map((h) => ({
        url: h._source.url,
        version: h._version,
        reason: h._source.deleteReason ?? 'deleted',
      }));
      const r = await writeBulk(client, to, [], deletes);
      copied += r.written + r.stale;
      res = await client.scroll({ scroll_id: res.body._scroll_id as string, scroll: '1m' });
    }
    if (res.body._scroll_id) await client.clearScroll({ scroll_id: res.body._scroll_id as string });
  }
  return copied;
}

/** Points `name` at `fresh` in one alias change, removing the old indices (concrete or aliased). */
export async function swapIn(client: Client, name: string, fresh: string, olds: string[]): Promise<void> {
  const actions: Record<string, unknown>[] = olds.map((index) => ({ remove_index: { index } }));
  actions.push({ add: { index: fresh, alias: name } });
  await client.indices.updateAliases({ body: { actions } });
}
