/**
 * The elements of a compound file (seed 003: `<archive url>/<path>`) have no fetch and no refresh
 * time of their own: they live as long as their archive gives them. Each time an archive is read
 * the index stage keeps the list of element URLs it gave (`compound/<digest of its URL>.json`,
 * one GET and one PUT per archive read); an element missing from the new list, or every element
 * of an archive that is gone (a permanent error, forgotten, no longer an archive), is retired: its
 * document deleted through the change feed and its state forgotten, as a refreshed page that
 * answers 404 is. Before this, such elements stayed indexed for good.
 */
import { createHash } from 'node:crypto';
import type { OutcomePlan, PlanContext } from '../crawl/state/index-plan.ts';
import { planOutcome } from '../crawl/state/index-plan.ts';
import { KEYS } from '../layout.ts';
import type { PageOutcome, UrlItem } from '../types.ts';
import type { StageDeps } from './deps.ts';

/** The note an archive's state carries (page-outcome.ts): how a later outcome knows it was one. */
const ARCHIVE_NOTE = /^archive with \d+ element/;

const listKey = (archiveUrl: string) =>
  KEYS.compoundElements(createHash('sha256').update(archiveUrl).digest('hex').slice(0, 40));

/** Whether a URL's state says it was an archive when last read. */
export function wasArchive(state: Pick<UrlItem, 'note'> | undefined): boolean {
  return ARCHIVE_NOTE.test(state?.note ?? '');
}

/** Whether a URL's last read made documents: its own, or an archive's elements. */
export function madeDocuments(state: Pick<UrlItem, 'note' | 'docBulk'>): boolean {
  return Boolean(state.docBulk) || wasArchive(state);
}

/** The element URLs an archive gave when last read (none recorded: none). */
export async function elementList(deps: StageDeps, archiveUrl: string): Promise<string[]> {
  return (await deps.store.getJson<string[]>(listKey(archiveUrl))) ?? [];
}

/** Records the elements an archive gives now (an empty list once it is gone). */
export async function putElementList(deps: StageDeps, archiveUrl: string, urls: string[]): Promise<void> {
  await deps.store.putJson(listKey(archiveUrl), urls);
}

/** An archive's list to write once the batch's states are: written before, a retried batch would retire nothing. */
export interface ListWrite {
  archive: string;
  urls: string[];
}

/**
 * The retirements an index batch makes: for each archive outcome, the elements it no longer gives
 * (all of them when the archive is gone). Returns their plans (a permanent error found on a
 * refresh: document deleted, state forgotten) and the lists to write after the states. A 304 or
 * a temporary error keeps the elements (nothing was read, the archive keeps its documents).
 */
export async function retireElements(
  deps: StageDeps,
  plans: OutcomePlan[],
  ctx: PlanContext,
): Promise<{ plans: OutcomePlan[]; lists: ListWrite[] }> {
  const lists: ListWrite[] = [];
  const retired: { url: string; from: PageOutcome; code: string }[] = [];
  for (const plan of plans) {
    const o = plan.outcome;
    if (o.element) continue;
    const given = o.elements;
    const before = ctx.existing.get(o.url) ?? o.task.prev;
    if (!given && !wasArchive(before)) continue;
    const gone =
      plan.forget ||
      (o.state === 'error' && o.error?.kind === 'permanent') ||
      (!given && !o.notModified && o.state !== 'error');
    if (!given && !gone) continue;
    const now = new Set(gone ? [] : given);
    const removed = (await elementList(deps, o.url)).filter((u) => !now.has(u));
    const code = gone ? 'archive-gone' : 'removed-from-archive';
    for (const url of removed) retired.push({ url, from: o, code });
    lists.push({ archive: o.url, urls: [...now] });
  }
  if (retired.length === 0) return { plans: [], lists };
  // Elements are kept in the table (url-state.ts): one BatchGetItem for their states.
  const items = await deps.urls.getMany(retired.map((r) => r.url));
  const out: OutcomePlan[] = [];
  for (const { url, from, code } of retired) {
    const item = items.get(url);
    if (!item) continue; // retired already (a retried batch)
    ctx.existing.set(url, { ...item, stored: 'table' });
    const outcome: PageOutcome = {
      url,
      state: 'error',
      httpStatus: 0,
      fetchedAt: from.fetchedAt,
      element: true,
      error: { kind: 'permanent', code, message: `no longer given by ${from.url}` },
      // As a refresh that found the page gone: the document is deleted and the URL forgotten.
      task: {
        url,
        depth: item.depth ?? from.task.depth,
        queue: 'refresh',
        index: true,
        follow: false,
        priority: 0,
      },
    };
    out.push(planOutcome(outcome, ctx));
  }
  return { plans: out, lists };
}

/**
 * The known elements of an archive the refresh cycle deletes without a fetch (out of scope now,
 * an orphan): they go with it. Their states, for the cycle's deletions.
 */
export async function elementsOfGone(deps: StageDeps, archive: UrlItem): Promise<UrlItem[]> {
  if (!wasArchive(archive)) return [];
  const urls = await elementList(deps, archive.url);
  if (urls.length === 0) return [];
  return [...(await deps.urls.getMany(urls)).values()];
}
