/**
 * HTML extraction in one streaming htmlparser2 pass: links, canonical, meta robots, title, metadata
 * and visible text (seed 002 link detection, seed 004 removed elements, metadata and robots rules).
 * No DOM is built: a stack of per-element flags and depth counters decide what is collected.
 */
import { decodeHTML } from 'entities';
import type { Handler } from 'htmlparser2';
import type { CrawlConfig } from '../../config.ts';
import { queryEncoder } from '../url/query-encoding.ts';
import { boundedParser } from './bounded-parser.ts';
import { headerLanguage, headerValue, languageTag } from './build-document.ts';
import { collapse } from './visible-text.ts';

export interface HtmlExtraction {
  links: string[];
  /** links left out because their `rel` says nofollow (extract.honorRelNofollow) */
  nofollowLinks: number;
  /** the first few of them, resolved: examples for the crawl summary */
  nofollowSample: string[];
  canonical: string | null;
  /** the first `<meta http-equiv="refresh">` that names a URL: its delay and its target, absolute */
  refresh: { seconds: number; target: string } | null;
  robots: { index: boolean; follow: boolean; source: string[] };
  title: string;
  content: string;
  meta: Record<string, string | string[]>;
  rawMeta: Record<string, string[]>;
  /** the page's summary: `<meta name="description">`, else its Open Graph or Twitter one */
  description: string | null;
  /** the declared language: `<html lang>`, else `<meta http-equiv="content-language">`, else the header */
  language: string | null;
}

export interface ExtractHtmlInput {
  url: string;
  html: string;
  headers?: Record<string, string>;
  options: CrawlConfig['extract'];
  /** seed 002 "Crawler: Rogue": ignore the robots exclusion standard (meta robots, X-Robots-Tag) */
  rogue?: boolean;
  /**
   * The crawler's robots token (fetch.userAgent's product token, as robots.txt groups are matched):
   * `<meta name="TOKEN">` and `X-Robots-Tag: TOKEN: …` apply to it as the robots ones do (as
   * Google's `googlebot` ones do); those naming another crawler never apply
   */
  agent?: string;
  /** the charset the page was decoded with: a legacy one encodes the links' queries (query-encoding.ts) */
  charset?: string | null;
  /** the path the last-resort title is named after, when not the URL's (an archive element's entry path) */
  titlePath?: string;
  /** when the page was fetched (epoch ms): an `unavailable_after` date passed by then is a noindex */
  now?: number;
}

/**
 * Text of these never counts as content (title is collected on its own): besides code, media
 * elements' fallback ("your browser does not support video") and ruby annotations (`<rt>`, `<rp>`:
 * 漢<rt>kan</rt>字<rt>ji</rt> read "漢kan字ji", and 漢字 was no longer one term).
 */
const HIDDEN = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'title',
  'video',
  'audio',
  'canvas',
  'rt',
  'rp',
]);
/**
 * An element a reader does not see, nor its text: one with the `hidden` attribute (but
 * `until-found`, which find-in-page opens), a closed `<dialog>`, an `<iframe>`'s inner text (never
 * rendered), and a `<select>`'s or `<datalist>`'s options (a country list put ~200 names into
 * every page with a form, an audit).
 */
function neverShown(name: string, attribs: Attribs): boolean {
  if (attribs.hidden !== undefined && attribs.hidden.trim().toLowerCase() !== 'until-found') return true;
  if (name === 'dialog') return attribs.open === undefined;
  return name === 'iframe' || name === 'select' || name === 'datalist';
}
/** Inside SVG and MathML: text never shown (a description for assistive technology, metadata). */
const FOREIGN_HIDDEN = new Set(['desc', 'metadata', 'annotation', 'annotation-xml']);
/**
 * Elements that separate words, so "<p>a</p><p>b</p>" reads "a b"; an inline chart's labels
 * (`<svg><text>Q1</text><text>Q2</text></svg>`) and a formula's cells too ("SalesQ1Q2by", helper-52).
 */
const BLOCK = new Set(
  `address article aside blockquote body br button caption center dd details dialog dir div dl dt fieldset
  figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input legend
  li main menu nav ol optgroup option p pre search section select summary table tbody td textarea tfoot th thead tr ul
  svg text math mtd mtr`.split(/\s+/),
);
/** Seed 002 link patterns: a href, FRAME SRC, IFRAME HREF (and src, which browsers load), plus area href. */
const LINK_ATTRS = new Map([
  ['a', ['href']],
  ['area', ['href']],
  ['frame', ['src']],
  ['iframe', ['src', 'href']],
]);
/** Seed 003: opaque URIs (javascript:void(0), mailto:…) cannot be crawled. */
const DROPPED_SCHEMES = new Set(['javascript:', 'mailto:', 'data:', 'tel:', 'vbscript:', 'about:', 'blob:']);
/** Seed 004: the Dublin Core title, then Open Graph and Twitter titles (keys are lower-cased). */
const TITLE_META = ['dc.title', 'dcterms.title', 'og:title', 'twitter:title'];
/** The page's summary, first that has a value (keys are lower-cased). */
const DESCRIPTION_META = ['description', 'og:description', 'twitter:description', 'dc.description'];
/** X-Robots-Tag directives with a value after a colon; any other word before a colon names a user agent. */
const VALUED = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/** rel=nofollow links kept as examples (the count is of them all) */
const NOFOLLOW_SAMPLE = 3;

const F_SKIP = 1; // text left out (hidden or removed element)
const F_INERT = 2; // <template>: nothing inside is live
const F_TITLE = 4;
const F_SVG = 8;
const F_TEXTAREA = 16; // raw text to htmlparser2, whose character references HTML decodes (RCDATA)
const F_NOSCRIPT = 32;

type Attribs = Record<string, string>;

/** The streaming pass: every htmlparser2 open tag is matched by exactly one close callback. */
class Collector implements Partial<Handler> {
  readonly hrefs: string[] = [];
  readonly text: string[] = [];
  readonly title: string[] = [];
  /** the contents of `<meta name="robots">` and of a meta named after the crawler, with that name */
  readonly robotsMeta: { name: string; content: string }[] = [];
  readonly rawMeta = new Map<string, string[]>();
  readonly mapped = new Map<string, string[]>();
  base: string | null = null;
  canonical: string | null = null;
  /** `<html lang>` (or `xml:lang`), then the first `<meta http-equiv="content-language">` */
  htmlLang: string | null = null;
  metaLang: string | null = null;
  refresh: { seconds: number; target: string } | null = null;
  /** hrefs left out for rel=nofollow (each href once, and not when the same href is followed elsewhere) */
  readonly nofollowHrefs = new Set<string>();
  private readonly seenHrefs = new Set<string>();
  private readonly flags: number[] = [];
  private skip = 0;
  private inert = 0;
  private svg = 0;
  /** inside `<noscript>`: what a browser running scripts never sees */
  private noscript = 0;
  /**
   * The text of `<noscript>` elements (left out of the content, as browsers running scripts leave
   * it): the content of a page that has no other text (a JavaScript app's shell, whose fallback is
   * its only text on the server side; it was indexed empty, helper-52).
   */
  readonly fallback: string[] = [];
  private inTitle = false;
  private titleSeen = false;
  /** a `<textarea>`'s text so far, decoded at its end (a reference may span two text chunks) */
  private textarea: string[] | null = null;

  constructor(
    private readonly removeTags: Set<string>,
    private readonly removeClasses: string[],
    private readonly mapping: Map<string, string>,
    private readonly honorRelNofollow: boolean,
    /** the crawler's robots token, lower-case: a meta of that name is a robots meta for it */
    private readonly agent: string | null,
  ) {}

  onopentag(name: string, attribs: Attribs): void {
    let f = 0;
    // Seed 004: removed elements (by name or class) are skipped with their nested content.
    if (HIDDEN.has(name) || this.removeTags.has(name) || this.hasRemovedClass(attribs.class)) f |= F_SKIP;
    if (neverShown(name, attribs)) f |= F_SKIP;
    if (this.svg > 0 && FOREIGN_HIDDEN.has(name)) f |= F_SKIP;
    if (name === 'template') f |= F_INERT;
    if (name === 'noscript') f |= F_NOSCRIPT;
    if (name === 'svg' || name === 'math') f |= F_SVG; // foreign content: its <title> is not the page's
    if (name === 'title' && !this.titleSeen && this.svg === 0 && this.inert === 0) f |= F_TITLE;
    if (this.inert === 0) this.collect(name, attribs);
    if (BLOCK.has(name) && this.skip === 0) this.text.push(' ');
    if (name === 'noscript' || (BLOCK.has(name) && this.inFallback())) this.fallback.push(' ');
    if (name === 'textarea') {
      f |= F_TEXTAREA;
      this.textarea = [];
    }
    this.flags.push(f);
    if (f & F_SKIP) this.skip++;
    if (f & F_INERT) this.inert++;
    if (f & F_SVG) this.svg++;
    if (f & F_NOSCRIPT) this.noscript++;
    if (f & F_TITLE) this.inTitle = this.titleSeen = true;
  }

  onclosetag(name: string): void {
    const f = this.flags.pop() ?? 0;
    if (f & F_SKIP) this.skip--;
    if (f & F_INERT) this.inert--;
    if (f & F_SVG) this.svg--;
    if (f & F_NOSCRIPT) this.noscript--;
    if (f & F_TITLE) this.inTitle = false;
    if (f & F_TEXTAREA && this.textarea !== null) {
      this.text.push(decodeHTML(this.textarea.join('')));
      this.textarea = null;
    }
    if (BLOCK.has(name) && this.skip === 0) this.text.push(' ');
    if (name === 'noscript' || (BLOCK.has(name) && this.inFallback())) this.fallback.push(' ');
  }

  ontext(data: string): void {
    if (this.textarea !== null) {
      if (this.skip === 0) this.textarea.push(data);
    } else if (this.inTitle) this.title.push(data);
    else if (this.skip === 0) this.text.push(data);
    else if (this.inFallback()) this.fallback.push(data);
  }

  /** Inside `<noscript>` and nothing else that leaves text out (a removed header, a script). */
  private inFallback(): boolean {
    return this.noscript > 0 && this.skip === this.noscript;
  }

  /** Links (seed 002 patterns), base, canonical and meta. */
  private collect(name: string, a: Attribs): void {
    const attrs = LINK_ATTRS.get(name);
    if (attrs !== undefined) {
      // A link the page asks not to follow (rel=nofollow on a or area) is left out, unless the same
      // href is followed from elsewhere on the page.
      if (this.honorRelNofollow && name !== 'frame' && name !== 'iframe' && hasToken(a.rel, 'nofollow')) {
        const href = a.href;
        if (href !== undefined && href.trim() !== '' && !this.seenHrefs.has(href))
          this.nofollowHrefs.add(href);
        return;
      }
      for (const attr of attrs) this.addHref(a[attr]);
    } else if (name === 'meta') this.addMeta(a);
    else if (name === 'html' && this.htmlLang === null) this.htmlLang = a.lang ?? a['xml:lang'] ?? null;
    else if (name === 'base' && this.base === null) this.base = a.href ?? null;
    else if (name === 'link' && a.href) this.linkElement(a.href, a);
  }

  /**
   * `<link>`: the page's canonical (the first), and the language versions it names (`rel=alternate`
   * with `hreflang`, as search engines read them), which are links: a site whose language switcher
   * is a script had its other languages found nowhere else.
   */
  private linkElement(href: string, a: Attribs): void {
    if (hasToken(a.rel, 'canonical')) this.canonical ??= href;
    else if (a.hreflang !== undefined && hasToken(a.rel, 'alternate')) this.addHref(href);
  }

  private addHref(href: string | undefined): void {
    // Links inside removed elements are still followed (seed 004).
    if (href === undefined || this.seenHrefs.has(href)) return;
    this.seenHrefs.add(href);
    this.nofollowHrefs.delete(href);
    if (href.trim() !== '') this.hrefs.push(href);
  }

  /** Seed 004: attributes name and property both result in metadata; repeated names accumulate. */
  private addMeta(a: Attribs): void {
    if (a.content === undefined) return;
    // A refresh to another URL is how many sites (intranets above all) redirect without a 3xx:
    // its target is a link of the page, as crawlers from Heritrix to StormCrawler take it.
    // Not one inside <noscript>: a server-rendered page's "enable JavaScript" fallback (a single-page
    // app's, a site builder's) made the page a redirect to that notice (helper-48).
    if (a['http-equiv']?.trim().toLowerCase() === 'refresh' && this.noscript === 0) {
      const target = refreshTarget(a.content);
      this.addHref(target ?? undefined);
      if (target && !this.refresh) this.refresh = { seconds: Number.parseFloat(a.content), target };
    }
    // Whitespace collapsed, as the description's and the text's (a value spread over lines of markup).
    const value = a.content.replace(/\s+/g, ' ').trim();
    const equiv = a['http-equiv']?.trim().toLowerCase();
    if (equiv === 'content-language') this.metaLang ??= value;
    const name = a.name?.trim().toLowerCase();
    if (name === 'robots' || (name !== undefined && name === this.agent))
      this.robotsMeta.push({ name, content: value });
    // name, property and (microdata) itemprop are the page's metadata; an http-equiv is a header
    // the page states (`last-modified`), mapped when the config names it. A meta whose names map
    // to one field counts once.
    const keys = new Set([name, a.property?.trim().toLowerCase(), a.itemprop?.trim().toLowerCase()]);
    const equivOnly = equiv !== undefined && !keys.has(equiv) ? equiv : undefined;
    let mappedTo: string | undefined;
    for (const key of [...keys, equivOnly]) {
      if (!key) continue;
      if (key !== equivOnly) push(this.rawMeta, key, value);
      const field = this.mapping.get(key);
      if (field !== undefined && field !== mappedTo) push(this.mapped, field, value);
      mappedTo = field ?? mappedTo;
    }
  }

  private hasRemovedClass(cls: string | undefined): boolean {
    if (cls === undefined || this.removeClasses.length === 0) return false;
    const lower = cls.toLowerCase();
    for (const rc of this.removeClasses) {
      if (lower.includes(rc) && lower.split(/\s+/).includes(rc)) return true;
    }
    return false;
  }
}

/**
 * The URL of a `<meta http-equiv="refresh" content="5; url='…'">`, as the HTML standard's shared
 * declarative refresh steps read it: a time (digits and dots), then `;` or `,`, then the URL, with
 * or without `url=` and quotes; null for a refresh of the page itself or content that is not one.
 */
export function refreshTarget(content: string): string | null {
  const m = /^[\t\n\f\r ]*[0-9.]+[\t\n\f\r ]*[;,]?[\t\n\f\r ]*(?:url[\t\n\f\r ]*=[\t\n\f\r ]*)?(.*)$/is.exec(
    content,
  );
  let url = m?.[1] ?? '';
  const quote = url[0];
  if (quote === '"' || quote === "'") {
    const end = url.indexOf(quote, 1);
    url = url.slice(1, end < 0 ? undefined : end);
  }
  url = url.trim();
  return url === '' ? null : url;
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function hasToken(list: string | undefined, token: string): boolean {
  return list?.toLowerCase().split(/\s+/).includes(token) ?? false;
}

/** Resolves href against base, keeps crawlable URLs only and strips the #fragment (seed 003). */
function resolveLink(href: string, base: string | undefined): string | null {
  const u = URL.parse(href, base);
  if (u === null || DROPPED_SCHEMES.has(u.protocol)) return null;
  if (u.host === '' && !u.pathname.startsWith('/')) return null; // other opaque URIs (urn:, sms:…)
  u.hash = '';
  return u.href;
}

/**
 * The canonical URL a `Link: <…>; rel="canonical"` header names (RFC 8288; how a PDF or any other
 * non-HTML document names its canonical, as Google reads it), resolved against `url`; else null.
 */
export function headerCanonical(headers: Record<string, string> | undefined, url: string): string | null {
  const value = headerValue(headers ?? {}, 'link') ?? '';
  // Several links, comma-separated: `<a>; rel="canonical", <b>; rel="alternate"; hreflang="de"`.
  for (const [, target = '', params = ''] of value.matchAll(/<([^>]*)>([^<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params);
    const rels = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (rels.includes('canonical')) return resolveLink(target.trim(), url);
  }
  return null;
}

function refreshOf(
  refresh: { seconds: number; target: string } | null,
  base: string,
): HtmlExtraction['refresh'] {
  const target = refresh ? resolveLink(refresh.target, URL.canParse(base) ? base : undefined) : null;
  return refresh && target ? { seconds: refresh.seconds, target } : null;
}

function resolveLinks(hrefs: string[], base: string | undefined): string[] {
  const out = new Set<string>();
  for (const href of hrefs) {
    const abs = resolveLink(href, base);
    if (abs !== null) out.add(abs);
  }
  return [...out];
}

/** Seed 004 title fallback: metadata titles, then the cleaned last URL path segment, then the host. */
function fallbackTitle(url: string, rawMeta: Map<string, string[]>, path?: string): string {
  return firstMeta(rawMeta, TITLE_META) ?? titleFromUrl(url, path);
}

/**
 * Seed 004's last resort for any document: the last URL path segment, `-` and `_` as spaces, else
 * the host. `path` stands for the URL's path where that is not where the name is: an archive
 * element's entry path (`<archive url>/<entry>`, whose URL path is the archive's when the archive's
 * URL has a query: `/download?id=7/guide.txt` is "guide", not "download").
 */
export function titleFromUrl(url: string, path?: string): string {
  const u = URL.parse(url);
  if (u === null) return '';
  const segment = (path ?? u.pathname).split('/').findLast((s) => s !== '') ?? '';
  // An archive entry's name (`path`) is as the archive wrote it, not percent-encoded: `pct%41.txt`
  // is that name, not `pctA` (an audit).
  const name = collapse(
    (path === undefined ? safeDecode(segment) : segment)
      .replace(/\.[a-z0-9]{1,8}$/i, '')
      .replace(/[-_]+/g, ' '),
  );
  return name !== '' ? name : u.hostname;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Splits an X-Robots-Tag value into the directives that apply to this crawler: those for every
 * crawler, and those after its own token (`trawl: nofollow`); other crawlers' are skipped. A user
 * agent's prefix covers the rest of its own header only (the fetcher keeps repeated headers apart
 * with line breaks), and only a product token is one: the comma of `unavailable_after: Friday,
 * 25-Jun-2010 15:00:00 GMT` does not make `25-jun-2010 15` an agent.
 */
function headerDirectives(value: string, self: string | null): string[] {
  const out: string[] = [];
  for (const header of value.toLowerCase().split('\n')) {
    let agent: string | null = null;
    for (const part of header.split(',')) {
      let token = part.trim();
      const colon = token.indexOf(':');
      const name = colon > 0 ? token.slice(0, colon).trim() : '';
      if (colon > 0 && !VALUED.has(name) && (name === '*' || PRODUCT_TOKEN.test(name))) {
        agent = name;
        token = token.slice(colon + 1).trim();
      }
      if (agent === null || agent === '*' || agent === self) out.push(token);
    }
  }
  return out;
}

/**
 * The time an `unavailable_after: DATE` directive names (epoch ms), or null: Google drops a page
 * after it (an expired event or job posting). Directives are comma-separated, and so may the date
 * be (`Friday, 25-Jun-2010 15:00:00 PST`): the longest run of parts that is a date with a year.
 */
export function unavailableAfter(directives: string[]): number | null {
  const at = directives.findIndex((d) => /^\s*unavailable_after\s*:/.test(d));
  if (at < 0) return null;
  const first = directives[at] ?? '';
  const parts = [first.slice(first.indexOf(':') + 1), ...directives.slice(at + 1, at + 3)];
  for (let n = parts.length; n >= 1; n--) {
    const text = parts.slice(0, n).join(',').trim();
    const t = /\d{4}/.test(text) ? Date.parse(text) : Number.NaN;
    if (!Number.isNaN(t)) return t;
  }
  return null;
}

/** A user agent's product token (RFC 9309 §2.2.1: letters, `_` and `-`; digits as crawlers' names have them). */
const PRODUCT_TOKEN = /^[a-z][a-z0-9_-]*$/;

/** Applies noindex / nofollow / none (case-insensitive, seed 004); index, follow and all change nothing. */
function applyDirectives(directives: string[], robots: { index: boolean; follow: boolean }): boolean {
  let restricted = false;
  for (const d of directives) {
    if (d === 'noindex' || d === 'none') robots.index = false;
    if (d === 'nofollow' || d === 'none') robots.follow = false;
    if (d === 'noindex' || d === 'nofollow' || d === 'none') restricted = true;
  }
  return restricted;
}

function decideRobots(
  metas: { name: string; content: string }[],
  headers: Record<string, string> | undefined,
  ignoredBy: string | null,
  agent: string | null,
  /** the fetch's time (epoch ms): an `unavailable_after` date passed by then is a noindex */
  now: number | undefined,
): HtmlExtraction['robots'] {
  const decision = { index: true, follow: true };
  const source: string[] = [];
  const expired = (parts: string[]) => {
    const after = unavailableAfter(parts);
    return after !== null && now !== undefined && after <= now;
  };
  for (const { name, content } of metas) {
    const lower = content.toLowerCase();
    const restricted = applyDirectives(lower.split(/[\s,]+/), decision);
    const gone = expired(lower.split(','));
    if (gone) decision.index = false;
    if (restricted || gone) source.push(`meta ${name}: ${content}`);
  }
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() !== 'x-robots-tag') continue;
    const directives = headerDirectives(value, agent);
    const restricted = applyDirectives(directives, decision);
    const gone = expired(directives);
    if (gone) decision.index = false;
    if (restricted || gone) source.push(`X-Robots-Tag: ${value.replaceAll('\n', '; ')}`);
  }
  // Seed 002 Rogue (or honorMetaRobots: false) ignores the exclusion standard: both stay true.
  if (ignoredBy !== null) return { index: true, follow: true, source: source.length > 0 ? [ignoredBy] : [] };
  return { ...decision, source };
}

function toMetaRecord(mapped: Map<string, string[]>): Record<string, string | string[]> {
  return Object.fromEntries([...mapped].map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
}

function createCollector(options: CrawlConfig['extract'], rogue: boolean, agent: string | null): Collector {
  const removeTags = new Set(options.removeElements.map((t) => t.toLowerCase()));
  const removeClasses = options.removeClasses.map((c) => c.toLowerCase());
  const entries = Object.entries(options.metadataMapping);
  const mapping = new Map(entries.map(([k, v]) => [k.trim().toLowerCase(), v]));
  return new Collector(removeTags, removeClasses, mapping, options.honorRelNofollow && !rogue, agent);
}

/** The robots token an `X-Robots-Tag: NAME: …` must name to be ours; `robots` itself is no crawler's. */
function ownAgent(agent: string | undefined): string | null {
  const token = agent?.trim().toLowerCase() || null;
  return token === 'robots' ? null : token;
}

/** Who sets the exclusion standard aside: Rogue mode (seed 002), `honorMetaRobots: false`, or nobody (null). */
function robotsIgnoredBy(
  options: Pick<CrawlConfig['extract'], 'honorMetaRobots'>,
  rogue: boolean,
): string | null {
  return rogue ? 'rogue' : options.honorMetaRobots ? null : 'honorMetaRobots: false';
}

/**
 * What a response's `X-Robots-Tag` headers say of a document that is not HTML (a PDF, a text file):
 * the only way such a document says `noindex`. As for HTML, ignored in Rogue mode and with
 * `honorMetaRobots: false`.
 */
export function headerRobots(
  headers: Record<string, string> | undefined,
  options: Pick<CrawlConfig['extract'], 'honorMetaRobots'>,
  rogue: boolean,
  agent: string | undefined,
  now?: number,
): HtmlExtraction['robots'] {
  return decideRobots([], headers, robotsIgnoredBy(options, rogue), ownAgent(agent), now);
}

/** Extracts links, canonical, robots, title, visible text and metadata from one HTML page in a single pass. */
export function extractHtml(input: ExtractHtmlInput): HtmlExtraction {
  const agent = ownAgent(input.agent);
  const c = createCollector(input.options, input.rogue === true, agent);
  const parser = boundedParser(c, { decodeEntities: true });
  parser.end(input.html);
  const encoder = queryEncoder(input.charset);
  const encode = encoder ?? ((href: string) => href);
  const base = (c.base !== null ? resolveLink(encode(c.base), input.url) : null) ?? input.url;
  const title = collapse(c.title.join(''));
  return {
    links: resolveLinks(encoder ? c.hrefs.map(encoder) : c.hrefs, URL.canParse(base) ? base : undefined),
    nofollowLinks: c.nofollowHrefs.size,
    nofollowSample: [...c.nofollowHrefs]
      .slice(0, NOFOLLOW_SAMPLE)
      .map((href) => resolveLink(encode(href), URL.canParse(base) ? base : input.url) ?? href),
    canonical:
      c.canonical !== null
        ? resolveLink(encode(c.canonical), base)
        : headerCanonical(input.headers, input.url),
    refresh: refreshOf(c.refresh && { ...c.refresh, target: encode(c.refresh.target) }, base),
    robots: decideRobots(
      c.robotsMeta,
      input.headers,
      robotsIgnoredBy(input.options, input.rogue === true),
      agent,
      input.now,
    ),
    title: title !== '' ? title : fallbackTitle(input.url, c.rawMeta, input.titlePath),
    content: collapse(c.text.join('')) || collapse(c.fallback.join('')),
    meta: toMetaRecord(c.mapped),
    rawMeta: Object.fromEntries(c.rawMeta),
    description: firstMeta(c.rawMeta, DESCRIPTION_META),
    // An empty `lang` says the language is unknown (HTML): no other source is asked.
    language:
      c.htmlLang?.trim() === ''
        ? null
        : (languageTag(c.htmlLang) ?? languageTag(c.metaLang) ?? headerLanguage(input.headers)),
  };
}

/** The first of `keys` (metadata names, lower-cased) with a value that is not blank, collapsed; else null. */
function firstMeta(rawMeta: Map<string, string[]>, keys: string[]): string | null {
  for (const key of keys) {
    const value = rawMeta.get(key)?.find((v) => v.trim() !== '');
    if (value !== undefined) return collapse(value);
  }
  return null;
}
