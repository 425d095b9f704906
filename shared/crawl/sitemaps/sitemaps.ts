/**
 * Sitemaps and feeds (seed 004 "special web crawling tasks"): XML urlset and sitemapindex
 * (sitemaps.org 0.9), plain-text sitemaps, RSS 2.0 / RSS 1.0 and Atom, gzip-compressed or not.
 * Namespaces are tolerated as crawler-commons does in lenient mode: element names are compared
 * without their prefix and whatever the declared namespace is.
 *
 * Unlike crawler-commons, URLs are NOT required to be under the sitemap's host and directory
 * (sitemaps.org "Sitemap file location"): robots.txt may point cross-host (sitemaps.org
 * "Sitemaps & Cross Submits"), and the crawl's scope filter decides what is fetched anyway.
 */
import { XMLParser } from 'fast-xml-parser';
import { archiveFormat, gunzipCapped } from '../archives/compound.ts';

/** What the content turned out to be; 'unknown' when no sitemap or feed format fits. */
export type SitemapKind = 'urlset' | 'sitemapindex' | 'text' | 'rss' | 'atom' | 'unknown';

/** A page URL listed by a sitemap or feed. */
export interface SitemapUrl {
  loc: string;
  /** W3C datetime as written (sitemap, Atom) or ISO 8601 converted from an RSS RFC 822 date */
  lastmod?: string;
}

/** The result of `parseSitemap`: page URLs (urlset, text, feeds) or child sitemaps (index). */
export interface ParsedSitemap {
  kind: SitemapKind;
  urls: SitemapUrl[];
  /** child sitemaps of a sitemap index, each with the `<lastmod>` the index gives it */
  sitemaps: SitemapUrl[];
  /** over the byte limit (after gunzip): not read */
  tooLarge?: boolean;
}

/** sitemaps.org: a sitemap file may be at most 50 MB (52,428,800 bytes) uncompressed. */
export const MAX_SITEMAP_BYTES = 50 * 1024 * 1024;

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  preserveOrder: true, // keeps "text<![CDATA[more]]>" in order, so a loc can be split in parts
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  htmlEntities: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
});

/** Media types a sitemap or feed is served with, besides which nothing is sniffed. */
const XML_TYPES = new Set([
  'text/xml',
  'application/xml',
  'application/rss+xml',
  'application/atom+xml',
  'application/rdf+xml',
]);
/** The root element of an XML sitemap, sitemap index or feed, after the prolog, with any prefix. */
const SITEMAP_ROOT = /^<(?:[A-Za-z_][\w.-]*:)?(?:urlset|sitemapindex|rss|feed|RDF)[\s/>]/;
/**
 * The prolog: XML declaration, processing instructions, comments, a doctype (with an internal
 * subset: `<!DOCTYPE rss [ <!ENTITY …> ]>` ended at its first `>`, and the feed was not one), whitespace.
 */
const PROLOG = /^(?:\s+|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE(?:[^>[]|\[[\s\S]*?\])*>)/i;

/**
 * Whether a page fetched as a page (a start URL, a link) is an XML sitemap or feed: served as XML
 * (or RSS, Atom, RDF) with such a root element in its first 4 KB. Only the start is read.
 */
export function isSitemapOrFeed(mimeType: string | null, bytes: Uint8Array): boolean {
  if (mimeType === null || !XML_TYPES.has(mimeType)) return false;
  let head = sniffText(bytes.subarray(0, 4096)).replace(/^\uFEFF/, '');
  for (let m = PROLOG.exec(head); m !== null && m[0] !== ''; m = PROLOG.exec(head))
    head = head.slice(m[0].length);
  return SITEMAP_ROOT.test(head);
}

function sniffText(bytes: Uint8Array): string {
  try {
    return new TextDecoder(sniffEncoding(bytes)).decode(bytes);
  } catch {
    return '';
  }
}

/** Parses a sitemap, sitemap index, text sitemap, RSS or Atom feed (gzip detected by magic bytes). */
export function parseSitemap(
  content: Uint8Array | string,
  url: string,
  maxBytes = MAX_SITEMAP_BYTES,
): ParsedSitemap {
  const text = decodeContent(content, maxBytes);
  if (text === 'too-large') return { ...empty('unknown'), tooLarge: true };
  if (text === null) return empty('unknown');
  const body = text.replace(/^\uFEFF/, '').trimStart();
  if (!body.startsWith('<')) return parseText(body);
  const parsed = parseXml(body, url);
  // A sitemap cut short (fetch.maxBytes, a dropped connection) inside a tag (`…</url><ur`) parses
  // as nothing at all; up to its last whole tag, it gives the entries read so far, as
  // crawler-commons' lenient parser does. (Cut between tags, the parser takes it as it is.)
  const end = body.trimEnd().lastIndexOf('>') + 1;
  if (parsed.kind !== 'unknown' || end <= 0 || end === body.trimEnd().length) return parsed;
  return parseXml(body.slice(0, end), url);
}

function empty(kind: SitemapKind): ParsedSitemap {
  return { kind, urls: [], sitemaps: [] };
}

/** Text of the sitemap; 'too-large' over `maxBytes` (sitemaps.org: 50 MB), null when not valid gzip. */
function decodeContent(content: Uint8Array | string, maxBytes: number): string | null | 'too-large' {
  if (typeof content === 'string') return content.length > maxBytes ? 'too-large' : content;
  let bytes = content;
  if (archiveFormat(bytes) === 'gzip') {
    try {
      const inflated = gunzipCapped(bytes, maxBytes);
      if (inflated.truncated) return 'too-large';
      bytes = inflated.bytes;
    } catch {
      return null;
    }
  }
  if (bytes.length > maxBytes) return 'too-large';
  return new TextDecoder(sniffEncoding(bytes)).decode(bytes);
}

/** UTF-16 byte order marks, else the XML declaration's encoding, else UTF-8 (the protocol's). */
function sniffEncoding(bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 200));
  const declared = /^(?:\u00ef\u00bb\u00bf)?\s*<\?xml[^>]*encoding=["']([\w.:-]+)["']/.exec(head)?.[1];
  if (!declared) return 'utf-8';
  try {
    return new TextDecoder(declared).encoding;
  } catch {
    return 'utf-8';
  }
}

/** sitemaps.org text format: one fully specified URL per line; anything else on a line is skipped. */
function parseText(body: string): ParsedSitemap {
  const urls = new Urls();
  for (const line of body.split(/\r\n|\r|\n/)) urls.add(absoluteUrl(line.trim()));
  return urls.list.length > 0 ? { kind: 'text', urls: urls.list, sitemaps: [] } : empty('unknown');
}

function parseXml(body: string, base: string): ParsedSitemap {
  let nodes: XmlNode[];
  try {
    nodes = parser.parse(body) as XmlNode[];
  } catch {
    return empty('unknown');
  }
  const root = nodes.find((node) => tagOf(node) !== null);
  return root ? readRoot(root, base) : empty('unknown');
}

function readRoot(root: XmlNode, base: string): ParsedSitemap {
  const feed = (kind: SitemapKind, urls: SitemapUrl[]): ParsedSitemap => ({ kind, urls, sitemaps: [] });
  switch (tagOf(root)) {
    case 'urlset':
      return feed('urlset', readUrlset(root, base));
    case 'sitemapindex':
      return { kind: 'sitemapindex', urls: [], sitemaps: readIndex(root, base) };
    case 'rss':
    case 'rdf':
      return feed('rss', readRss(rssItems(root, base)));
    case 'feed':
      return feed('atom', readAtom(root, base));
    default:
      return empty('unknown');
  }
}

/** `<url><loc>`; lenient like crawler-commons: a `<url>` without `<loc>` may hold the URL as text. */
function readUrlset(root: XmlNode, base: string): SitemapUrl[] {
  const urls = new Urls();
  for (const entry of childrenOf(root, 'url')) {
    const loc = childrenOf(entry, 'loc')[0];
    const lastmod = w3cDate(childText(entry, 'lastmod'));
    urls.add(resolveUrl(textOf(loc ?? entry), base), lastmod);
  }
  return urls.list;
}

/** `<sitemap><loc>`, or (crawler-commons lenient) the URL as the `<sitemap>` element's own text. */
function readIndex(root: XmlNode, base: string): SitemapUrl[] {
  const urls = new Urls();
  for (const entry of childrenOf(root, 'sitemap')) {
    const loc = childrenOf(entry, 'loc')[0];
    urls.add(resolveUrl(textOf(loc ?? entry), base), w3cDate(childText(entry, 'lastmod')));
  }
  return urls.list;
}

/**
 * RSS 2.0 items sit in `<channel>`, RSS 1.0 (`<rdf:RDF>`) items next to it; each with the base
 * its `xml:base` and its ancestors' make (XML Base, as for Atom: until 2026-11-28 ignored in RSS).
 */
function rssItems(root: XmlNode, base: string): [XmlNode, string][] {
  const rootBase = xmlBase(root, base);
  return [root, ...childrenOf(root, 'channel')].flatMap((node) => {
    const at = node === root ? rootBase : xmlBase(node, rootBase);
    return childrenOf(node, 'item').map((item): [XmlNode, string] => [item, xmlBase(item, at)]);
  });
}

/** An item's `<link>` (text, or an atom:link href), else a `<guid>` that is an absolute URL. */
function readRss(items: [XmlNode, string][]): SitemapUrl[] {
  const urls = new Urls();
  for (const [item, base] of items) {
    const links = childrenOf(item, 'link').map((l) => textOf(l).trim() || attrOf(l, 'href') || '');
    const link = links.find((l) => l !== '');
    const loc = link ? resolveUrl(link, base) : absoluteUrl(childText(item, 'guid'));
    const lastmod = rfc822Date(childText(item, 'pubdate')) ?? w3cDate(childText(item, 'date'));
    urls.add(loc, lastmod);
  }
  return urls.list;
}

/**
 * An entry's alternate link (`rel` absent or "alternate", RFC 4287 4.2.7.2), else its first link,
 * resolved against the `xml:base` of the feed, the entry and the link in turn (RFC 4287 §2: until
 * 2026-11-28 against the feed's URL only).
 */
function readAtom(root: XmlNode, base: string): SitemapUrl[] {
  const urls = new Urls();
  const feedBase = xmlBase(root, base);
  for (const entry of childrenOf(root, 'entry')) {
    const links = childrenOf(entry, 'link').filter((l) => attrOf(l, 'href'));
    const rel = (l: XmlNode) => attrOf(l, 'rel') ?? 'alternate';
    const link = links.find((l) => rel(l) === 'alternate') ?? links[0];
    const lastmod = w3cDate(childText(entry, 'updated')) ?? w3cDate(childText(entry, 'published'));
    const at = link ? xmlBase(link, xmlBase(entry, feedBase)) : feedBase;
    urls.add(link ? resolveUrl(attrOf(link, 'href') ?? '', at) : null, lastmod);
  }
  return urls.list;
}

/** The base URL an element's `xml:base` (the parser drops the prefix: `base`) makes of `base`; `base` without one. */
function xmlBase(node: XmlNode, base: string): string {
  const own = attrOf(node, 'base');
  return own === undefined ? base : (resolveUrl(own, base) ?? base);
}

/** Collects URLs in document order, first occurrence wins (crawler-commons keys its URLs too). */
class Urls {
  readonly list: SitemapUrl[] = [];
  private readonly seen = new Set<string>();

  add(loc: string | null, lastmod?: string): void {
    if (loc === null || this.seen.has(loc)) return;
    this.seen.add(loc);
    this.list.push(lastmod === undefined ? { loc } : { loc, lastmod });
  }
}

/** The element name (namespace prefix removed, lower-cased), or null for text and CDATA nodes. */
function tagOf(node: XmlNode): string | null {
  const key = Object.keys(node).find((k) => k !== ':@' && k !== '#text' && k !== '#cdata');
  return key === undefined ? null : key.toLowerCase();
}

function childrenOf(node: XmlNode, tag: string): XmlNode[] {
  const name = Object.keys(node).find((k) => k !== ':@');
  const children = name === undefined ? [] : node[name];
  return Array.isArray(children) ? (children as XmlNode[]).filter((c) => tagOf(c) === tag) : [];
}

/** The node's own text: text and CDATA children concatenated, entities decoded. */
function textOf(node: XmlNode): string {
  const name = Object.keys(node).find((k) => k !== ':@');
  const children = name === undefined ? [] : node[name];
  if (!Array.isArray(children)) return typeof children === 'string' ? children : '';
  return (children as XmlNode[])
    .map((c) => (typeof c['#text'] === 'string' ? c['#text'] : c['#cdata'] ? textOf(c) : ''))
    .join('');
}

function childText(node: XmlNode, tag: string): string {
  const child = childrenOf(node, tag)[0];
  return child ? textOf(child).trim() : '';
}

function attrOf(node: XmlNode, name: string): string | undefined {
  const value = (node[':@'] as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/** Resolves a loc against the sitemap URL; null unless it makes an http(s) URL. */
function resolveUrl(loc: string, base: string): string | null {
  const trimmed = loc.trim();
  if (trimmed === '') return null;
  try {
    const url = new URL(trimmed, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Only absolute http(s) URLs: text sitemap lines and RSS guids that are not URLs are skipped. */
function absoluteUrl(text: string): string | null {
  return /^https?:\/\//i.test(text) ? resolveUrl(text, text) : null;
}

const W3C_DATETIME = /^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

/** W3C datetime (sitemaps.org lastmod, RFC 3339 in Atom) as written, or undefined. */
function w3cDate(text: string): string | undefined {
  return W3C_DATETIME.test(text) ? text : undefined;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** RFC 822 5.1 zone names, in hours east of UTC. */
const ZONES: Record<string, number> = {
  UT: 0,
  UTC: 0,
  GMT: 0,
  Z: 0,
  EST: -5,
  EDT: -4,
  CST: -6,
  CDT: -5,
  MST: -7,
  MDT: -6,
  PST: -8,
  PDT: -7,
};
const RFC822 =
  /^(?:[a-z]{3},?\s*)?(\d{1,2})\s+([a-z]{3})\s+(\d{2}|\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([a-z]+|[+-]\d{4})$/i;

/** RSS pubDate (RFC 822, 2- or 4-digit year) to ISO 8601; undefined without a time zone, as crawler-commons. */
function rfc822Date(text: string): string | undefined {
  const m = RFC822.exec(text);
  if (!m) return undefined;
  const [, day, mon, year, hour, minute, second, zone] = m as unknown as string[];
  const month = MONTHS.indexOf(mon!.toLowerCase());
  const numeric = /^[+-]/.test(zone!);
  const offsetHours = numeric
    ? Number(zone!.slice(1, 3)) + Number(zone!.slice(3)) / 60
    : ZONES[zone!.toUpperCase()];
  if (month < 0 || offsetHours === undefined) return undefined;
  const offsetMinutes = (numeric && zone![0] === '-' ? -60 : 60) * offsetHours;
  // RFC 2822 4.3: a two-digit year below 50 is 20xx, otherwise 19xx.
  const y = year!.length === 2 ? Number(year) + (Number(year) < 50 ? 2000 : 1900) : Number(year);
  const utc = Date.UTC(y, month, Number(day), Number(hour), Number(minute), Number(second ?? 0));
  return Number.isNaN(utc) ? undefined : new Date(utc - offsetMinutes * 60_000).toISOString();
}
