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
  const visible = MAYBE_INVISIBLE.test(text) ? text.replace(INVISIBLE, '') : text;
  return visible.replace(/\s+/g, ' ').trim();
}
