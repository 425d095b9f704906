/**
 * Writes docs/config.md from the zod schema in shared/config.ts (types, defaults, limits via
 * z.toJSONSchema) and the JSDoc line above each field (TypeScript compiler API), so the config
 * reference cannot drift from the code. Run: `npm run docs`. `--check` exits 1 when the file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';
import { ConfigSchema } from '../shared/config.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// The schema's files: shared/config.ts and the sections kept beside it (limits, traps).
const SOURCES = ['shared/config.ts', 'shared/config-limits.ts', 'shared/config-traps.ts'].map((f) =>
  resolve(ROOT, f),
);
export const CONFIG_DOC = resolve(ROOT, 'docs/config.md');

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  $ref?: string;
};

/**
 * Config path → the JSDoc above its field. Keyed by the whole path, not the field's name: names
 * repeat (`refresh` and `weights.refresh`, `index` and `weights.index`) and each row needs its own.
 */
function fieldComments(): Map<string, string> {
  const fields: SchemaField[] = [];
  for (const source of SOURCES) fields.push(...fieldsOf(source));
  const out = new Map<string, string>();
  mount('ConfigSchema', '', fields, out);
  return out;
}

/** A property written in a schema variable: its path inside it, its JSDoc, the schema it names. */
type SchemaField = { owner: string; path: string; doc?: string; ref?: string };

/** Puts the fields of schema variable `owner` under `prefix`, then the schemas they name (`scope: ScopeSchema`). */
function mount(owner: string, prefix: string, fields: SchemaField[], out: Map<string, string>): void {
  for (const f of fields.filter((x) => x.owner === owner)) {
    const path = prefix ? `${prefix}.${f.path}` : f.path;
    if (f.doc) out.set(path, f.doc);
    if (f.ref && f.ref !== owner) mount(f.ref, path, fields, out);
  }
}

function fieldsOf(source: string): SchemaField[] {
  const text = readFileSync(source, 'utf8');
  const file = ts.createSourceFile(source, text, ts.ScriptTarget.Latest, true);
  const out: SchemaField[] = [];
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const decl of statement.declarationList.declarations) {
      if (ts.isIdentifier(decl.name) && decl.initializer) {
        propertiesOf(decl.initializer, decl.name.text, [], out);
      }
    }
  }
  return out;
}

/** The properties of the object literals inside `node`, each with the names of the properties around it. */
function propertiesOf(node: ts.Node, owner: string, around: string[], out: SchemaField[]): void {
  if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name)) {
    const names = [...around, node.name.text];
    const doc = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc).at(-1);
    out.push({ owner, path: names.join('.'), doc: doc && docText(doc), ref: schemaNamed(node.initializer) });
    ts.forEachChild(node.initializer, (child) => propertiesOf(child, owner, names, out));
    return;
  }
  ts.forEachChild(node, (child) => propertiesOf(child, owner, around, out));
}

/** `ScopeSchema`, `ProxySchema.nullable().default(null)` → the schema variable the field is built from. */
function schemaNamed(init: ts.Expression): string | undefined {
  let e: ts.Expression = init;
  while (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression)) e = e.expression.expression;
  return ts.isIdentifier(e) ? e.text : undefined;
}

function docText(doc: ts.JSDoc): string {
  const parts: string[] = [];
  if (typeof doc.comment === 'string') parts.push(doc.comment);
  for (const tag of doc.tags ?? []) {
    const c = typeof tag.comment === 'string' ? tag.comment : (tag.comment ?? []).map((p) => p.text).join('');
    // "@default X — why": the default comes from the schema itself, keep only the explanation.
    if (tag.tagName.text === 'default') parts.push(c.includes('—') ? c.replace(/^.*?—\s*/, '') : '');
    else parts.push(c);
  }
  return parts.join(' ').replace(/\s+/g, ' ').trim();
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.map(typeOf).join(' | ');
  if (s.$ref) return 'rule match';
  if (s.type === 'array') return `${s.items ? typeOf(s.items) : 'any'}[]`;
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return s.type ?? 'any';
}

/**
 * The bounds the schema enforces. A nullable or union key keeps them in its `anyOf` branches:
 * one branch besides null gives them as they are, several name the branch (`integer ≥ 3`).
 */
function limits(s: JsonSchema): string {
  const alts = (s.anyOf ?? s.oneOf)?.flatMap(branches).filter((b) => b.type !== 'null');
  if (!alts) return ownLimits(s);
  const [only] = alts;
  if (only && alts.length === 1) return ownLimits(only);
  return alts
    .filter((b) => ownLimits(b))
    .map((b) => `${typeOf(b)} ${ownLimits(b)}`)
    .join('; ');
}

/** A union's branches, nested unions flattened (`duration | integer` inside a nullable). */
function branches(s: JsonSchema): JsonSchema[] {
  const alts = s.anyOf ?? s.oneOf;
  return alts ? alts.flatMap(branches) : [s];
}

function ownLimits(s: JsonSchema): string {
  const l: string[] = [];
  if (s.minimum !== undefined) l.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) l.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) l.push(`≤ ${s.maximum}`);
  if (s.minLength !== undefined) l.push(`length ≥ ${s.minLength}`);
  if (s.maxLength !== undefined) l.push(`length ≤ ${s.maxLength}`);
  if (s.minItems !== undefined) l.push(`items ≥ ${s.minItems}`);
  if (s.maxItems !== undefined) l.push(`items ≤ ${s.maxItems}`);
  return l.join(', ');
}

function cell(v: string): string {
  return v.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function shortDefault(v: unknown): string {
  if (v === undefined) return '';
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function rows(s: JsonSchema, prefix: string, notes: Map<string, string>, out: string[]): void {
  for (const [key, field] of Object.entries(s.properties ?? {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    const required = s.required?.includes(key) && field.default === undefined ? 'yes' : '';
    const type = field.properties ? 'object' : typeOf(field);
    const line = [path, type, required, shortDefault(field.default), limits(field), notes.get(path) ?? ''];
    out.push(`| ${line.map((c, i) => (i === 0 ? `\`${c}\`` : cell(c))).join(' | ')} |`);
    if (field.properties) rows(field, path, notes, out);
  }
}

/** The whole generated page. */
export function renderConfigDoc(): string {
  const schema = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out = [
    '<!-- GENERATED by scripts/gen-config-docs.ts from shared/config.ts: do not edit, run `npm run docs`. -->',
    '# Config reference',
    '',
    'A crawl is described by one JSON file (`trawl crawl -c trawl.json`, `trawl deploy -c trawl.json`).',
    'The schema is strict: an unknown key is an error (exit 2, with the field and the reason). Every key',
    'but `name` and `startUrls` has a default. Durations are strings such as `"30s"`, `"15m"`, `"1h"`,',
    '`"48h"`, `"2d"`. The rule language used by `rules` is described in [rules.md](rules.md).',
    '',
    '| Key | Type | Required | Default | Limits | What it does |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  rows(schema, '', fieldComments(), out);
  return `${out.join('\n')}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = renderConfigDoc();
  if (process.argv.includes('--check')) {
    const stale = readFileSync(CONFIG_DOC, 'utf8') !== text;
    if (stale) console.error('docs/config.md is out of date: run `npm run docs`');
    process.exit(stale ? 1 : 0);
  }
  writeFileSync(CONFIG_DOC, text);
  console.log(`wrote ${CONFIG_DOC}`);
}
