#!/usr/bin/env node
// Bundles a worker thread's entry beside a Lambda handler's bundle (infra/constructs/stage-function.ts
// runs it as the extract function's afterBundling hook): `node scripts/bundle-worker.mjs ENTRY OUTFILE`.
// The options are the handler bundle's, so the worker runs on the same runtime the same way.
import { build } from 'esbuild';
import { BUNDLE_BANNER } from './bundle-banner.mjs';

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
