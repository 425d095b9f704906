/**
 * URL normalization (seed 003, SMILA "Filter patterns and normalization"): URLs are normalized
 * before any filter or crawl rule sees them. Built on the WHATWG URL parser, which already makes
 * relative URLs absolute, removes dot segments, lower-cases scheme and host, converts IDN hosts to
 * punycode and drops default ports; this module adds the crawler-commons percent-encoding rules,
 * drops fragments, user info and empty queries, and applies seed 004's query-string filter.
 */

/** Why a URL could not be normalized: unparsable, or an opaque URI SMILA filters out. */
export type UnnormalizableReason = 'malformed-url' | 'opaque-url';

export interface NormalizeUrlOptions {
  /** seed 004 calendar-trap filter: null keeps every query parameter, a list keeps only those */
  keepQueryParams?: string[] | null;
  /** drop session ids from paths (`;jsessionid=…`) and queries (`PHPSESSID=…`); @default true */
  stripSessionIds?: boolean;
}

export type NormalizeResult = { url: string } | { reason: UnnormalizableReason };

/** Seed 003: "'opaque' URIs can not be handled and will be filtered out (javascript:, mailto:)". */
const OPAQUE_SCHEMES = new Set(['javascript', 'mailto', 'data', 'tel', 'vbscript', 'about', 'sms', 'urn']);
const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
/** RFC 3986 2.3 unreserved characters: percent-encoded forms are equivalent and get decoded. */
const UNRESERVED = /[A-Za-z0-9\-._~]/;
/** Characters RFC 3986 allows unencoded in a path or query (besides `%` of a valid escape). */
const ALLOWED = /[A-Za-z0-9\-._~!$&'()*+,;=:@/?]/;

/** Normalizes `href` (resolved against `base`); null when it is malformed or opaque. */
export function normalizeUrl(href: string, base?: string, opts: NormalizeUrlOptions = {}): string | null {
  const result = normalizeUrlDetailed(href, base, opts);
  return 'url' in result ? result.url : null;
}

/** Like normalizeUrl, but says why a URL was dropped (`malformed-url` or `opaque-url`). */
export function normalizeUrlDetailed(
  href: string,
  base?: string,
  opts: NormalizeUrlOptions = {},
): NormalizeResult {
  const trimmed = href.trim();
  const scheme = SCHEME.exec(trimmed)?.[1]?.toLowerCase();
  if (scheme && OPAQUE_SCHEMES.has(scheme)) return { reason: 'opaque-url' };
  let url: URL;
  try {
    url = base === undefined ? new URL(trimmed) : new URL(trimmed, base);
  } catch {
    return { reason: 'malformed-url' };
  }
  // A path that does not start with "/" is an opaque path (WHATWG): not hierarchical, not crawlable.
  if (!url.pathname.startsWith('/')) return { reason: 'opaque-url' };
  try {
    return { url: serialize(url, opts.keepQueryParams ?? null, opts.stripSessionIds ?? true) };
  } catch {
    return { reason: 'malformed-url' };
  }
}

function serialize(url: URL, keepQueryParams: string[] | null, stripSessionIds: boolean): string {
  url.hash = '';
  // user info never identifies a different document; keep credentials out of the frontier and index
  url.username = '';
  url.password = '';
  // "www.example.org." and "www.example.org" are the same host (crawler-commons); every trailing dot
  // goes, so normalizing a normalized URL changes nothing ("a.test.." once gave "a.test.", then "a.test")
  if (url.hostname.endsWith('.') && !url.hostname.startsWith('['))
    url.hostname = url.hostname.replace(/\.+$/, '');
  // Checked cheaply first: this runs for every link of every page.
  const path =
    stripSessionIds && url.pathname.includes(';') ? url.pathname.replace(PATH_SESSION_ID, '') : url.pathname;
  url.pathname = normalizePercentEncoding(path);
  let query = filterQuery(url.search.slice(1), keepQueryParams);
  if (stripSessionIds && SESSION_HINT.test(query)) query = dropSessionParams(query);
  url.search = query === '' ? '' : `?${normalizePercentEncoding(query)}`;
  // WHATWG keeps a lone "?" when search is set to ""; the href without it is the normalized form.
  return url.href.endsWith('?') ? url.href.slice(0, -1) : url.href;
}

/**
 * crawler-commons BasicURLNormalizer: decode escapes of unreserved characters, upper-case the hex
 * of the others, escape a `%` that starts no valid escape, and escape characters RFC 3986 forbids,
 * non-ASCII ones as their UTF-8 bytes: a path or query as a person types it ("/café", "q=a b")
 * comes out as the normalized URL carries it ("/caf%C3%A9", "q=a%20b"), so rule values match.
 */
export function normalizePercentEncoding(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '%') {
      const hex = text.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        const decoded = String.fromCharCode(Number.parseInt(hex, 16));
        out += UNRESERVED.test(decoded) ? decoded : `%${hex.toUpperCase()}`;
        i += 2;
      } else {
        out += '%25';
      }
    } else if (ALLOWED.test(ch)) {
      out += ch;
    } else {
      // A character outside ASCII is taken whole: a surrogate pair is one character.
      const whole = String.fromCodePoint(text.codePointAt(i)!);
      i += whole.length - 1;
      try {
        out += encodeURIComponent(whole).toUpperCase();
      } catch {
        out += whole; // a lone surrogate: no URL holds one
      }
    }
  }
  return out;
}

/**
 * Session ids (Heritrix's StripSessionIDs, Nutch's regex-normalize): a server that tracks sessions
 * in URLs gives every visit new links to the same pages, an endless crawl of copies. A path
 * parameter (`/cart.html;jsessionid=…`) of these names goes whatever its value; in a query,
 * `jsessionid`, `phpsessid`, `sessionid`, `aspsessionid…`, `cfid` and `cftoken` go, and `sid`
 * when its value looks like one (16 or more letters and digits).
 */
const PATH_SESSION_ID = /;(?:jsessionid|phpsessid|sessionid|sid|aspsessionid[a-z]*)=[^/;]*/gi;
const SESSION_PARAM = /^(?:jsessionid|phpsessid|sessionid|aspsessionid[a-z]{0,8}|cfid|cftoken)$/i;
/** A query that may hold one (most hold none: the split is skipped). */
const SESSION_HINT = /sessionid|sessid|sid=|cfid|cftoken/i;

function dropSessionParams(query: string): string {
  return keepParams(
    query,
    (name, value) =>
      !SESSION_PARAM.test(name) && !(name.toLowerCase() === 'sid' && /^[0-9A-Za-z]{16,}$/.test(value)),
  );
}

/** Seed 004: keep only the listed query parameters (by name), in their original order. */
function filterQuery(query: string, keep: string[] | null): string {
  if (keep === null) return query;
  const wanted = new Set(keep);
  return keepParams(query, (name) => wanted.has(name));
}

/** The `name=value` pairs of a query for which `keep` says yes (given the decoded name, the raw value). */
function keepParams(query: string, keep: (name: string, value: string) => boolean): string {
  if (query === '') return query;
  return query
    .split('&')
    .filter((pair) => {
      const eq = pair.indexOf('=');
      return keep(safeDecode(eq < 0 ? pair : pair.slice(0, eq)), eq < 0 ? '' : pair.slice(eq + 1));
    })
    .join('&');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** Removes the `#fragment` of a URL (seed 003: "fragments will be removed"). */
export function stripFragment(url: string): string {
  const hash = url.indexOf('#');
  return hash === -1 ? url : url.slice(0, hash);
}

/**
 * A host name as normalized URLs carry it: IDN to punycode, lower case, no trailing dots
 * ("BÜCHER.test." → "xn--bcher-kva.test"); a leading dot is kept (a domain suffix). Text that is no
 * host name is returned as it is.
 */
export function normalizeHostname(text: string): string {
  const lead = text.startsWith('.') ? '.' : '';
  const host = URL.parse(`http://${text.slice(lead.length)}/`)?.hostname;
  return host ? lead + host.replace(/\.+$/, '') : text;
}
