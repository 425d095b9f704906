/** The text a document is indexed with: what a reader sees, in single-spaced words. */

/**
 * What no reader sees and no search should split or keep a word on: controls other than
 * whitespace (a NUL, an escape) and default-ignorable characters (soft hyphens, zero-width
 * spaces and joiners, bidi controls, variation selectors). A German page hyphenated with `&shy;`
 * indexed "inter\u00adnational", which a search for "international" does not find.
 */
const INVISIBLE = /(?![\t\n\v\f\r])[\p{Cc}\p{Default_Ignorable_Code_Point}]/gu;

/**
 * A cheap first look for them (no Unicode-property matching): the code units that start every
 * character INVISIBLE takes, astral ones by their lead surrogates. Most pages have none.
 */
const MAYBE_INVISIBLE = new RegExp(
  '[\\x00-\\x08\\x0e-\\x1f\\x7f-\\x9f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f' +
    '\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufff8' +
    '\\ud82f\\ud834\\udb40-\\udb43]',
);

/** Invisible characters dropped, whitespace runs to single spaces, trimmed: how every text is indexed. */
export function collapse(text: string): string {
  return squeeze(text, false, MAYBE_INVISIBLE.test(text));
}

/** MAYBE_INVISIBLE for one code unit. */
function mayStartInvisible(c: number): boolean {
  if (c < 0x20) return c < 9 || c > 13;
  if (c < 0x7f) return false;
  return (
    c <= 0x9f ||
    c === 0xad ||
    c === 0x34f ||
    c === 0x61c ||
    c === 0x115f ||
    c === 0x1160 ||
    c === 0x17b4 ||
    c === 0x17b5 ||
    (c >= 0x180b && c <= 0x180f) ||
    (c >= 0x200b && c <= 0x200f) ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x206f) ||
    c === 0x3164 ||
    (c >= 0xfe00 && c <= 0xfe0f) ||
    c === 0xfeff ||
    c === 0xffa0 ||
    (c >= 0xfff0 && c <= 0xfff8) ||
    c === 0xd82f ||
    c === 0xd834 ||
    (c >= 0xdb40 && c <= 0xdb43)
  );
}

/** INVISIBLE for one character. */
const INVISIBLE_ONE = new RegExp(`^${INVISIBLE.source}$`, 'u');
const invisibleSeen = new Map<number, boolean>();

/** Whether the code point is one INVISIBLE takes (each answer kept: few code points recur). */
function isInvisible(cp: number): boolean {
  let known = invisibleSeen.get(cp);
  if (known === undefined) {
    known = INVISIBLE_ONE.test(String.fromCodePoint(cp));
    if (invisibleSeen.size < 4096) invisibleSeen.set(cp, known);
  }
  return known;
}

/** Whether a UTF-16 code unit is white space as a regular expression's `\s` is. */
function isSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * `text.replace(/\s+/g, ' ').trim()` in one pass over the code units, optionally with each run
 * of ASCII digits counted as white space too. The regular expression made a part per match: on a
 * 10 MB page of short words (3.5 million spaces) it took 0.9 s and 412 MB, and an extract
 * invocation with two such pages ran out of memory (a hostile-server audit).
 */
export function squeeze(text: string, digitsAsSpace = false, dropInvisible = false): string {
  const out = new Uint16Array(text.length);
  let n = 0;
  let gap = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Invisible characters (collapse): dropped before the white space is read, as the replace
    // that did it (297 MB for 5 MB of soft-hyphenated text) did.
    if (dropInvisible && mayStartInvisible(c)) {
      const cp = text.codePointAt(i) ?? c;
      if (isInvisible(cp)) {
        if (cp > 0xffff) i++;
        continue;
      }
    }
    if (isSpace(c) || (digitsAsSpace && c >= 48 && c <= 57)) {
      gap = true;
      continue;
    }
    if (gap && n > 0) out[n++] = 32;
    gap = false;
    out[n++] = c;
  }
  return Buffer.from(out.buffer, 0, n * 2).toString('utf16le');
}
