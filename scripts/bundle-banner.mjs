// The first line of every Lambda bundle (infra/constructs/stage-function.ts) and of the bundles
// scripts/bundle-worker.mjs builds: `require` for the CommonJS dependencies inside an ESM bundle.
// The import is renamed: esbuild does not rename the bundle's own top-level names around a banner,
// and with identifiers kept a dependency's `import { createRequire } from "module"` (unpdf's, in
// extract) would collide with it and the bundle would not load.
export const BUNDLE_BANNER =
  "import { createRequire as __trawlCreateRequire } from 'node:module';const require = __trawlCreateRequire(import.meta.url);";
