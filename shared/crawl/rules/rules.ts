/**
 * Crawl rules (seed 001, Exalead "Crawl Rules" and "Crawl Rule Actions"), compiled once from the
 * JSON form (docs/rules.md) or the seed's XML form, then matched against the parts of a URL.
 *
 * - Atom values are regular expressions, anchored as the kind says: exact ^…$, prefix ^…,
 *   suffix …$, inside unanchored; `length` compares the field's length with a range `[a:b]`.
 *   `"literal": true` (the seed's `litteral="true"`) matches the value as a plain string.
 * - norm: omitted = case-insensitive match on the field; `lower` = the field lower-cased, then a
 *   case-sensitive match; `none` = case-sensitive match on the field as given; `norm` = the field of
 *   the normalized URL, case-insensitive.
 * - Shortcut values are literals as users write them ("/cgi-bin", ".gif", "foo.com"); a backslash
 *   escapes the next character, so seed-style escaped values ("foo\.com") mean the same thing.
 */
import type { Rule } from '../../config-rules.ts';
import { ConfigError } from '../../errors.ts';
import type { MetaValue } from '../../types.ts';
import { MAX_DURATION_MS, parseDuration } from '../state/duration.ts';
import { normalizeHostname, normalizePercentEncoding, normalizeUrl } from '../url/normalize-url.ts';
import { compileLinearRegex, type LinearRegex, linearRegexProblem } from './linear-regex.ts';
import { parseXmlRules } from './rules-xml.ts';

export const RULE_FIELDS = ['url', 'scheme', 'host', 'path', 'query'] as const;
export type RuleField = (typeof RULE_FIELDS)[number];
const KINDS = ['exact', 'prefix', 'suffix', 'inside', 'length'] as const;
const NORMS = ['norm', 'lower', 'none'] as const;

/** The parts of an absolute URL that rules look at: scheme without ":", host without port, query without "?". */
export type UrlParts = Record<RuleField, string>;

type Matcher = (parts: UrlParts, normalized: () => UrlParts) => boolean;

/** What a matching rule does (seed 001 actions); null means "not set by this rule". */
export interface RuleActions {
  accept: boolean;
  ignore: boolean;
  index: boolean | null;
  follow: boolean | null;
  source: string | null;
  addMeta: MetaValue[];
  priority: number | null;
  /** adaptive refresh bounds for the URLs the rule matches (ms) */
  refresh: RefreshBounds | null;
  /** the actions as written, for `reason` strings */
  names: string[];
}

export interface CompiledRule {
  /** position in `rules` (the N of error paths `rules.N…` and of reasons `rule N: …`) */
  index: number;
  matches: Matcher;
  actions: RuleActions;
}

/** The rule-visible parts of an absolute URL (no normalization); null when it does not parse. */
export function urlParts(url: string): UrlParts | null {
  try {
    const u = new URL(url);
    return {
      url,
      scheme: u.protocol.slice(0, -1),
      host: u.hostname,
      path: u.pathname,
      query: u.search.slice(1),
    };
  } catch {
    return null;
  }
}

/**
 * Compiles JSON rules or the seed's XML string; throws ConfigError naming the field path. More
 * than `maxRules` (limits.ruleCount) is an error: every URL is tested against every rule.
 */
export function compileRules(rules: Rule[] | string, maxRules = Number.POSITIVE_INFINITY): CompiledRule[] {
  const list: unknown = typeof rules === 'string' ? parseXmlRules(rules) : rules;
  if (!Array.isArray(list)) throw new ConfigError('rules: must be a list of rules or an XML string');
  if (list.length > maxRules) fail('rules', `${list.length} rules, more than limits.ruleCount (${maxRules})`);
  return list.map((rule: unknown, i) => {
    const path = `rules.${i}`;
    if (!isObject(rule)) fail(path, 'must be an object with "match" and "actions"');
    const extra = Object.keys(rule).filter((k) => k !== 'match' && k !== 'actions');
    if (extra.length) fail(path, `unknown key "${extra[0]}"`);
    return {
      index: i,
      matches: compileMatch(rule.match, `${path}.match`),
      actions: compileActions(rule.actions, path),
    };
  });
}

/** True when the rule's match expression matches the URL parts. */
export function matchRule(rule: CompiledRule, parts: UrlParts): boolean {
  let cached: UrlParts | undefined;
  const normalized = () => {
    cached ??= urlParts(normalizeUrl(parts.url) ?? parts.url) ?? parts;
    return cached;
  };
  return rule.matches(parts, normalized);
}

/** Seed 001 evaluation order: the first rule that matches decides; null when none does. */
export function firstMatchingRule(rules: CompiledRule[], parts: UrlParts): CompiledRule | null {
  return rules.find((rule) => matchRule(rule, parts)) ?? null;
}

/** and/or/not nesting beyond this is a config error, not a RangeError from the recursion below. */
export const MAX_RULE_DEPTH = 64;

function compileMatch(match: unknown, path: string, depth = 0): Matcher {
  if (depth > MAX_RULE_DEPTH) fail(path, `nested deeper than ${MAX_RULE_DEPTH} levels`);
  if (!isObject(match)) fail(path, 'must be an object such as {"path": "/docs"}');
  const keys = Object.keys(match);
  if (keys.length !== 1)
    fail(path, `must have exactly one key, found ${keys.length ? keys.join(', ') : 'none'}`);
  const key = keys[0]!;
  const value = match[key];
  const at = `${path}.${key}`;
  switch (key) {
    case 'and':
    case 'or': {
      if (!Array.isArray(value) || value.length === 0) fail(at, 'must be a non-empty list of rules');
      const subs = value.map((sub, i) => compileMatch(sub, `${at}.${i}`, depth + 1));
      return key === 'and' ? (p, n) => subs.every((m) => m(p, n)) : (p, n) => subs.some((m) => m(p, n));
    }
    case 'not': {
      const sub = compileMatch(value, at, depth + 1);
      return (p, n) => !sub(p, n);
    }
    case 'atom':
      return compileAtom(value, at);
    case 'length':
      if (!isObject(value)) fail(at, 'must be {"field": …, "value": "[a:b]"}');
      return compileAtom({ field: value.field, kind: 'length', value: value.value }, at);
    default:
      return compileShortcut(key as ShortcutKey, value, path);
  }
}

type ShortcutKey = 'domain' | 'path' | 'ext' | 'host' | 'url' | 'scheme' | 'query' | 'inQuery';
/** Seed 001 shortcut table: the atom field and kind each shortcut stands for. */
const SHORTCUTS: Record<ShortcutKey, [RuleField, (typeof KINDS)[number]]> = {
  domain: ['host', 'suffix'],
  path: ['path', 'prefix'],
  ext: ['path', 'suffix'],
  host: ['host', 'exact'],
  url: ['url', 'exact'],
  scheme: ['scheme', 'exact'],
  query: ['query', 'exact'],
  inQuery: ['query', 'inside'],
};

function compileShortcut(key: ShortcutKey, value: unknown, path: string): Matcher {
  const at = `${path}.${key}`;
  if (!Object.hasOwn(SHORTCUTS, key)) fail(path, `unknown rule "${key}"`);
  if (typeof value !== 'string') fail(at, 'must be a string');
  const [field, kind] = SHORTCUTS[key];
  // The delimiter a user may write with the value is not part of the field: "http:", "?q=1".
  const text = stripDelimiter(key, unescapeLiteral(value));
  // Rules see normalized URLs, so a value is compared in its normalized form: a Url value whole
  // ("http://A.b" = "http://a.b/"), a host as punycode ("bücher.de"), a path or query with the
  // escapes the URL has ("/café", "q=a b").
  const literal = escapeRegExp(normalizedValue(key, text));
  const asLiteral = compileAtom({ field, kind, value: domainAnchored(key, literal) }, at);
  const asPattern = REGEX_SYNTAX.test(value) ? shortcutPattern(key, value, at) : null;
  return asPattern ? (p, n) => asLiteral(p, n) || asPattern(p, n) : asLiteral;
}

/**
 * Seed 001: Domain "foo.com" matches foo.com and bar.foo.com, not barfoo.com. `source` is a
 * regular expression for the domain itself.
 */
function domainAnchored(key: ShortcutKey, source: string): string {
  return key === 'domain' ? `(?:^|\\.)(?:${source.replace(/^\\\./, '')})` : source;
}

/**
 * What makes a shortcut value a regular expression as well as a string: the syntax no URL part
 * needs written out. A dot and a question mark are left out: in `{"host": "www.foo.com"}` or
 * `{"url": "http://a.com/?id=1"}` they are the characters themselves, as users mean them.
 */
const REGEX_SYNTAX = /[*+[\](){}|^$]|\\./;

/**
 * Seed 001: "For all parts of the url, the val attribute is a regular expression", and a shortcut
 * stands for an atom (`<Path val="/cgi-bin/.*\.pl"/>` is an atom path-prefix). A value written
 * with regular-expression syntax also matches as that atom; one that is no valid pattern is the
 * string alone (`{"path": "/a(b"}`).
 */
function shortcutPattern(key: ShortcutKey, value: string, at: string): Matcher | null {
  const [field, kind] = SHORTCUTS[key];
  try {
    return compileAtom({ field, kind, value: domainAnchored(key, stripDelimiter(key, value)) }, at);
  } catch {
    return null;
  }
}

function stripDelimiter(key: ShortcutKey, text: string): string {
  if (key === 'scheme') return text.replace(/:(\/\/)?$/, '');
  if (key === 'query' || key === 'inQuery') return text.replace(/^\?/, '');
  return text;
}

function normalizedValue(key: ShortcutKey, text: string): string {
  switch (SHORTCUTS[key][0]) {
    case 'url':
      return normalizeUrl(text) ?? text;
    case 'host':
      return normalizeHostname(text);
    case 'path':
    case 'query':
      return normalizePercentEncoding(text);
    default:
      return text;
  }
}

function compileAtom(atom: unknown, path: string): Matcher {
  if (!isObject(atom)) fail(path, 'must be {"field", "kind", "value"[, "norm", "literal"]}');
  const extra = Object.keys(atom).filter((k) => !['field', 'kind', 'norm', 'value', 'literal'].includes(k));
  if (extra.length) fail(`${path}.${extra[0]}`, 'unknown key');
  if (atom.literal !== undefined && typeof atom.literal !== 'boolean')
    fail(`${path}.literal`, 'must be true or false');
  const field = oneOf(atom.field, RULE_FIELDS, `${path}.field`, 'field');
  const kind = oneOf(atom.kind, KINDS, `${path}.kind`, 'kind');
  const norm = atom.norm === undefined ? undefined : oneOf(atom.norm, NORMS, `${path}.norm`, 'norm');
  if (typeof atom.value !== 'string') fail(`${path}.value`, 'must be a string');
  const pick = (p: UrlParts, n: () => UrlParts) => (norm === 'norm' ? n() : p)[field];
  if (kind === 'length') {
    const [min, max] = parseRange(atom.value, `${path}.value`);
    return (p, n) => inRange(pick(p, n).length, min, max);
  }
  // Seed 001 `litteral="true"`: the value is a plain string, its regex characters match themselves
  const source = atom.literal === true ? escapeRegExp(atom.value) : atom.value;
  const ignoreCase = norm !== 'none' && norm !== 'lower';
  const regex = compileRegex(atom.value, anchor(source, kind), ignoreCase, path);
  const lower = norm === 'lower' ? (text: string) => text.toLowerCase() : (text: string) => text;
  if (!WRITTEN_OUT.test(source)) return (p, n) => regex.test(lower(pick(p, n)));
  // A value with letters beyond ASCII is also matched against the field as it reads: escaped,
  // "/CAFÉ" (/CAF%C3%89) and "/café" (/caf%C3%A9) differ in their bytes, not only in case.
  const readable = compileRegex(atom.value, anchor(unescapeUtf8(source), kind), ignoreCase, path);
  return (p, n) => {
    const text = pick(p, n);
    return regex.test(lower(text)) || readable.test(lower(unescapeUtf8(text)));
  };
}

/** A value written with non-ASCII characters, or with their UTF-8 escapes (`%C3%A9`). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range is all of ASCII
const WRITTEN_OUT = /[^\x00-\x7f]|%[89a-f][0-9a-f]/i;

/** `text` with its runs of UTF-8 escapes decoded (`/caf%C3%A9` → `/café`); other escapes kept. */
function unescapeUtf8(text: string): string {
  return text.replace(/(?:%[89a-f][0-9a-f])+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run; // not UTF-8 (a legacy-encoded query): kept as written
    }
  });
}

function anchor(value: string, kind: Exclude<(typeof KINDS)[number], 'length'>): string {
  if (kind === 'exact') return `^(?:${value})$`;
  if (kind === 'prefix') return `^(?:${value})`;
  if (kind === 'suffix') return `(?:${value})$`;
  return value;
}

function compileRegex(value: string, source: string, ignoreCase: boolean, path: string): LinearRegex {
  try {
    return compileLinearRegex(source, ignoreCase);
  } catch (err) {
    // the engine quotes the anchored source; the user wrote only `value`, so name the fault in it
    const why = linearRegexProblem(value) ?? (err as Error).message;
    return fail(`${path}.value`, `invalid regular expression ${JSON.stringify(value)}: ${why}`);
  }
}

/** Seed 001 length ranges: "[:10]", "[11:12]", "[30:]", both ends inclusive. */
export function parseRange(text: string, path = 'range'): [number, number] {
  const m = /^\[\s*(\d*)\s*:\s*(\d*)\s*\]$/.exec(text.trim());
  if (!m) return fail(path, `bad range "${text}" (use "[:10]", "[11:12]" or "[30:]")`);
  const min = m[1] ? Number(m[1]) : 0;
  const max = m[2] ? Number(m[2]) : Number.POSITIVE_INFINITY;
  if (min > max) fail(path, `bad range "${text}" (lower bound above upper bound)`);
  return [min, max];
}

function inRange(n: number, min: number, max: number): boolean {
  return n >= min && n <= max;
}

const ACTION_WORDS = new Set(['index', 'noIndex', 'follow', 'noFollow', 'accept', 'ignore']);

function compileActions(actions: unknown, rulePath: string): RuleActions {
  const path = `${rulePath}.actions`;
  if (!Array.isArray(actions) || actions.length === 0) fail(path, 'must be a non-empty list of actions');
  const out: RuleActions = {
    accept: false,
    ignore: false,
    index: null,
    follow: null,
    source: null,
    addMeta: [],
    priority: null,
    refresh: null,
    names: [],
  };
  for (const [i, action] of actions.entries()) applyAction(out, action, `${path}.${i}`);
  if (out.accept && out.ignore) fail(path, '"accept" and "ignore" contradict each other');
  return out;
}

function applyAction(out: RuleActions, action: unknown, path: string): void {
  if (typeof action === 'string') {
    if (!ACTION_WORDS.has(action)) fail(path, `unknown action "${action}"`);
    if (action === 'accept' || action === 'ignore') out[action] = true;
    else setFlag(out, action, path);
    out.names.push(action);
    return;
  }
  if (!isObject(action) || Object.keys(action).length !== 1)
    fail(path, 'must be an action name or a one-key object');
  if (typeof action.source === 'string' && action.source) {
    out.source = action.source;
    out.names.push(`source=${action.source}`);
  } else if (
    isObject(action.addMeta) &&
    typeof action.addMeta.name === 'string' &&
    typeof action.addMeta.value === 'string'
  ) {
    out.addMeta.push({ name: action.addMeta.name, value: action.addMeta.value });
    out.names.push(`addMeta ${action.addMeta.name}=${action.addMeta.value}`);
  } else if ('priority' in action) {
    const shift = action.priority;
    if (typeof shift !== 'number' || !Number.isInteger(shift) || shift < -2 || shift > 2) {
      fail(
        `${path}.priority`,
        `must be an integer from -2 (highest) to 2 (lowest), got ${JSON.stringify(shift)}`,
      );
    }
    out.priority = shift;
    out.names.push(`priority ${shift}`);
  } else if (isObject(action.refresh)) {
    out.refresh = refreshBounds(action.refresh, `${path}.refresh`);
    out.names.push(`refresh ${action.refresh.min}..${action.refresh.max}`);
  } else {
    fail(path, `unknown action ${JSON.stringify(action)}`);
  }
}

/** Adaptive refresh bounds in ms: the shortest and longest interval between two fetches of a URL. */
export interface RefreshBounds {
  minMs: number;
  maxMs: number;
}

/** `{"refresh": {"min": "1h", "max": "7d"}}`: both durations, min ≤ max. */
function refreshBounds(spec: Record<string, unknown>, path: string): RefreshBounds {
  const ms = (key: 'min' | 'max') => {
    try {
      return parseDuration(String(spec[key]));
    } catch (err) {
      return fail(`${path}.${key}`, (err as Error).message);
    }
  };
  const bounds = { minMs: ms('min'), maxMs: ms('max') };
  if (bounds.minMs <= 0 || bounds.minMs > bounds.maxMs) fail(path, 'min must be positive and not exceed max');
  if (bounds.maxMs > MAX_DURATION_MS) fail(`${path}.max`, 'must be at most 3650d (10 years)');
  return bounds;
}

/** index/noIndex/follow/noFollow; a rule saying both "index" and "noIndex" is a config error. */
function setFlag(out: RuleActions, action: string, path: string): void {
  const value = !action.startsWith('no');
  const flag = (value ? action : action.slice(2).toLowerCase()) as 'index' | 'follow';
  if (out[flag] !== null && out[flag] !== value)
    fail(path, `"${action}" contradicts an earlier action of the rule`);
  out[flag] = value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], path: string, what: string): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  if (value === undefined) return fail(path, `missing: name the ${what} (one of ${allowed.join('|')})`);
  return fail(path, `unknown ${what} ${JSON.stringify(value)} (one of ${allowed.join('|')})`);
}

/** Seed 001 note: special characters are escaped with "\" to be literal; drop those escapes. */
function unescapeLiteral(text: string): string {
  return text.replace(/\\(.)/g, '$1');
}

/** Escapes every regular-expression special character of `text`. */
export function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(path: string, message: string): never {
  throw new ConfigError(`${path}: ${message}`);
}
