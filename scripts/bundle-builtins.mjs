// Node's built-in modules the CommonJS way in an ESM bundle (`node scripts/bundle-builtins.mjs FILE`,
// run on every Lambda bundle by infra/constructs/stage-function.ts and scripts/bundle-worker.mjs).
//
// `import http from "node:http"` builds an ES module facade of the built-in, and building it reads
// every export, lazy getters too: node:http's `WebSocket` loads undici, node:process's and
// node:util's theirs. A fetch container held 4.7 MB more for that (bench/fetch-memory.ts), and
// the fetch function's memory is its price. Each top-level import of a built-in becomes a `var`
// bound to process.getBuiltinModule() (Node 22.3+: the CommonJS exports, no facade), declared on
// the banner's line so that, like the import, it is bound before any code runs; the import itself
// becomes as many spaces, so the source map's lines and columns still hold.
import { readFileSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';

const BUILTINS = new Set(builtinModules);
const ID = '[A-Za-z_$][\\w$]*';
// An import statement as esbuild writes it, after a statement's end: a default name, a namespace, a
// brace list, or a default with either; or a bare import.
const IMPORT = new RegExp(
  `(?<=^|[;}\\n])import\\s*(?:(${ID})\\s*,?\\s*)?(\\*\\s*as\\s+${ID}|\\{[^}]*\\})?\\s*(?:from\\s*)?"([^"]+)";?`,
  'g',
);

const builtin = (spec) => BUILTINS.has(spec.startsWith('node:') ? spec.slice(5) : spec);

/** `{a as b, c}` as a destructuring pattern: `{a:b,c}` (`default` is the exports themselves). */
function pattern(list) {
  const names = list
    .slice(1, -1)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const fields = [];
  let whole = null;
  for (const n of names) {
    const [name, alias = name] = n.split(/\s+as\s+/);
    if (name === 'default') whole = alias;
    else fields.push(name === alias ? name : `${name}:${alias}`);
  }
  return { fields, whole };
}

/** The bundle's code with its built-in imports rewritten. */
export function builtinsByRequire(code) {
  const decls = [];
  const out = code.replace(IMPORT, (stmt, def, rest, spec) => {
    if (!builtin(spec)) return stmt;
    const get = `globalThis.process.getBuiltinModule(${JSON.stringify(spec)})`;
    if (!def && !rest) decls.push(`${get};`);
    if (def) decls.push(`var ${def}=${get};`);
    if (rest?.startsWith('*')) decls.push(`var ${rest.replace(/^\*\s*as\s+/, '')}=${get};`);
    else if (rest) {
      const { fields, whole } = pattern(rest);
      if (whole) decls.push(`var ${whole}=${get};`);
      if (fields.length > 0) decls.push(`var{${fields.join(',')}}=${get};`);
    }
    return ' '.repeat(stmt.length);
  });
  if (decls.length === 0) return code;
  // The banner is the first line: the declarations go at its end (no line moves).
  const eol = out.indexOf('\n');
  const at = eol === -1 ? out.length : eol;
  return `${out.slice(0, at)}${decls.join('')}${out.slice(at)}`;
}

/** Rewrites a bundle file in place. */
export function rewriteBuiltins(file) {
  writeFileSync(file, builtinsByRequire(readFileSync(file, 'utf8')));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node scripts/bundle-builtins.mjs FILE');
    process.exit(2);
  }
  rewriteBuiltins(file);
}
