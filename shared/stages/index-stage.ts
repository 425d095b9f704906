/**
 * The index stage: delta check against the stored hash, documents written in bulks (SMILA:
 * ≤ 100 records a bulk; here one bulk object per batch), each URL's state updated, and every
 * upsert and deletion appended to the change feed a search index consumes.
 */
import { randomUUID } from 'node:crypto';
import type { UrlItem } from '../aws/url-table.ts';
import { parseDuration } from '../config.ts';
import { mapLimit } from '../crawl/concurrency.ts';
import { nextRefreshAt } from '../crawl/scheduling.ts';
import type { IndexMessage, PageOutcome } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { BatchResult, StageRecord } from './extract-stage.ts';
import { planOutcome, type OutcomePlan } from './index-plan.ts';

const UPDATE_CONCURRENCY = 16;

export interface ChangeRecord {
  type: 'upsert' | 'delete';
  url: string;
  at: string;
  reason?: string;
  bulk?: string;
  line?: number;
}

/** Processes a batch of index messages. */
export async function runIndexStage(deps: StageDeps, records: StageRecord<IndexMessage>[]): Promise<BatchResult> {
  const config = await deps.loadConfig();
  const result: BatchResult = { failedMessageIds: [], stats: {} };
  const perRecord: { record: StageRecord<IndexMessage>; outcomes: PageOutcome[] }[] = [];
  for (const record of records) {
    try {
      perRecord.push({ record, outcomes: await loadOutcomes(deps, record) });
    } catch (err) {
      deps.log.error('index record unreadable', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  const all = perRecord.flatMap((r) => r.outcomes);
  const existing = await deps.urls.getMany(all.map((o) => o.url));
  const now = deps.now();
  const ctx = { config, existing, now, maxAgeMs: parseDuration(config.refresh.maxAge) };
  const plans = all.map((o) => planOutcome(o, ctx));
  const bulk = `docs/bulks/${new Date(now).toISOString().slice(0, 10)}/${randomUUID()}.jsonl.gz`;
  const docs = plans.filter((p) => p.writeDoc).map((p) => p.outcome.doc);
  if (docs.length > 0) await deps.store.putLines(bulk, docs);
  const changes: ChangeRecord[] = [];
  let line = 0;
  let i = 0;
  for (const { record, outcomes } of perRecord) {
    try {
      const mine = outcomes.map(() => {
        const plan = plans[i++] as OutcomePlan;
        return { plan, pointer: plan.writeDoc ? { bulk, line: line++ } : null };
      });
      // URL items are independent: update them concurrently (DynamoDB bills per item, not per call).
      await mapLimit(mine, UPDATE_CONCURRENCY, ({ plan, pointer }) => applyPlan(deps, plan, pointer, changes, result.stats));
    } catch (err) {
      deps.log.error('index record failed', { messageId: record.messageId, error: err as Error });
      result.failedMessageIds.push(record.messageId);
    }
  }
  if (changes.length > 0) {
    await deps.store.putLines(`changes/${new Date(now).toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.jsonl.gz`, changes);
  }
  return result;
}

async function loadOutcomes(deps: StageDeps, record: StageRecord<IndexMessage>): Promise<PageOutcome[]> {
  const body = record.body;
  if (!body) return [];
  if (body.spill) return deps.store.getLines<PageOutcome>(body.spill);
  return Array.isArray(body.outcomes) ? body.outcomes : [];
}

async function applyPlan(
  deps: StageDeps,
  plan: OutcomePlan,
  pointer: { bulk: string; line: number } | null,
  changes: ChangeRecord[],
  stats: Record<string, number>,
): Promise<void> {
  const { outcome } = plan;
  const at = new Date(deps.now()).toISOString();
  stats[plan.stat] = (stats[plan.stat] ?? 0) + 1;
  if (plan.forget) {
    await deps.urls.forget(outcome.url);
  } else {
    const set: Partial<UrlItem> = { ...plan.set, ...(pointer ? { docBulk: pointer.bulk, docLine: pointer.line } : {}) };
    const applied = await deps.urls.update(outcome.url, set, {
      ifFetchedNotAfter: outcome.fetchedAt,
      remove: plan.remove,
    });
    // An older delivery lost to a newer one: its document and deletion are stale, record nothing.
    if (!applied) return;
  }
  if (plan.deleteReason) changes.push({ type: 'delete', url: outcome.url, at, reason: plan.deleteReason });
  if (pointer) changes.push({ type: 'upsert', url: outcome.url, at, bulk: pointer.bulk, line: pointer.line });
}

export { nextRefreshAt };
