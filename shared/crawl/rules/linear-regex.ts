/**
 * User regular expressions (rules, scope include/exclude) run on RE2 semantics (re2js, a pure-JS
 * port of RE2/J): matching time is linear in the input, so a pattern like `(a+)+$` cannot hang a
 * fetch or extract worker on a long URL, as it does on JavaScript's backtracking engine.
 * What RE2 cannot express (backreferences, lookaround) is refused when the config loads.
 */
import { RE2JS } from 're2js';

/** A compiled user pattern: unanchored search, as `RegExp.prototype.test`. */
export interface LinearRegex {
  readonly source: string;
  test(text: string): boolean;
}

/**
 * Compiles `source` for linear-time matching; throws an Error whose message says why a
 * pattern is refused (the caller adds the config field path).
 */
export function compileLinearRegex(source: string, ignoreCase = false): LinearRegex {
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (err) {
    throw new Error(refusalReason(source, (err as Error).message));
  }
  return { source, test: (text) => re.test(text) };
}

/** Whether `source` compiles for linear-time matching; the reason when it does not. */
export function linearRegexProblem(source: string): string | null {
  try {
    compileLinearRegex(source);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

const LOOKAROUND = /\(\?<?[=!]/;
const BACKREFERENCE = /\\[1-9]|\\k</;

function refusalReason(source: string, engineMessage: string): string {
  // re2js reports a lookbehind as a bad named group and a backreference as a bad escape: say what they are
  if (LOOKAROUND.test(source))
    return 'lookaround ((?=, (?!, (?<=, (?<!) is not supported: patterns run on a linear-time engine (RE2 syntax)';
  if (BACKREFERENCE.test(source))
    return 'backreferences (\\1, \\k<name>) are not supported: patterns run on a linear-time engine (RE2 syntax)';
  return `${engineMessage.replace(/^error parsing regexp: /, '')} (RE2 syntax)`;
}
