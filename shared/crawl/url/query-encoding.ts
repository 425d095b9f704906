/**
 * A link's query in a page of a legacy encoding. The WHATWG URL parser, as a browser runs it on a
 * page's links, percent-encodes a query's non-ASCII characters in the page's encoding, not in
 * UTF-8: `<a href="find?q=日本">` in a Shift_JIS page asks for `find?q=%93%FA%96%7B`, and that is
 * the URL the site answers. A character the encoding has no bytes for becomes its HTML numeric
 * reference (`&#20320;`, percent-encoded), as a browser sends it. Paths and hosts are UTF-8 and
 * punycode in every page; UTF-8 and UTF-16 pages use UTF-8 for the query too.
 */
import iconv from 'iconv-lite';

/** Encodings whose queries are UTF-8 (the URL standard's "get an output encoding"). */
const UTF8_OUTPUT = /^(utf-?8|utf-?16(le|be)?|unicode-1-1-utf-8|replacement)$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is what stays as it is
const NON_ASCII_RUNS = /[^\x00-\x7f]+/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above
const NON_ASCII = /[^\x00-\x7f]/;

/** The percent-encoded bytes of `run` in `charset`; unmappable characters as `%26%23N%3B`. */
function encodeRun(run: string, charset: string): string {
  const whole = iconv.encode(run, charset);
  if (iconv.decode(whole, charset) === run) return percent(whole);
  let out = '';
  for (const ch of run) {
    const bytes = iconv.encode(ch, charset);
    out += iconv.decode(bytes, charset) === ch ? percent(bytes) : `%26%23${ch.codePointAt(0)}%3B`;
  }
  return out;
}

function percent(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/**
 * What a page's hrefs go through before the URL parser: for a legacy encoding iconv-lite knows,
 * each href's query has its non-ASCII characters percent-encoded in that encoding; null for
 * UTF-8, UTF-16 and unknown encodings (the URL parser's UTF-8 is then right).
 */
export function queryEncoder(charset: string | null | undefined): ((href: string) => string) | null {
  const name = charset?.trim().toLowerCase();
  if (!name || UTF8_OUTPUT.test(name) || !iconv.encodingExists(name)) return null;
  return (href) => encodeQueryIn(href, name);
}

function encodeQueryIn(href: string, name: string): string {
  const hash = href.indexOf('#');
  const end = hash < 0 ? href.length : hash;
  const start = href.indexOf('?');
  if (start < 0 || start >= end) return href; // no query, or a `?` in the fragment
  const query = href.slice(start + 1, end);
  if (!NON_ASCII.test(query)) return href;
  const encoded = query.replace(NON_ASCII_RUNS, (run) => encodeRun(run, name));
  return href.slice(0, start + 1) + encoded + href.slice(end);
}
