/** Types that flow between the stages. Closed unions for states and error kinds. */

/** Seed 001's six URL sources, in weight order. */
export const SOURCES = ['user', 'redir', 'index', 'index_follow', 'follow', 'refresh'] as const;
export type SourceName = (typeof SOURCES)[number];

/** URL states (`trawl urls`, docs/documents.md). */
export const URL_STATES = ['pending', 'indexed', 'followed', 'ignored', 'error', 'duplicate'] as const;
export type UrlStateName = (typeof URL_STATES)[number];
export const ERROR_KINDS = ['permanent', 'temporary'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

export interface MetaValue {
  name: string;
  value: string;
}

/**
 * A URL's state: the item in the URL table, or a state line in S3 (shared/crawl/state/url-state.ts).
 * `stored` says which is the truth: `table` items are written by the index stage; `line` URLs
 * keep only their claim in the table and their state in the refresh manifests.
 */
export interface UrlItem {
  url: string;
  state: UrlStateName;
  depth: number;
  queue: SourceName;
  index?: boolean;
  follow?: boolean;
  priority?: number;
  source?: string | null;
  addMeta?: MetaValue[];
  claimedBy?: string;
  discoveredAt?: string;
  lastFetched?: string | null;
  httpStatus?: number | null;
  errorKind?: ErrorKind | null;
  errorCode?: string | null;
  temporaryErrors?: number;
  /** the fetch time of the first of the temporary failures in a row (cleared by a success) */
  failingSince?: string | null;
  etag?: string | null;
  lastModified?: string | null;
  hash?: string | null;
  docBulk?: string | null;
  docLine?: number | null;
  indexedAt?: string | null;
  nextRefreshAt?: string | null;
  /** adaptive refresh: the interval (ms) that gave `nextRefreshAt` */
  refreshInterval?: number | null;
  /** orphans: the last time a fetched page linked to the URL or a sitemap listed it (table item only) */
  reachedAt?: string;
  /** orphans: when the page's links were last read (a whole fetch, not a 304) */
  linksReadAt?: string;
  note?: string | null;
  kind?: 'page' | 'sitemap';
  /** digest of the normalized text of the URL's last indexed content (duplicate folding) */
  digest?: string | null;
  /** state `duplicate`: the URL whose document holds the same content */
  duplicateOf?: string | null;
  stored?: 'table' | 'line';
  /** when a state line was written (orders two lines of one fetch time) */
  at?: string;
  /** a marker line: the line it copies moved to an earlier due time then (refresh-review.ts) */
  moved?: string;
  /** a redirect target: the URLs that led to it (its refresh continues the chain, fetch.maxRedirects) */
  redirectChain?: string[];
  /**
   * the page, sitemap or redirecting URL whose fetch found this URL first (not for start URLs):
   * "why is this page in the index?", and where a broken link is
   */
  foundOn?: string;
  /**
   * extract.honorCanonical: the canonical the page names and is indexed in spite of, as that URL
   * ended as no document (an error, robots.txt, noindex, a redirect back): its refresh honors it
   * no more while the page names the same one
   */
  canonicalIgnored?: string | null;
}

/**
 * A known URL that a sitemap or feed lists as changed (its `<lastmod>`, a feed entry's date) after
 * the sitemap's previous read: the refresh cycle fetches it again unless it was fetched since.
 */
export interface ChangeHint {
  url: string;
  /** the entry's date, ISO */
  changedAt: string;
  /** the sitemap or feed that listed it */
  sitemap: string;
}

/** One URL to fetch: the unit of work carried (in bulks) by frontier messages. */
export interface UrlTask {
  /** normalized absolute URL */
  url: string;
  /** start URLs have depth 0 (SMILA `_crawlDepth`) */
  depth: number;
  /** the frontier source this task was put in */
  queue: SourceName;
  index: boolean;
  follow: boolean;
  /** rule priority shift, -2 (highest) .. 2 (lowest) */
  priority: number;
  /** rule action `source` */
  source?: string;
  /** rule action `addMeta` values */
  addMeta?: MetaValue[];
  /** URLs of the redirect chain that led here (loop detection, maxRedirects) */
  redirectChain?: string[];
  /** the page, sitemap or redirecting URL whose fetch found this URL (UrlItem.foundOn) */
  foundOn?: string;
  /**
   * The URL to request instead of `url`, which it normalizes to: the site redirected `url` to it
   * (`/app;jsessionid=…`, a session id in the path that the crawl's URLs drop). Set once.
   */
  fetchAs?: string;
  /** temporary-error retries so far */
  attempt?: number;
  /** a refresh: send If-Modified-Since / If-None-Match from the stored state */
  conditional?: { lastModified?: string; etag?: string };
  /** `sitemap`: a sitemap, sitemap index or RSS/Atom feed whose entries become tasks */
  kind?: 'page' | 'sitemap';
  /** true when the URL came from a sitemap or feed (discovery: false still fetches it) */
  fromSitemap?: boolean;
  /** a sitemap an index lists: the `<lastmod>` the index gives it, ISO (change-hints.ts) */
  lastmod?: string;
  /** the URL's state when it was queued again (refresh, seed): the index stage's delta check reads it */
  prev?: UrlItem;
  /** a message on the way here was delivered more than once: the index stage checks the URL's state */
  redelivered?: boolean;
  /**
   * a keeper of duplicate content whose document another URL took over (duplicates.ts): fetched
   * again to record what it is now; its delete is recorded already
   */
  demoted?: true;
  /**
   * extract.honorCanonical: the page that named this URL its canonical and was not indexed for
   * it. Should this URL end as no document (an error, robots.txt, noindex, a redirect back), that
   * page is fetched again with `ignoreCanonical` (page-outcome.ts canonicalFallback): its content is not lost.
   */
  canonicalOf?: string;
  /** the page's canonical ended as no document: the page is indexed under its own URL */
  ignoreCanonical?: true;
  /**
   * the scope version (crawl/rules/scope-version.ts) of the config the task was decided under: the
   * fetch stage decides a task again, before any request, only when it is not the current config's
   * (absent: an older task, or one the CLI queued from a stored state, is decided again)
   */
  decidedUnder?: string;
}

/** The document a search index receives (docs/documents.md). */
export interface CrawlDocument {
  url: string;
  title: string;
  content: string;
  contentType: string | null;
  mimeType: string | null;
  charset: string | null;
  lastModified: string | null;
  size: number;
  hash: string;
  depth: number;
  source: string | null;
  meta: Record<string, string | string[]>;
  indexedAt: string;
  /** the page's meta description (Open Graph, Twitter), null when it has none */
  description?: string | null;
  /** the declared language (BCP 47), null when none is declared */
  language?: string | null;
  canonical?: string | null;
  compoundPath?: string[];
}

/** A fetched response as stored in a page bundle (S3) for the extract stage. */
export interface FetchedPage {
  task: UrlTask;
  /** URL actually fetched (same as task.url; redirects become new tasks) */
  url: string;
  status: number;
  headers: Record<string, string>;
  fetchedAt: string;
  /** body bytes, base64; empty when not read (metadata-first skip, 304) or in `bodyKey` */
  body: string;
  /**
   * a body past the fetch stage's spool size: its own object in the crawl bucket (the bytes as
   * read and decoded), not base64 in `body`; the extract stage reads it from there
   */
  bodyKey?: string;
  /** the body's size in bytes, when it is in `bodyKey` */
  bodyBytes?: number;
  truncated: boolean;
  notModified: boolean;
  /** the fetch failed (seed 001 error class); status is the HTTP status or 0 */
  error?: { kind: ErrorKind; code: string; message: string };
  /** the page redirected here (the target went to the redir source when in scope) */
  redirectTo?: string;
  /** not fetched or not read: robots.txt, ignored mime type, redirect not followed… */
  skipped?: string;
  /** the robots.txt `Disallow` pattern that skipped it (`skipped: 'robots.txt'`) */
  robotsRule?: string;
  /**
   * not requested: the task was queued under another config, which the current one rejects (the
   * decider's reason, e.g. `excluded`); recorded `ignored`, `out-of-scope: <reason>`
   */
  outOfScope?: string;
  /** the host's soft-404 fingerprint (scope.traps.soft404): a page whose text has it is not found */
  soft404?: string;
  /** limits the fetch applied (a Crawl-delay over limits.crawlDelayMs): counted and noted with the page's outcome */
  capped?: { limit: string; note: string }[];
}

/** One entry of the change feed (S3 `changes/`), the search sink's input and the change event's. */
export interface ChangeRecord {
  type: 'upsert' | 'delete';
  url: string;
  at: string;
  reason?: string;
  /** where the document is: its bulk and line (upserts) */
  bulk?: string;
  line?: number;
  /** the document's delta hash (upserts): an upsert with the hash the URL's last upsert had changes nothing */
  hash?: string;
  /**
   * The fetch time (ms) of the outcome the change comes from: the version the search sink
   * indexes with. Type, URL and version identify a change: the copies a failure can leave in the
   * feed (a batch retried in another composition, a message delivered twice) share them.
   */
  version?: number;
}

/** A wake-up call (the wake queue): when the URLs a fetcher put back are due, and their sources. */
export interface WakeMessage {
  due: string;
  sources: SourceName[];
}

/** A frontier message: a bulk of URL tasks for one source. */
export interface FrontierMessage {
  tasks: UrlTask[];
  /** when the tasks were sent (the stages' clock): a redelivery skips URLs fetched since (fetch-redelivered.ts) */
  queuedAt?: string;
}

/**
 * An extract-queue message: the fetched pages themselves (gzip JSON lines, base64) when they are
 * small, else a pointer to a page bundle in S3. `id` names the inline pages as the key names a bundle.
 */
export type ExtractMessage =
  | { bundle: string; count: number }
  | { inline: string; id: string; count: number };

/** An index-queue message: outcomes, or a pointer to them in S3 when they are too large for SQS. */
export interface IndexMessage {
  outcomes?: PageOutcome[];
  spill?: string;
}

/** What the index stage records for one fetched URL. */
export interface PageOutcome {
  url: string;
  task: UrlTask;
  state: Exclude<UrlStateName, 'pending'>;
  error?: { kind: ErrorKind; code: string; message: string };
  httpStatus: number;
  fetchedAt: string;
  etag?: string;
  lastModified?: string;
  /** the document, inline (only between extraction and the bulk write) */
  doc?: CrawlDocument;
  /** the document in a bulk the extract stage wrote; `bulk` is absent when the delta check kept the old one */
  docRef?: { bulk?: string; line?: number; hash: string; indexedAt: string };
  /** why a page was not indexed (meta robots, mime type, ...) */
  note?: string;
  notModified?: boolean;
  /** an element of a compound file (archive): no task and no refresh time of its own */
  element?: boolean;
  /** an archive's outcome: the URLs of the elements it gave (compound-elements.ts retires the others) */
  elements?: string[];
  /** a message on the way here was delivered more than once (possibly a copy of one indexed before) */
  redelivered?: boolean;
  /** digest of the document's normalized text and its rel=canonical: duplicate folding (index stage) */
  dup?: { digest: string; canonical: string | null };
  /** extract.honorCanonical: the canonical the page names, which ended as no document (UrlItem.canonicalIgnored) */
  canonicalIgnored?: string;
}

/** One SQS record as a stage sees it (handler-kit.ts decodes the event). */
export interface StageRecord<T> {
  messageId: string;
  body: T | null;
  /** SQS ApproximateReceiveCount: above 1 the message may have been processed before */
  receiveCount?: number;
}

export interface BatchResult {
  failedMessageIds: string[];
  stats: Record<string, number>;
  /** a few rejected links by reason (page-kit.ts `reject`): logged with the batch, shown in the summary */
  examples?: Record<string, string[]>;
}
