/**
 * What the page processor's parts share: the result and context types and the small helpers that
 * build outcomes, tasks, notes and the summary's counters.
 */
import type { CrawlConfig } from '../../config.ts';
import type { ChangeHint, FetchedPage, PageOutcome, UrlTask } from '../../types.ts';
import type { PdfReader } from '../extract/pdf-text.ts';
import type { UrlDecider } from '../rules/decide.ts';

export interface PageResult {
  outcomes: PageOutcome[];
  tasks: UrlTask[];
  /** links rejected by scope or rules, counted by reason for the crawl summary */
  rejected: Record<string, number>;
  /** entries a sitemap or feed says changed since it was last read (page-sitemap.ts) */
  changed?: ChangeHint[];
}

export interface PageContext {
  config: CrawlConfig;
  decider: UrlDecider;
  now: string;
  /**
   * Reads PDF text within the limits; the extract stage passes one backed by a worker thread
   * (shared/stages/pdf-worker.ts). Without it PDFs are read in this thread, cut between pages only.
   */
  readPdf?: PdfReader;
}

export function base(
  page: FetchedPage,
  state: PageOutcome['state'],
  extra: Partial<PageOutcome> = {},
): PageOutcome {
  return {
    url: page.url,
    task: page.task,
    state,
    httpStatus: page.status,
    fetchedAt: page.fetchedAt,
    etag: page.headers.etag,
    lastModified: page.headers['last-modified'],
    ...extra,
  };
}

export function count(map: Record<string, number>, reason: string, n = 1): void {
  const key = reason.replace(/^rule \d+: /, 'rule: ');
  map[key] = (map[key] ?? 0) + n;
}

export function taskFrom(d: ReturnType<UrlDecider['decide']>, depth: number): UrlTask {
  return {
    url: d.normalized as string,
    depth,
    queue: d.queue,
    index: d.index,
    follow: d.follow,
    priority: d.priorityShift,
    ...(d.source ? { source: d.source } : {}),
    ...(d.addMeta.length ? { addMeta: d.addMeta } : {}),
  };
}

export function joinNotes(...notes: (string | undefined)[]): string | undefined {
  const kept = notes.filter((n) => n !== undefined && n !== '');
  return kept.length ? kept.join('; ') : undefined;
}
