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
  /**
   * Of those, the ones a URL state records too (an out-of-scope page's own, a redirect's source
   * naming its rejected target): the report counts them from that state, not twice
   */
  recorded?: Record<string, number>;
  /**
   * A few of those links by reason (`URL (on PAGE)`, EXAMPLES_PER_REASON of each): a rejected link
   * is recorded nowhere else, and a count alone cannot answer "why was this page not crawled?".
   */
  examples?: Record<string, string[]>;
  /** entries a sitemap or feed says changed since it was last read (page-sitemap.ts) */
  changed?: ChangeHint[];
  /**
   * Known URLs to fetch again, sent without a claim: a page that deferred to its canonical, which
   * ended as no document (`UrlTask.ignoreCanonical`)
   */
  again?: UrlTask[];
  /** the canonical the page names and does not defer to, as it ended as no document (canonicalFallback) */
  canonicalDeclined?: string;
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
  map[reasonKey(reason)] = (map[reasonKey(reason)] ?? 0) + n;
}

/** Counts a rejection that a URL state records too (`PageResult.recorded`). */
export function countRecorded(result: PageResult, reason: string): void {
  result.recorded = result.recorded ?? {};
  count(result.recorded, reason);
}

/** A rejection reason as counted: `rule 3: ignore` counts as `rule: ignore`. */
function reasonKey(reason: string): string {
  return reason.replace(/^rule \d+: /, 'rule: ');
}

/** Examples kept of each rejection reason, per page and per batch. */
export const EXAMPLES_PER_REASON = 3;
const EXAMPLE_CHARS = 400;

/** Counts a rejected link and keeps it as an example of its reason: `URL (where, where from)`. */
export function reject(result: PageResult, reason: string, url: string, where: string): void {
  count(result.rejected, reason);
  keepExample(result, reason, url, where);
}

/** Keeps a rejected link as an example of its reason (its count made elsewhere): `URL (where)`. */
export function keepExample(result: PageResult, reason: string, url: string, where: string): void {
  result.examples = addExample(result.examples ?? {}, reasonKey(reason), `${url} (${where})`);
}

/** Adds every example of `from` to `into`, as addExample keeps them (a batch's pages, a run's batches). */
export function mergeExamples(
  into: Record<string, string[]>,
  from: Record<string, string[]> | undefined,
): void {
  for (const [reason, list] of Object.entries(from ?? {}))
    for (const example of list) addExample(into, reason, example);
}

/** Adds an example of a reason unless it has its EXAMPLES_PER_REASON (or one of this URL); returns `examples`. */
function addExample(
  examples: Record<string, string[]>,
  reason: string,
  example: string,
): Record<string, string[]> {
  const list = examples[reason] ?? [];
  examples[reason] = list;
  // A trap's URLs run to kilobytes: an example is a pointer, not the URL in full.
  const cut = example.length > EXAMPLE_CHARS ? `${example.slice(0, EXAMPLE_CHARS)}…` : example;
  // One URL linked from many pages is one example (its first sighting).
  const url = (e: string) => e.slice(0, e.indexOf(' (') >>> 0);
  if (list.length < EXAMPLES_PER_REASON && !list.some((e) => url(e) === url(cut))) list.push(cut);
  return examples;
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

/**
 * extract.honorCanonical as the crawl applies it: with discovery on (else nothing else would be
 * fetched). The page processor and the refresh review (a page that deferred is due once it no
 * longer holds) ask the same question.
 */
export function honorsCanonical(config: CrawlConfig): boolean {
  return config.extract.honorCanonical && config.discovery;
}

/** How the note of a page that deferred to its canonical begins (`canonical is URL (…)`). */
export const CANONICAL_NOTE = 'canonical is ';

export function joinNotes(...notes: (string | undefined)[]): string | undefined {
  const kept = notes.filter((n) => n !== undefined && n !== '');
  return kept.length ? kept.join('; ') : undefined;
}
