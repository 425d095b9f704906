/**
 * robots.txt lexing (RFC 9309 §2.2, §2.5), following the logic of Google's open-source parser
 * (github.com/google/robotstxt, robots.cc): byte-oriented, lenient about typos, a missing colon,
 * line endings and byte order marks. Turns the file into `key: value` directives.
 */

/** The kinds of line the parser recognizes; anything else is `unknown`. */
export type RobotsKey = 'user-agent' | 'allow' | 'disallow' | 'sitemap' | 'crawl-delay' | 'unknown';

/** One `key: value` line; `value` is a binary string (one char per byte), escaped for rules. */
export interface RobotsDirective {
  readonly line: number;
  readonly key: RobotsKey;
  readonly value: string;
}

/** RFC 9309 §2.5: parse at least 500 KiB; like Google, content beyond that is ignored. */
export const MAX_ROBOTS_BYTES = 500 * 1024;

/** robots.cc kMaxLineLen (2083 * 8) minus the terminating NUL: longer lines are truncated. */
const MAX_LINE_BYTES = 2083 * 8 - 1;
const UTF8_BOM = [0xef, 0xbb, 0xbf];
/** absl::ascii_isspace; JavaScript's `\s` would also match 0xA0, a UTF-8 continuation byte. */
const SPACE_RUN = /^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g;

/** Google accepts these frequent typos (robots.cc kAllowFrequentTypos); keys match by prefix. */
const KEY_PREFIXES: readonly (readonly [RobotsKey, readonly string[]])[] = [
  ['user-agent', ['user-agent', 'useragent', 'user agent']],
  ['allow', ['allow']],
  ['disallow', ['disallow', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw']],
  ['sitemap', ['sitemap', 'site-map']],
  ['crawl-delay', ['crawl-delay', 'crawldelay', 'crawl delay']],
];

/** Lower-cases ASCII letters only (`toLowerCase` maps e.g. the Kelvin sign to `k`). */
export function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** UTF-8 bytes of the content, cut at the RFC 9309 §2.5 parsing limit. */
export function robotsBytes(content: string | Uint8Array): Uint8Array {
  if (typeof content !== 'string') return content.subarray(0, MAX_ROBOTS_BYTES);
  // Every char is at least one byte; one more char keeps a surrogate pair at the limit whole.
  const head = content.length > MAX_ROBOTS_BYTES ? content.slice(0, MAX_ROBOTS_BYTES + 1) : content;
  return new TextEncoder().encode(head).subarray(0, MAX_ROBOTS_BYTES);
}

/** The bytes as a binary string: one char (U+0000–U+00FF) per byte, as robots.cc sees them. */
function binaryFromBytes(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return out;
}

/** Bytes [start, end) as a binary string, truncated like robots.cc: at the line limit or a NUL. */
function binaryLine(bytes: Uint8Array, start: number, end: number): string {
  const slice = bytes.subarray(start, Math.min(end, start + MAX_LINE_BYTES));
  const nul = slice.indexOf(0);
  return binaryFromBytes(nul === -1 ? slice : slice.subarray(0, nul));
}

/** Calls `onLine` per line: LF, CR and CRLF all end a line; a leading (partial) UTF-8 BOM is skipped. */
export function forEachRobotsLine(bytes: Uint8Array, onLine: (line: number, text: string) => void): void {
  let start = 0;
  while (start < UTF8_BOM.length && bytes[start] === UTF8_BOM[start]) start++;
  let num = 0;
  let lastWasCr = false;
  for (let i = start; i < bytes.length; i++) {
    const ch = bytes[i];
    if (ch !== 0x0a && ch !== 0x0d) continue;
    // The LF of a CRLF pair does not end a second, empty line.
    if (!(i === start && lastWasCr && ch === 0x0a)) onLine(++num, binaryLine(bytes, start, i));
    start = i + 1;
    lastWasCr = ch === 0x0d;
  }
  onLine(++num, binaryLine(bytes, start, bytes.length));
}

function strip(s: string): string {
  return s.replace(SPACE_RUN, '');
}

/** `<key>[ \t]*:[ \t]*<value>` (RFC 9309 §2.2 ABNF) after dropping the `#` comment; null if no key. */
export function splitRobotsLine(raw: string): [key: string, value: string] | null {
  const hash = raw.indexOf('#');
  const line = strip(hash === -1 ? raw : raw.slice(0, hash));
  let sep = line.indexOf(':');
  if (sep === -1) {
    // Google: a forgotten colon is accepted when whitespace separates exactly two tokens.
    sep = line.search(/[ \t]/);
    if (sep === -1 || /[ \t]/.test(line.slice(sep).replace(/^[ \t]+/, ''))) return null;
  }
  const key = strip(line.slice(0, sep));
  return key === '' ? null : [key, strip(line.slice(sep + 1))];
}

/** Classifies a key case-insensitively by prefix, as robots.cc does (`Disallow-foo` is a disallow). */
export function classifyKey(key: string): RobotsKey {
  const lower = asciiLower(key);
  for (const [kind, prefixes] of KEY_PREFIXES) {
    if (prefixes.some((p) => lower.startsWith(p))) return kind;
  }
  return 'unknown';
}

function isHex(c: string | undefined): boolean {
  return c !== undefined && /^[0-9A-Fa-f]$/.test(c);
}

/**
 * RFC 9309 §2.2.2 / robots.cc MaybeEscapePattern on a binary string: bytes >= 0x80 become `%XX`
 * and existing escapes are upper-cased, so patterns compare with percent-encoded URLs.
 */
export function escapePatternBinary(src: string): string {
  let out = '';
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (src[i] === '%' && isHex(src[i + 1]) && isHex(src[i + 2])) {
      out += `%${src.slice(i + 1, i + 3).toUpperCase()}`;
      i += 2;
    } else if (c >= 0x80) {
      out += `%${c.toString(16).toUpperCase().padStart(2, '0')}`;
    } else {
      out += src[i];
    }
  }
  return out;
}

/** Percent-encoding normalization of a rule pattern given as a (Unicode) string. */
export function escapePattern(pattern: string): string {
  return escapePatternBinary(binaryFromBytes(new TextEncoder().encode(pattern)));
}

/** Decodes a binary string (one char per byte) as UTF-8. */
export function utf8FromBinary(binary: string): string {
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

/** Every `key: value` line of the file, in order; allow/disallow values are escaped (§2.2.2). */
export function forEachRobotsDirective(
  content: string | Uint8Array,
  onDirective: (directive: RobotsDirective) => void,
): void {
  forEachRobotsLine(robotsBytes(content), (line, text) => {
    const kv = splitRobotsLine(text);
    if (kv === null) return;
    const key = classifyKey(kv[0]);
    const value = key === 'allow' || key === 'disallow' ? escapePatternBinary(kv[1]) : kv[1];
    onDirective({ line, key, value });
  });
}
