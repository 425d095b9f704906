/** The text a document is indexed with: what a reader sees, in single-spaced words. */

/**
 * What no reader sees and no search should split or keep a word on: controls other than
 * whitespace (a NUL, an escape) and default-ignorable characters (soft hyphens, zero-width
 * spaces and joiners, bidi controls, variation selectors). A German page hyphenated with `&shy;`
 * indexed "inter\u00adnational", which a search for "international" does not find. One character.
 */
const INVISIBLE = /^(?![\t\n\v\f\r])[\p{Cc}\p{Default_Ignorable_Code_Point}]$/u;

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

/**
 * What `pattern` says of one UTF-16 code unit, asked once per unit and kept (a table of the Basic
 * Multilingual Plane: 0 not asked yet, 1 no, 2 yes), so the per-character tests below are the
 * patterns themselves, not copies of their ranges.
 */
function unitTest(pattern: RegExp): (c: number) => boolean {
  const known = new Uint8Array(0x10000);
  return (c) => {
    let answer = known[c] ?? 0;
    if (answer === 0) {
      answer = pattern.test(String.fromCharCode(c)) ? 2 : 1;
      known[c] = answer;
    }
    return answer === 2;
  };
}

/** White space as a regular expression's `\s` reads it. */
const isSpace = unitTest(/^\s$/);
/** MAYBE_INVISIBLE, for one code unit. */
const mayStartInvisible = unitTest(MAYBE_INVISIBLE);
/** INVISIBLE, for a character of the Basic Multilingual Plane. */
const isInvisibleUnit = unitTest(INVISIBLE);

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
      if (cp > 0xffff ? INVISIBLE.test(String.fromCodePoint(cp)) : isInvisibleUnit(c)) {
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
