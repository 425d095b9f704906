/**
 * What a warm container knows of URLs (url-table.ts: a link seen is not read again for
 * KNOWN_TTL_MS) must not outlive their forgetting elsewhere: the refresh cycle and the index stage
 * forget URLs (a second permanent error, too many temporary ones, orphans, the scope), and until
 * 2026-11-29 a warm extract container kept treating them as known for up to 10 minutes, so a
 * deployed crawl did not find a forgotten broken link again where a local one did (helper-43's
 * audit). A stage that forgets says so with a new epoch on the hosts table (one write a batch or
 * cycle); the extract stage reads it once a batch (an eventually consistent read, ½ read unit) and
 * drops its cache when it moved.
 */
import { randomUUID } from 'node:crypto';
import type { StageDeps } from './deps.ts';

const KEY = 'forget-epoch';

/** Says URLs were forgotten just now (after their items are gone). */
export async function noteForgotten(deps: Pick<StageDeps, 'hosts' | 'log'>): Promise<void> {
  await deps.hosts
    .putValue(KEY, randomUUID())
    .catch((err) => deps.log.warn('saying URLs were forgotten failed', { err }));
}

/** Drops the URL table's cache of known URLs when another container forgot URLs since the last look. */
export async function syncForgotten(deps: Pick<StageDeps, 'hosts' | 'urls' | 'log'>): Promise<void> {
  try {
    deps.urls.syncForgets(await deps.hosts.getValue(KEY));
  } catch (err) {
    deps.log.warn('reading the forget epoch failed', { err });
  }
}
