/**
 * Duplicate content (issue 17 item 2), pure: the digest of a document's normalized text, which of
 * two URLs of one content keeps the document (its rel=canonical, else the shorter URL, else the
 * first in code-point order), and the registry of one digest: its keeper and its duplicates.
 */
import { createHash } from 'node:crypto';

/** One content's registry entry (hosts table value `dup#<crawl>#<digest>`). */
export interface DupEntry {
  /** the URL whose document holds the content; '' when none does (it went away, none left) */
  keeper: string;
  /** the keeper's crawl depth (a demoted keeper is fetched again at it) */
  depth: number;
  /** the other URLs with this content, state `duplicate` */
  dups: string[];
}

/** Digest of title and text, whitespace collapsed and lower-cased: markup and spacing do not count. */
export function textDigest(title: string, content: string): string {
  const norm = `${title}\n${content}`.replace(/\s+/g, ' ').trim().toLowerCase();
  return createHash('sha256').update(norm).digest('hex').slice(0, 40);
}

/** The URL that keeps the document: the canonical one, else the shorter, else the smaller. */
export function preferred(a: string, b: string, canonical: string | null): string {
  if (canonical === a || canonical === b) return canonical;
  if (a.length !== b.length) return a.length < b.length ? a : b;
  return a < b ? a : b;
}

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
  if (!entry || entry.keeper === '' || entry.keeper === url) {
    const dups = (entry?.dups ?? []).filter((u) => u !== url);
    return { kind: 'keep', entry: { keeper: url, depth, dups } };
  }
  const dups = [...new Set([...entry.dups, entry.keeper, url])].filter((u) => u !== url);
  if (preferred(url, entry.keeper, canonical) === url) {
    return { kind: 'keep', entry: { keeper: url, depth, dups }, demoted: entry.keeper };
  }
  const kept = entry.dups.includes(url) ? entry.dups : [...entry.dups, url];
  return { kind: 'duplicate', entry: { ...entry, dups: kept }, of: entry.keeper };
}

/**
 * `url` no longer has this content (it changed, failed or went away). When it was the keeper, the
 * preferred duplicate takes its place (`successor`, fetched again to be indexed).
 */
export function releaseContent(entry: DupEntry, url: string): { entry: DupEntry; successor?: string } {
  if (entry.keeper !== url) return { entry: { ...entry, dups: entry.dups.filter((u) => u !== url) } };
  if (entry.dups.length === 0) return { entry: { keeper: '', depth: entry.depth, dups: [] } };
  const successor = entry.dups.reduce((best, u) => preferred(best, u, null));
  return {
    entry: { keeper: successor, depth: entry.depth, dups: entry.dups.filter((u) => u !== successor) },
    successor,
  };
}
