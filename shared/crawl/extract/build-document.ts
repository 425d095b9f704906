/**
 * Builds the document a search index receives (docs/documents.md) from an extraction and
 * the response headers, and renames its fields as `index.mapping` says (SMILA's job `mapping`,
 * e.g. httpUrl → Path, httpContent → Content in seed 003's sample job).
 */
import type { CrawlDocument, MetaValue } from '../../types.ts';
import { parseContentType } from './decode-body.ts';
import type { HtmlExtraction } from './extract-html.ts';

export interface BuildDocumentInput {
  url: string;
  /** null for non-HTML documents: pass `text` and `title` instead */
  extraction: HtmlExtraction | null;
  /** overrides the extraction's content (e.g. text of a PDF) */
  text?: string;
  /** overrides the extraction's title */
  title?: string;
  headers: Record<string, string>;
  /** the charset the text was decoded with (decodeBody); null for a binary document (PDF) */
  charset?: string | null;
  size: number;
  depth: number;
  source: string | null;
  addMeta: MetaValue[];
  indexedAt: string;
  hash: string;
  compoundPath?: string[];
  /** the media type the bytes showed when the header's says nothing (octet-stream): its `mimeType` */
  sniffedMimeType?: string;
  /** a document without an extraction (a PDF): its mapped metadata and its description */
  meta?: Record<string, string | string[]>;
  description?: string | null;
  /** the date the document itself records (an Office document's), ISO: used without a Last-Modified header */
  lastModified?: string;
}

/** Reads a header case-insensitively (HTTP field names are case-insensitive, RFC 9110 §5.1). */
export function headerValue(headers: Record<string, string>, name: string): string | null {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted) return value;
  }
  return null;
}

/** Last-Modified as an ISO string, or null when absent or not a date (SMILA httpLastModified is a DateTime). */
function isoDate(value: string | null): string | null {
  if (value === null || value.trim() === '') return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** A server clock a day ahead of the crawl's is wrong, not news: no date (`Tue, 01 Jan 2999`, helper-48). */
const DATE_AHEAD_MS = 86_400_000;

/** `date` unless it lies more than a day after `now` (ISO both); then null. */
function notAhead(date: string | null, now: string): string | null {
  return date !== null && Date.parse(date) > Date.parse(now) + DATE_AHEAD_MS ? null : date;
}

/**
 * Text in Unicode's composed form (NFC, as the W3C character model asks of the web): a page or a
 * macOS file name written decomposed ("Cafe" + U+0301) is otherwise never found by "café" or
 * "cafe", since the search engine's folding keeps the lone combining mark in the term.
 */
const nfc = (text: string): string => (/[\u0300-\uffff]/.test(text) ? text.normalize('NFC') : text);
const nullableNfc = (text: string | null): string | null => (text === null ? null : nfc(text));

/** Merges rule `addMeta` values into the mapped metadata; repeated names accumulate into arrays (seed 004). */
function mergeMeta(
  base: Record<string, string | string[]>,
  extra: MetaValue[],
): Record<string, string | string[]> {
  const merged = new Map<string, string[]>();
  for (const [name, value] of Object.entries(base))
    merged.set(name, (Array.isArray(value) ? value : [value]).map(nfc));
  for (const { name, value } of extra) {
    const list = merged.get(name);
    if (list) list.push(value);
    else merged.set(name, [value]);
  }
  return Object.fromEntries([...merged].map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
}

/** Assembles a CrawlDocument from an extraction (or plain text), the headers and crawl bookkeeping. */
export function buildDocument(input: BuildDocumentInput): CrawlDocument {
  const contentType = headerValue(input.headers, 'content-type');
  const declared = parseContentType(contentType);
  const mimeType = input.sniffedMimeType ?? declared.mimeType;
  // The charset the text was decoded with (BOM, header, <meta>), else the header's label.
  const charset = input.charset !== undefined ? input.charset : declared.charset;
  const doc: CrawlDocument = {
    url: input.url,
    title: nfc(input.title ?? input.extraction?.title ?? ''),
    content: nfc(input.text ?? input.extraction?.content ?? ''),
    contentType,
    mimeType,
    charset,
    lastModified: notAhead(
      isoDate(headerValue(input.headers, 'last-modified')) ?? input.lastModified ?? null,
      input.indexedAt,
    ),
    size: input.size,
    hash: input.hash,
    depth: input.depth,
    source: input.source,
    meta: mergeMeta(input.extraction?.meta ?? input.meta ?? {}, input.addMeta),
    indexedAt: input.indexedAt,
    description: nullableNfc(input.extraction ? input.extraction.description : (input.description ?? null)),
    language: input.extraction ? input.extraction.language : headerLanguage(input.headers),
  };
  if (input.extraction) doc.canonical = input.extraction.canonical;
  if (input.compoundPath !== undefined) doc.compoundPath = input.compoundPath;
  return doc;
}

/**
 * Renames document fields per `index.mapping` (e.g. {"url": "Path", "content": "Content"}); unmapped
 * fields keep their names. A key "meta.<name>" lifts that metadata value to a top-level field.
 */
export function applyMapping(doc: CrawlDocument, mapping: Record<string, string>): Record<string, unknown> {
  const meta: Record<string, string | string[]> = { ...doc.meta };
  const lifted: [string, unknown][] = [];
  for (const [from, to] of Object.entries(mapping)) {
    if (!from.startsWith('meta.')) continue;
    const name = from.slice('meta.'.length);
    if (Object.hasOwn(meta, name)) {
      lifted.push([to, meta[name]]);
      delete meta[name];
    }
  }
  const out: [string, unknown][] = Object.entries({ ...doc, meta }).map(([key, value]) => [
    Object.hasOwn(mapping, key) ? mapping[key]! : key,
    value,
  ]);
  return Object.fromEntries([...out, ...lifted]);
}

/**
 * A declared language as a BCP 47 tag in its usual case (`en`, `en-US`, `zh-Hant-TW`,
 * `de-DE-u-co-phonebk`); null for an empty or malformed one, or one whose language is not an
 * ISO 639 code of 2 or 3 letters (`english`, `deutsch`: no facet should gather those). A list
 * (`Content-Language: de, en`) gives its first tag.
 */
export function languageTag(value: string | null | undefined): string | null {
  const tag = value?.split(',')[0]?.trim().replace(/_/g, '-') ?? '';
  if (!/^[a-z]{2,3}(-[a-z0-9]{1,8})*$/i.test(tag) || tag.length > 35) return null;
  const [primary = '', ...rest] = tag.split('-');
  // After a singleton (`-u-`, `-x-`) come extension subtags: lower case, whatever their length.
  const singleton = rest.findIndex((p) => p.length === 1);
  const sub = rest.map((p, i) =>
    singleton !== -1 && i >= singleton
      ? p.toLowerCase()
      : p.length === 2
        ? p.toUpperCase()
        : p.length === 4
          ? p[0]!.toUpperCase() + p.slice(1).toLowerCase()
          : p.toLowerCase(),
  );
  return [primary.toLowerCase(), ...sub].join('-');
}

/** The language a `Content-Language` header declares (how non-HTML documents say it). */
export function headerLanguage(headers: Record<string, string> | undefined): string | null {
  return languageTag(headerValue(headers ?? {}, 'content-language'));
}
