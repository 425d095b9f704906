/**
 * Duplicate content (issue 17 item 2), pure: the digest of a document's normalized text, which of
 * two URLs of one content keeps the document (its rel=canonical, else the shorter URL, else the
 * first in code-point order), and the registry of one digest: its keeper and its duplicates.
 */
import { createHash } from 'node:crypto';
import { squeeze } from './visible-text.ts';

/** One content's registry entry (hosts table value `dup#<crawl>#<digest>`). */
export interface DupEntry {
  /** the URL whose document holds the content; '' when none does (it went away, none left) */
  keeper: string;
  /** the keeper's crawl depth (a demoted keeper is fetched again at it) */
  depth: number;
  /** the other URLs with this content, state `duplicate` */
  dups: string[];
  /** the keeper's page names itself rel=canonical (absent: it does not) */
  selfCanonical?: boolean;
  /** the URL the keeper's page names as its rel=canonical, when another one: that URL takes it over */
  canonicalOf?: string;
}

/**
 * The most an entry takes (its JSON, in bytes): under one DynamoDB write unit with its key, and
 * bounded however many URLs share a content. A site can serve one page under thousands of URLs
 * (a session-expired page, faceted search, a calendar): listing them all made every duplicate's
 * write as large as the list (a write unit a KB) and the item past DynamoDB's 400 KB at a few
 * thousand. Duplicates past the bound are still folded (state `duplicate`, `duplicateOf` the
 * keeper) and cost a read, no write; they are only not in line to take over when the keeper's
 * content goes: that one finds its content again when it is refreshed (refresh.maxAge).
 */
export const ENTRY_MAX_BYTES = 900;

const entryBytes = (entry: DupEntry) => Buffer.byteLength(JSON.stringify(entry));

/** The entry with as many of its duplicates as fit ENTRY_MAX_BYTES, the first listed kept first. */
function bounded(entry: DupEntry): DupEntry {
  if (entryBytes(entry) <= ENTRY_MAX_BYTES) return entry;
  const fitted: DupEntry = { ...entry, dups: [] };
  for (const url of entry.dups) {
    fitted.dups.push(url);
    if (entryBytes(fitted) > ENTRY_MAX_BYTES) {
      fitted.dups.pop();
      break;
    }
  }
  return fitted;
}

/**
 * Digest of title and text, whitespace collapsed: markup and spacing do not count; letter case
 * does (two pages that differ only in it, case-sensitive IDs or codes, are two documents). With
 * `site` (the page's domain name), content folds only within that site: a page on another site
 * with the same text (and a canonical naming itself) took over an intranet page's document, the
 * search hit then leading to the other site (helper-51). Mirrors on one domain (www and apex)
 * still fold.
 */
export function textDigest(title: string, content: string, site?: string): string {
  const norm = squeeze(`${title}\n${content}`);
  const hash = createHash('sha256');
  if (site !== undefined) hash.update(`${site}\n`);
  return hash.update(norm).digest('hex').slice(0, 40);
}

/**
 * Whether `url` takes the content over from `keeper`, each ranked by what its own page says: one
 * that names itself canonical before one that does not, then the shorter, then the smaller. The
 * rank is the URL's own, whichever of the two was fetched last: ranking by the newcomer's
 * canonical alone made a self-canonical page and a shorter one without a canonical take the
 * content from each other at every fetch, each demotion fetching the other again, for ever.
 */
function outranks(url: string, urlSelf: boolean, keeper: string, keeperSelf: boolean): boolean {
  if (urlSelf !== keeperSelf) return urlSelf;
  if (url.length !== keeper.length) return url.length < keeper.length;
  return url < keeper;
}

/** What a keeper's page says of its canonical: itself, another URL, or nothing. */
const canonicalFlags = (url: string, canonical: string | null) =>
  canonical === url ? { selfCanonical: true } : canonical ? { canonicalOf: canonical } : {};

export type DupDecision =
  /** `url` keeps the document; `demoted` lost it to `url` (its document is deleted) */
  | { kind: 'keep'; entry: DupEntry; demoted?: string }
  /** `url` is a duplicate of `of` */
  | { kind: 'duplicate'; entry: DupEntry; of: string };

/** What indexing `url` with this content does to the content's entry (null: none yet). */
export function admitContent(
  entry: DupEntry | null,
  url: string,
  depth: number,
  canonical: string | null,
): DupDecision {
  const self = canonical === url;
  const flags = canonicalFlags(url, canonical);
  if (!entry || entry.keeper === '' || entry.keeper === url) {
    const dups = (entry?.dups ?? []).filter((u) => u !== url);
    return { kind: 'keep', entry: bounded({ keeper: url, depth, dups, ...flags }) };
  }
  // A page naming the keeper its canonical is its duplicate, whatever the ranks; the URL the
  // keeper names its canonical takes the content over, whatever the ranks.
  const named = entry.canonicalOf === url;
  if (
    canonical !== entry.keeper &&
    (named || outranks(url, self, entry.keeper, entry.selfCanonical === true))
  ) {
    // The demoted keeper first: it is fetched again and would be listed then anyway.
    const dups = [...new Set([entry.keeper, ...entry.dups])].filter((u) => u !== url);
    const kept = bounded({ keeper: url, depth, dups, ...flags });
    return { kind: 'keep', entry: kept, demoted: entry.keeper };
  }
  // Listed while the entry has room; past it the entry is the same (no write: stages/duplicates.ts).
  const kept = entry.dups.includes(url) ? entry : bounded({ ...entry, dups: [...entry.dups, url] });
  return { kind: 'duplicate', entry: kept, of: entry.keeper };
}

/**
 * `url` no longer has this content (it changed, failed or went away). When it was the keeper, the
 * preferred duplicate takes its place (`successor`, fetched again to be indexed).
 */
export function releaseContent(entry: DupEntry, url: string): { entry: DupEntry; successor?: string } {
  if (entry.keeper !== url) return { entry: { ...entry, dups: entry.dups.filter((u) => u !== url) } };
  if (entry.dups.length === 0) return { entry: { keeper: '', depth: entry.depth, dups: [] } };
  // Duplicates are listed without their canonical flags: ranked by the URL alone.
  const successor = entry.dups.reduce((best, u) => (outranks(u, false, best, false) ? u : best));
  return {
    entry: { keeper: successor, depth: entry.depth, dups: entry.dups.filter((u) => u !== successor) },
    successor,
  };
}
