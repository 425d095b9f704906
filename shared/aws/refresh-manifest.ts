/**
 * The refresh schedule and the URL states that are not in the table, without a GSI: the index
 * stage appends each fetched URL's whole state to a gzip JSON-lines manifest under
 * `refresh/<due day>/` (one PUT per batch and due day; `refresh/never/` for compound elements,
 * which are refreshed through their archive), and the refresh stage reads the manifests of the
 * days since its last cycle. Which line is current is decided by shared/crawl/state/url-state.ts:
 * for a URL kept in the table a line is only a hint (its time must still equal the item's).
 * A GSI key or a second item write would cost a DynamoDB write unit per page ($0.625 per
 * million); a manifest line costs a share of one S3 PUT.
 */
import { randomUUID } from 'node:crypto';
import { refreshBucket } from '../crawl/state/scheduling.ts';
import { keepNewest, resolveState } from '../crawl/state/url-state.ts';
import { addToGroup } from '../groups.ts';
import { KEYS, PREFIXES } from '../layout.ts';
import type { UrlItem } from '../types.ts';
import type { PageStore } from './page-store.ts';

/** The most lines one manifest object holds. */
export const MANIFEST_LINES = 10_000;

/** The bucket of states with no refresh time of their own. */
const NEVER = 'never';

/** A manifest key's time part (keys sort by the time their index batch wrote them). */
export function manifestStamp(iso: string): string {
  return iso.replace(/[:.]/g, '-');
}

/** Appends the states, one manifest object per due day; `at` orders lines of one fetch. */
export async function writeStateLines(store: PageStore, states: UrlItem[], nowIso: string): Promise<void> {
  const byDay = new Map<string, UrlItem[]>();
  for (const s of states) {
    const day = s.nextRefreshAt ? refreshBucket(s.nextRefreshAt) : NEVER;
    addToGroup(byDay, day, { ...s, at: nowIso });
  }
  const stamp = manifestStamp(nowIso);
  // A cycle's lines in objects of at most MANIFEST_LINES: every reader holds one object whole
  // (one of 41,563 lines was 36 MB of JSON).
  for (const [day, list] of byDay) {
    for (let i = 0; i < list.length; i += MANIFEST_LINES)
      await store.putLines(KEYS.refreshLines(day, stamp, randomUUID()), list.slice(i, i + MANIFEST_LINES));
  }
}

/** The newest line per URL under `prefix`, of the lines `keep` accepts. */
async function newestUnder(
  store: PageStore,
  prefix: string,
  keep: (line: UrlItem) => boolean = () => true,
): Promise<Map<string, UrlItem>> {
  const newest = new Map<string, UrlItem>();
  for await (const line of linesUnder(store, prefix)) if (keep(line)) keepNewest(newest, line);
  return newest;
}

/** Every state line under `prefix` (all the manifests by default), object by object. */
export async function* linesUnder(
  store: Pick<PageStore, 'list' | 'getLines'>,
  prefix: string = PREFIXES.refresh,
): AsyncGenerator<UrlItem> {
  for await (const key of store.list(prefix)) yield* await store.getLines<UrlItem>(key);
}

/** The lines of `day` due in [from, until], the newest per URL. */
export async function dueLines(
  store: PageStore,
  day: string,
  from: string,
  until: string,
): Promise<UrlItem[]> {
  // (from, until]: the last cycle's window ended at `from` inclusive. A line due exactly then was
  // that cycle's, and read again here it was refreshed twice (a page a changed rule made noIndex
  // kept its document-less line at the cycle's own time, and the next cycle fetched it again).
  const due = (l: UrlItem) => Boolean(l.nextRefreshAt && l.nextRefreshAt > from && l.nextRefreshAt <= until);
  // A marker (a line moved to an earlier time, refresh-review.ts) copies the line it supersedes
  // with a later write time: the newest line, it keeps the old time from refreshing the page.
  return [...(await newestUnder(store, KEYS.refreshDay(day), due)).values()].filter((l) => !l.moved);
}

/**
 * The current state of each table item (`resolveState` with the URL's newest line across all
 * manifests), forgotten URLs left out: for the CLI's listings and a snapshot restore. Reads every
 * manifest — a listing, not something the pipeline does.
 */
export async function currentStates(
  store: PageStore,
  items: Iterable<UrlItem> | AsyncIterable<UrlItem>,
): Promise<UrlItem[]> {
  const out: UrlItem[] = [];
  for await (const state of eachCurrentState(store, items)) out.push(state);
  return out;
}

/** `currentStates` one at a time, in table order: only the newest line per URL is held. */
export async function* eachCurrentState(
  store: PageStore,
  items: Iterable<UrlItem> | AsyncIterable<UrlItem>,
): AsyncGenerator<UrlItem> {
  const lines = await newestUnder(store, PREFIXES.refresh);
  for await (const item of items) {
    const state = resolveState(item, lines.get(item.url));
    if (state) yield state;
  }
}

/**
 * The newest line of each of `urls` among the manifests of `days` written after `sinceIso`: what
 * an earlier delivery of the same page recorded. Only redelivered outcomes ask (a crash, a lost
 * delete), so the cost is the manifests written since, not a scan of the day.
 */
export async function recentLines(
  store: PageStore,
  urls: Set<string>,
  days: string[],
  sinceIso: string,
): Promise<Map<string, UrlItem>> {
  const newest = new Map<string, UrlItem>();
  for (const day of new Set(days)) {
    const prefix = KEYS.refreshDay(day);
    for await (const key of store.list(prefix, `${prefix}${manifestStamp(sinceIso)}`)) {
      for (const line of await store.getLines<UrlItem>(key)) if (urls.has(line.url)) keepNewest(newest, line);
    }
  }
  return newest;
}
