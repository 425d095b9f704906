/**
 * The search sink: the index stage's upserts and deletions, one bulk request per index batch,
 * into OpenSearch. Idempotent by URL (document id = sha256 of the URL) and ordered by an
 * external version (the fetch time in ms): a late, redelivered upsert loses against a newer
 * document or a deletion, because a deletion is kept as a tombstone document carrying its own
 * version (a real delete would forget the version and let the late upsert back in).
 */
import { createHash } from 'node:crypto';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Client } from '@opensearch-project/opensearch';
import { AwsSigv4Signer } from '@opensearch-project/opensearch/aws-v3';
import type { CrawlConfig } from '../config.ts';
import type { CrawlDocument } from '../types.ts';

export interface SinkUpsert {
  doc: CrawlDocument;
  version: number;
}
export interface SinkDelete {
  url: string;
  version: number;
  reason: string;
}

export interface SearchHit {
  url: string;
  title: string;
  score: number;
  snippet: string;
}

/** The engine's endpoint: the config's, else the one the CLI or the stack put in the environment. */
export function searchEndpoint(config: CrawlConfig): string | null {
  return config.index.opensearch.endpoint ?? process.env.TRAWL_SEARCH_ENDPOINT ?? null;
}

export function indexName(config: CrawlConfig): string {
  return config.index.opensearch.indexName ?? `trawl-${config.name}`;
}

export function docId(url: string): string {
  return createHash('sha256').update(url).digest('hex');
}

/**
 * Title and content are analyzed twice: `english` (stemming: "redirects" finds "redirect") and
 * `.intl`, for every other language: the standard tokenizer with CJK width folding, lower case,
 * ASCII folding (é → e, ß → ss: "strasse" finds "Straße") and CJK bigrams (東京 is one term, not
 * 東 and 京 anywhere in the page). Keyword url, dates; mapped metadata stays dynamic text. No date
 * detection: a `<meta name="date">` of "2024-01-01" on the first page made `meta.date` a date
 * field, and every later page whose value was "last tuesday" was refused. Highlighting reads up
 * to 10 M characters of content (a `fetch.maxBytes` page), not OpenSearch's default 1 M, past
 * which a search that hit such a page failed whole.
 */
const INTL = { intl: { type: 'text', analyzer: 'trawl_intl' } } as const;

export const INDEX_BODY = {
  settings: {
    number_of_shards: 1,
    number_of_replicas: 0,
    'index.highlight.max_analyzed_offset': 10_485_760,
    analysis: {
      analyzer: {
        trawl_intl: {
          type: 'custom',
          tokenizer: 'standard',
          filter: ['cjk_width', 'lowercase', 'asciifolding', 'cjk_bigram'],
        },
      },
    },
  },
  mappings: {
    date_detection: false,
    properties: {
      url: { type: 'keyword' },
      crawl: { type: 'keyword' },
      title: { type: 'text', analyzer: 'english', fields: INTL },
      content: { type: 'text', analyzer: 'english', fields: INTL },
      description: { type: 'text', analyzer: 'english', fields: INTL },
      language: { type: 'keyword' },
      contentType: { type: 'keyword' },
      mimeType: { type: 'keyword' },
      charset: { type: 'keyword' },
      size: { type: 'long' },
      hash: { type: 'keyword' },
      source: { type: 'keyword' },
      canonical: { type: 'keyword' },
      compoundPath: { type: 'keyword' },
      lastModified: { type: 'date', ignore_malformed: true },
      indexedAt: { type: 'date' },
      depth: { type: 'integer' },
      deleted: { type: 'boolean' },
      deleteReason: { type: 'keyword' },
      meta: { type: 'object', dynamic: true },
    },
  },
} as const;

/**
 * Which AWS service signs requests to this endpoint: OpenSearch Serverless (`*.aoss.amazonaws.com`)
 * or an OpenSearch Service domain (`*.es.amazonaws.com`); null for anything else (the embedded
 * engine, a self-hosted cluster): plain requests. The region is the host's.
 */
export function awsSigning(endpoint: string): { service: 'aoss' | 'es'; region: string } | null {
  const host = new URL(endpoint).hostname;
  const m = /\.([a-z0-9-]+)\.(aoss|es)\.amazonaws\.com$/.exec(host);
  return m ? { service: m[2] as 'aoss' | 'es', region: m[1] as string } : null;
}

/** A client for the endpoint; SigV4-signed with the SDK's credential chain on AWS. */
export function searchClient(endpoint: string, signing = awsSigning(endpoint)): Client {
  if (!signing) return new Client({ node: endpoint, requestTimeout: 30_000 });
  return new Client({
    node: endpoint,
    requestTimeout: 30_000,
    ...AwsSigv4Signer({ ...signing, getCredentials: credentials() }),
  });
}

let chain: ReturnType<typeof defaultProvider> | null = null;
/** One credential chain per container: it caches (and refreshes) the role's credentials. */
function credentials(): ReturnType<typeof defaultProvider> {
  chain ??= defaultProvider();
  return chain;
}

/** Indices known to exist, and when that was checked: looked at again after READY_MS. */
const ready = new Map<string, number>();
/**
 * An index deleted while a container runs (by hand, or a reindex elsewhere dropping it) was
 * recreated by the next bulk with the engine's default mapping (no analyzers, no `.intl`):
 * searches silently missed. Checked again this often; a bulk that finds it gone makes it anew.
 */
const READY_MS = 60_000;

/** Thrown by writeBulk when the index is not there (the engine refused to create it by itself). */
export class IndexMissing extends Error {}

/** Creates the index with its mapping once per container (an existing index is kept). */
export async function ensureIndex(client: Client, index: string, force = false): Promise<void> {
  const checked = ready.get(index);
  if (checked !== undefined && Date.now() - checked < READY_MS && !force) return;
  const exists = await client.indices.exists({ index });
  if (!exists.body) {
    try {
      await client.indices.create({ index, body: INDEX_BODY as unknown as Record<string, never> });
    } catch (err) {
      // Two workers creating it at once: the loser finds it there.
      if (!String((err as Error).message).includes('resource_already_exists')) throw err;
    }
  }
  ready.set(index, Date.now());
}

function source(doc: CrawlDocument): Record<string, unknown> {
  return {
    url: doc.url,
    title: doc.title,
    content: doc.content,
    contentType: doc.contentType,
    mimeType: doc.mimeType,
    charset: doc.charset,
    size: doc.size,
    hash: doc.hash,
    source: doc.source,
    canonical: doc.canonical ?? null,
    description: doc.description ?? null,
    language: doc.language ?? null,
    compoundPath: doc.compoundPath,
    lastModified: doc.lastModified,
    indexedAt: doc.indexedAt,
    depth: doc.depth,
    meta: doc.meta,
    deleted: false,
  };
}

/** What one bulk did: items written, items the engine held newer, documents it refused. */
export interface BulkResult {
  written: number;
  stale: number;
  /** documents the engine refused (a 4xx other than 409: a value its mapping cannot take) */
  refused: { url: string; status: number; reason: string }[];
}

/**
 * One bulk for the batch. A version conflict (409) means the engine already holds this or a
 * newer state of the URL: that is success. A document the engine refuses (another 4xx: a field
 * its mapping cannot parse) is reported, not retried: it would be refused again, and failing the
 * batch lost every other page of it once its retries ran out. Anything else (429, 5xx) fails the
 * batch, which is retried.
 */
export async function writeBulk(
  client: Client,
  index: string,
  upserts: SinkUpsert[],
  deletes: SinkDelete[],
  crawl?: string,
): Promise<BulkResult> {
  const body: Record<string, unknown>[] = [];
  // Each document names its crawl: `trawl reindex` refuses an index another crawl writes to too.
  const owner = crawl === undefined ? {} : { crawl };
  for (const u of upserts) {
    body.push({
      index: { _index: index, _id: docId(u.doc.url), version: u.version, version_type: 'external_gte' },
    });
    body.push({ ...source(u.doc), ...owner });
  }
  for (const d of deletes) {
    body.push({
      index: { _index: index, _id: docId(d.url), version: d.version, version_type: 'external_gte' },
    });
    body.push({ url: d.url, deleted: true, deleteReason: d.reason, ...owner });
  }
  const result: BulkResult = { written: 0, stale: 0, refused: [] };
  if (body.length === 0) return result;
  const res = await client.bulk({ body });
  const urls = [...upserts.map((u) => u.doc.url), ...deletes.map((d) => d.url)];
  const items = res.body.items as Record<
    string,
    { status: number; error?: { type?: string; reason?: string } }
  >[];
  for (const [i, item] of items.entries()) {
    const r = Object.values(item)[0];
    if (!r) continue;
    if (r.error?.type === 'index_not_found_exception') {
      ready.delete(index);
      throw new IndexMissing(`search index ${index} is gone: ${r.error.reason ?? ''}`);
    }
    if (r.status === 409) result.stale++;
    else if (r.status >= 400 && r.status < 500 && r.status !== 429)
      result.refused.push({ url: urls[i] ?? '', status: r.status, reason: r.error?.reason ?? '' });
    else if (r.status >= 300)
      throw new Error(`search bulk item failed: ${r.status} ${r.error?.reason ?? ''}`);
    else result.written++;
  }
  return result;
}

/** How many documents of `indices` another crawl than `crawl` wrote (documents naming none: not counted). */
export async function otherCrawlsDocuments(
  client: Client,
  indices: string[],
  crawl: string,
): Promise<number> {
  if (indices.length === 0) return 0;
  const res = await client.count({
    index: indices.join(','),
    body: {
      query: {
        bool: {
          filter: [{ exists: { field: 'crawl' } }],
          // `crawl.keyword`: an index whose mapping took the field as text (made before it was mapped)
          must_not: [{ term: { crawl } }, { term: { 'crawl.keyword': crawl } }],
        },
      },
    },
  });
  return Number(res.body.count);
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

/** Best hits first; tombstones are filtered out. */
export async function search(
  client: Client,
  index: string,
  query: string,
  limit: number,
): Promise<SearchHit[]> {
  // A query in a script without spaces between words is highlighted by its bigrams (東京, not 東 京).
  // Both analyses are highlighted: a word found only folded (München for "munchen", café for
  // "cafe") is highlighted by the folded one, where the English one left the passage unmarked.
  const cjk = CJK.test(query);
  const textFields = cjk ? ['content.intl', 'content'] : ['content', 'content.intl'];
  const summaryFields = cjk ? ['description.intl', 'description'] : ['description', 'description.intl'];
  const highlighted = [...textFields, ...summaryFields];
  const { words, phrases, excluded } = boundedQuery(parseQuery(query)).query;
  // The better of the two analyses: stemmed English, or the folded, CJK-aware one.
  const match = (text: string, type?: 'phrase') => ({
    multi_match: { query: text, fields: SEARCHED_FIELDS, tie_breaker: 0.3, ...(type ? { type } : {}) },
  });
  const body = (highlight: boolean) => ({
    size: limit,
    query: {
      bool: {
        must: [
          ...(words ? [match(words)] : []),
          ...phrases.map((p) => match(p, 'phrase')),
          ...(words || phrases.length > 0 ? [] : [{ match_all: {} }]),
        ],
        must_not: [{ term: { deleted: true } }, ...excluded.map((p) => match(p, 'phrase'))],
      },
    },
    ...(highlight
      ? {
          highlight: {
            // The page's text is escaped around the <em> marks: a snippet is safe to show as HTML.
            encoder: 'html' as const,
            fields: Object.fromEntries(
              highlighted.map((f) => [f, { fragment_size: 160, number_of_fragments: 1 }]),
            ),
          },
        }
      : {}),
    _source: ['url', 'title', 'content', 'description'],
  });
  // An index made before INDEX_BODY raised the highlight limit refuses to highlight a hit past 1 M
  // characters, failing the whole search: then the snippets are the contents' starts.
  const res = await client.search({ index, body: body(true) }).catch((err: Error) => {
    if (!/max_analyzed_offset|maximum allowed to be analyzed for highlighting/.test(String(err.message)))
      throw err;
    return client.search({ index, body: body(false) });
  });
  return (res.body.hits.hits as unknown as RawHit[]).map((h) => ({
    url: h._source.url,
    title: h._source.title,
    score: h._score,
    // The text's matching passage, else the description's (a hit on the summary alone), else the
    // description, else the text's start.
    snippet:
      highlighted.map((f) => h.highlight?.[f]?.[0]).find((x) => x !== undefined) ??
      escapeHtml((h._source.description || h._source.content).slice(0, 160)),
  }));
}

const SEARCHED_FIELDS = [
  'title^2',
  'description^1.5',
  'content',
  'title.intl^2',
  'description.intl^1.5',
  'content.intl',
];

/**
 * A search box's query: `"…"` a phrase every hit has, `-word` or `-"…"` what no hit has, the rest
 * words of which the best hits have the most. A quote left open runs to the end; exclusions
 * alone leave every other document.
 */
export interface ParsedQuery {
  words: string;
  phrases: string[];
  excluded: string[];
}

/**
 * A query as typed: phrases in quotes, exclusions with a minus, the rest words. In Unicode's
 * composed form, as documents are indexed: a "café" written decomposed (e and a combining
 * accent, as text pasted from macOS can be) found nothing.
 */
export function parseQuery(query: string): ParsedQuery {
  const phrases: string[] = [];
  const excluded: string[] = [];
  const words = query
    .normalize('NFC')
    .replace(/(^|\s)(-?)"([^"]*)("|$)/g, (_, space: string, minus: string, phrase: string) => {
      const text = phrase.trim();
      if (text) (minus ? excluded : phrases).push(text);
      return space;
    })
    .replace(/(^|\s)-(\S+)/g, (_, space: string, word: string) => {
      excluded.push(word);
      return space;
    })
    .replace(/\s+/g, ' ')
    .trim();
  return { words, phrases, excluded };
}

/** Phrases and exclusions a search sends at most, each; and terms in all. */
const MAX_QUERY_PHRASES = 20;
export const MAX_QUERY_TERMS = 100;

/**
 * The query cut to MAX_QUERY_TERMS terms, and how many it left out. Each term is a clause in each
 * of the six searched fields, and OpenSearch refuses a query past 1,024 clauses: a pasted
 * paragraph of about 180 words failed with its `too_many_nested_clauses` and a stack trace. Its
 * phrases and exclusions are kept first (20 of each at most), then its first distinct words.
 */
export function boundedQuery(q: ParsedQuery): { query: ParsedQuery; dropped: number } {
  const phrases = q.phrases.slice(0, MAX_QUERY_PHRASES);
  const excluded = q.excluded.slice(0, MAX_QUERY_PHRASES);
  const seen = new Set<string>();
  const distinct = q.words.split(' ').filter((w) => {
    const key = w.toLowerCase();
    if (!w || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const words = distinct.slice(0, MAX_QUERY_TERMS - phrases.length - excluded.length);
  const dropped =
    q.phrases.length - phrases.length + q.excluded.length - excluded.length + distinct.length - words.length;
  return { query: { words: words.join(' '), phrases, excluded }, dropped };
}

/** Text as HTML, as the highlighter's `html` encoder escapes it. */
function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"'/]/g,
    (c) =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;', '/': '&#x2F;' })[c] as string,
  );
}

interface RawHit {
  _score: number;
  _source: { url: string; title: string; content: string; description?: string | null };
  highlight?: Record<string, string[] | undefined>;
}
