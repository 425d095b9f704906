/**
 * The crawl bucket's key layout, in one place: every object key the stages and the CLI write is
 * made here, and the stack (infra/) scopes its grants and lifecycle rules by these prefixes.
 */

/** Object prefixes in the crawl bucket; grants and lifecycle rules are scoped to them. */
export const PREFIXES = {
  config: 'config/',
  pages: 'pages/',
  docs: 'docs/',
  changes: 'changes/',
  refresh: 'refresh/',
  compound: 'compound/',
  hints: 'hints/',
} as const;
export type BucketPrefix = (typeof PREFIXES)[keyof typeof PREFIXES];

/** The crawl's config: written by `trawl crawl` / `trawl deploy`, read by every function. */
export const CONFIG_KEY = `${PREFIXES.config}crawl.json`;

/** The UTC day of an epoch-ms time or ISO string: objects are grouped by the day they were written. */
function day(at: number | string): string {
  return (typeof at === 'number' ? new Date(at).toISOString() : at).slice(0, 10);
}

/** Keys of the objects a crawl writes; `id` makes a key unique (a UUID, or a digest of the content). */
export const KEYS = {
  /** fetched pages too large to travel inline in an extract message (gzip JSON lines) */
  pageBundle: (at: number, id: string) => `${PREFIXES.pages}${day(at)}/${id}.jsonl.gz`,
  /** one page's body as it was read (decoded), when it was too large to travel in a bundle's line */
  pageBody: (at: number, id: string) => `${PREFIXES.pages}${day(at)}/bodies/${id}`,
  /** documents, addressed by (bulk, line) pointers in URL states */
  docBulk: (at: number, id: string) => `${PREFIXES.docs}bulks/${day(at)}/${id}.jsonl.gz`,
  /** index-stage outcomes too large for one SQS message */
  outcomeSpill: (at: number, id: string) => `${PREFIXES.docs}spill/${day(at)}/${id}.jsonl.gz`,
  /** one batch's change records; `stamp` orders them (manifestStamp) */
  changes: (stamp: string, id: string) => `${PREFIXES.changes}${stamp}-${id}.jsonl.gz`,
  /** the state lines of URLs due on `dueDay` (or `never`) */
  refreshDay: (dueDay: string) => `${PREFIXES.refresh}${dueDay}/`,
  refreshLines: (dueDay: string, stamp: string, id: string) =>
    `${PREFIXES.refresh}${dueDay}/${stamp}-${id}.jsonl.gz`,
  /** known pages a sitemap or feed listed as changed since its last read (`stamp`: manifestStamp) */
  changeHints: (stamp: string, id: string) => `${PREFIXES.hints}${stamp}-${id}.jsonl.gz`,
  /** the element URLs an archive gave when it was last read (`id`: a digest of its URL) */
  compoundElements: (id: string) => `${PREFIXES.compound}${id}.json`,
};
