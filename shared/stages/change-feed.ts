/**
 * The change feed's record and its EventBridge events: what the index and refresh stages emit
 * for every upsert and deletion (docs/documents.md), and what a search index subscribes to.
 */
import { createHash } from 'node:crypto';
import { PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { chunkBySize } from '../aws/work-queues.ts';
import type { ChangeRecord } from '../types.ts';
import type { StageDeps } from './deps.ts';

export type { ChangeRecord } from '../types.ts';

/** detail-type of the change events a search index subscribes to (an EventBridge rule on it). */
export const CHANGE_DETAIL_TYPE = 'Trawl Document Changes';
/** EventBridge PutEvents: at most 10 entries a call, 256 KB an entry (AWS limits); room left for the envelope. */
const EVENTS_PER_CALL = 10;
const EVENT_DETAIL_BYTES = 240 * 1024;

/**
 * Folds the copies a failure can leave in the feed (docs/documents.md "Change feed"), fed the
 * records in feed order: a record with the identity of one seen (type, URL, version, reason: the
 * same outcome written twice), and an upsert with the content hash the URL's last upsert had (the
 * same page fetched twice, both copies indexed before either state was written). Holds 16-byte
 * digests, not records.
 */
export class ChangeFold {
  private readonly seen = new Set<string>();
  private readonly content = new Map<string, string>();

  /** Whether the record is a change (true) or a copy of one kept before (false). */
  keep(c: ChangeRecord): boolean {
    const id = digest([c.type, c.url, c.version ?? c.at, c.reason ?? '']);
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    const url = digest([c.url]);
    if (c.type === 'delete') {
      this.content.delete(url);
      return true;
    }
    if (c.hash === undefined) return true;
    if (this.content.get(url) === c.hash) return false;
    this.content.set(url, c.hash);
    return true;
  }
}

const digest = (parts: unknown[]) => createHash('md5').update(JSON.stringify(parts)).digest('base64');

/** The change events of one batch: normally one, more only when the changes exceed an entry's size. */
export function changeEvents(crawl: string, bus: string, changes: ChangeRecord[]): PutEventsRequestEntry[] {
  return chunkBySize(changes, Number.POSITIVE_INFINITY, EVENT_DETAIL_BYTES).map((chunk) => ({
    EventBusName: bus,
    Source: 'trawl',
    DetailType: CHANGE_DETAIL_TYPE,
    Detail: JSON.stringify({ crawl, changes: chunk }),
  }));
}

/**
 * One EventBridge event per index batch when TRAWL_EVENT_BUS is set. The S3 change log under
 * changes/ is the durable feed: a failed publish is logged and counted, never fails the batch
 * (its documents are written; a retry would find them unchanged and publish nothing).
 */
export async function publishChanges(
  deps: StageDeps,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const bus = process.env.TRAWL_EVENT_BUS;
  if (!bus) return;
  const entries = changeEvents(deps.crawl, bus, changes);
  for (let i = 0; i < entries.length; i += EVENTS_PER_CALL) {
    let batch = entries.slice(i, i + EVENTS_PER_CALL);
    // Failed entries (throttling, internal errors) are retried once, as AWS advises for PutEvents.
    for (let attempt = 0; attempt < 2 && batch.length > 0; attempt++) {
      try {
        const res = await deps.clients.events.send(new PutEventsCommand({ Entries: batch }));
        batch = batch.filter((_, j) => res.Entries?.[j]?.ErrorCode);
      } catch (err) {
        deps.log.error('publishing change events failed', { bus, error: err as Error });
        break;
      }
    }
    if (batch.length > 0) stats['events:failed'] = (stats['events:failed'] ?? 0) + batch.length;
    stats['events:published'] =
      (stats['events:published'] ?? 0) + Math.min(EVENTS_PER_CALL, entries.length - i) - batch.length;
  }
}
