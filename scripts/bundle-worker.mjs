#!/usr/bin/env node
// Bundles an entry beside a Lambda handler's bundle (infra/constructs/stage-function.ts runs it in
// every function's afterBundling hook: the config schema, the extract stage's pdf.js worker), or a
// handler as `cdk deploy` does (bench/fetch-memory.ts): `node scripts/bundle-worker.mjs ENTRY OUTFILE`.
// The options are the handler bundle's, so the bundle runs on the same runtime the same way, and
// its imports of Node's built-ins are rewritten as the handlers' are (scripts/bundle-builtins.mjs).
import { build } from 'esbuild';
import { BUNDLE_BANNER } from './bundle-banner.mjs';
import { rewriteBuiltins } from './bundle-builtins.mjs';

const [entry, outfile] = process.argv.slice(2);
if (!entry || !outfile) {
  console.error('usage: node scripts/bundle-worker.mjs ENTRY OUTFILE');
  process.exit(2);
}
await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  // names kept (stack traces name the functions), as infra/constructs/stage-function.ts
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  // CommonJS dependencies inside an ESM bundle still call require(): the handler bundles' banner.
  banner: { js: BUNDLE_BANNER },
});
rewriteBuiltins(outfile);
