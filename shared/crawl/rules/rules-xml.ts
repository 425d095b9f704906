/**
 * Seed 001's XML form of crawl rules (`<Rules><Rule>…</Rule></Rules>`, Exalead CrawlConfig.xml),
 * converted to the JSON form (docs/rules.md) so one compiler serves both. Namespace prefixes
 * (`ar:Atom`, namespace exa:com.exalead.actionrules.v21) are dropped; element names are matched
 * case-insensitively; `val` and `value` are synonyms; `litteral="true"` makes an atom value literal.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Rule } from '../../config-rules.ts';
import { ConfigError } from '../../errors.ts';

/** One element of fast-xml-parser's `preserveOrder` output. */
type XmlNode = { [tag: string]: XmlNode[] } & { ':@'?: Record<string, string> };
type Json = Record<string, unknown>;

const PARSER = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  removeNSPrefix: true,
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: true,
});

const SHORTCUTS: Record<string, string> = {
  domain: 'domain',
  path: 'path',
  ext: 'ext',
  host: 'host',
  url: 'url',
  scheme: 'scheme',
  query: 'query',
  inquery: 'inQuery',
};
const WORD_ACTIONS: Record<string, string> = {
  index: 'index',
  noindex: 'noIndex',
  follow: 'follow',
  nofollow: 'noFollow',
  accept: 'accept',
  ignore: 'ignore',
};
const MATCH_TAGS = new Set(['and', 'or', 'not', 'atom', 'length', ...Object.keys(SHORTCUTS)]);

/**
 * The validator's message, readable: elements left open are named as a list of JSON strings
 * (`Invalid '[    "rules",    "bad"]' found.`), said here as `<rules>, <bad> never closed`.
 */
function xmlProblem(msg: string): string {
  const open = /^Invalid '(\[[\s\S]*\])' found\.?$/.exec(msg.trim());
  if (!open?.[1]) return msg;
  try {
    const tags = JSON.parse(open[1]) as unknown[];
    if (tags.every((t) => typeof t === 'string') && tags.length > 0)
      return `${tags.map((t) => `<${t}>`).join(', ')} never closed`;
  } catch {}
  return msg;
}

/** Parses the seed's XML rules into JSON rules; throws ConfigError naming `rules.N…` paths. */
export function parseXmlRules(xml: string): Rule[] {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) {
    throw new ConfigError(
      `rules: invalid XML at line ${valid.err.line}, column ${valid.err.col}: ${xmlProblem(valid.err.msg)}`,
    );
  }
  let parsed: XmlNode[];
  try {
    parsed = PARSER.parse(xml) as XmlNode[];
  } catch (err) {
    // The parser's own limits (`Maximum nested tags exceeded` past 100 levels): a config error too.
    throw new ConfigError(`rules: invalid XML: ${(err as Error).message}`);
  }
  const root = elements(parsed);
  const rules = root.find((node) => tagOf(node).toLowerCase() === 'rules');
  if (!rules) fail('rules', 'the XML needs a <Rules> root element');
  return elements(rules[tagOf(rules)]!).map((node, i) => {
    if (tagOf(node).toLowerCase() !== 'rule') fail(`rules.${i}`, `expected <Rule>, found <${tagOf(node)}>`);
    return convertRule(node, `rules.${i}`);
  });
}

function convertRule(node: XmlNode, path: string): Rule {
  const children = elements(node[tagOf(node)]!);
  const matches = children.filter((c) => MATCH_TAGS.has(tagOf(c).toLowerCase()));
  // The actions first: an element that is neither a match nor an action is named as such
  // (`<Bogus>`), not counted as a missing match element.
  const actions = children
    .filter((c) => !MATCH_TAGS.has(tagOf(c).toLowerCase()))
    .map((a, i) => convertAction(a, `${path}.actions.${i}`));
  if (matches.length !== 1)
    fail(`${path}.match`, `a <Rule> needs exactly one match element, found ${matches.length}`);
  return {
    match: convertMatch(matches[0]!, `${path}.match`) as Rule['match'],
    actions: actions as Rule['actions'],
  };
}

function convertMatch(node: XmlNode, path: string): Json {
  const tag = tagOf(node).toLowerCase();
  const attrs = node[':@'] ?? {};
  const children = elements(node[tagOf(node)]!);
  if (tag === 'and' || tag === 'or') {
    return { [tag]: children.map((c, i) => convertMatch(c, `${path}.${tag}.${i}`)) };
  }
  if (tag === 'not') {
    if (children.length !== 1) fail(`${path}.not`, `<Not> needs exactly one rule, found ${children.length}`);
    return { not: convertMatch(children[0]!, `${path}.not`) };
  }
  const key = SHORTCUTS[tag];
  if (!key && tag !== 'atom' && tag !== 'length') fail(path, `unknown rule element <${tagOf(node)}>`);
  if (children.length > 0) noChildren(node, path);
  if (tag === 'atom') return { atom: convertAtom(attrs) };
  if (tag === 'length') {
    return { length: { field: attrs.field?.toLowerCase(), value: attrValue(attrs, `${path}.length`) } };
  }
  return { [key as string]: attrValue(attrs, `${path}.${key}`) };
}

/**
 * `<Atom field kind norm value|val litteral/>`; norm "non" is the seed's name for the default. The
 * names of fields, kinds and norms are read in any case (`field="Path" kind="Prefix"`).
 */
function convertAtom(attrs: Record<string, string>): Json {
  const atom: Json = {
    field: attrs.field?.toLowerCase(),
    kind: attrs.kind?.toLowerCase(),
    value: attrs.value ?? attrs.val,
  };
  const norm = attrs.norm?.toLowerCase();
  if (norm && norm !== 'non') atom.norm = norm;
  // the seed spells it `litteral`; JSON atoms say `"literal": true`
  if ((attrs.litteral ?? attrs.literal)?.toLowerCase() === 'true') atom.literal = true;
  return atom;
}

function convertAction(node: XmlNode, path: string): unknown {
  const tag = tagOf(node).toLowerCase();
  const attrs = node[':@'] ?? {};
  const word = WORD_ACTIONS[tag];
  if (!word && !['source', 'addmeta', 'priority'].includes(tag))
    fail(path, `unknown rule element or action <${tagOf(node)}>`);
  if (elements(node[tagOf(node)]!).length > 0) noChildren(node, path);
  if (word) return word;
  if (tag === 'source') return { source: attrs.name ?? fail(path, '<Source> needs a name attribute') };
  if (tag === 'addmeta') {
    if (!attrs.name) fail(path, '<AddMeta> needs a name attribute');
    const value = attrs.value ?? attrs.val;
    // value="" is a value (an empty field); no value at all is a slip, not a silent empty field
    if (value === undefined) fail(path, '<AddMeta> needs a value attribute');
    return { addMeta: { name: attrs.name, value } };
  }
  // <Priority shift>, the last action left. Written as a whole number only, signed or not: Number()
  // would take "", " ", "0x2" and "1e0".
  const text = (attrs.shift ?? attrs.value ?? attrs.val ?? '').trim();
  if (!/^[+-]?\d+$/.test(text))
    fail(`${path}.priority`, `<Priority shift> must be a whole number -2..2, got "${text}"`);
  return { priority: Number(text) };
}

/** A leaf (a shortcut, an atom, an action) with elements inside: they would be ignored, so refused. */
function noChildren(node: XmlNode, path: string): never {
  const inner = elements(node[tagOf(node)]!).map((c) => `<${tagOf(c)}>`);
  return fail(path, `<${tagOf(node)}> takes attributes only, not ${inner.join(', ')} inside it`);
}

function attrValue(attrs: Record<string, string>, path: string): string {
  const value = attrs.val ?? attrs.value;
  if (value === undefined) fail(path, 'needs a val attribute');
  return value;
}

/** Element children only (text, comments and the `?xml` declaration are skipped). */
function elements(nodes: XmlNode[]): XmlNode[] {
  return nodes.filter((n) => {
    const tag = tagOf(n);
    return tag !== '#text' && !tag.startsWith('?');
  });
}

function tagOf(node: XmlNode): string {
  return Object.keys(node).find((k) => k !== ':@') ?? '';
}

function fail(path: string, message: string): never {
  throw new ConfigError(`${path}: ${message}`);
}
