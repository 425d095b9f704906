/**
 * The crawl config as the CLI stores it for the functions (CONFIG_KEY): parsed and normalised once
 * by parseConfig, and tagged with the fingerprint of the schema that did it (config.ts
 * configFormat). A function built from the same schema (the stack gives it the fingerprint as
 * TRAWL_CONFIG_FORMAT) takes the config as it is, without loading zod and the schema: the fetch
 * function's memory is the price of what its container loads.
 * Any other object (another schema's, or one written by hand) is validated in full, as the CLI
 * does, by the schema's module: in a Lambda asset a bundle of its own beside the handler's
 * (`config.mjs`, infra/constructs/stage-function.ts), so that the handler's bundle holds no zod
 * (a fetch container loaded 3.5 MB more with zod in its bundle, even unused).
 * The fingerprint follows the schema's shape and defaults, not its refinements: a change to how a
 * field is normalised that keeps its shape needs the config uploaded again (`trawl deploy` always
 * does).
 */
import type { CrawlConfig } from './config.ts';

export interface StoredConfig {
  /** the schema's fingerprint, `trawl-config/<sha256 prefix>` */
  format: string;
  config: CrawlConfig;
}

/**
 * The schema's module: `config.ts` from source, `config.mjs` beside a bundle. The name is a value,
 * not a literal, so that esbuild leaves the import to run time instead of inlining the schema.
 */
const SCHEMA_MODULE = import.meta.url.endsWith('.ts') ? './config.ts' : './config.mjs';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The config of a stored object; `format` is the reader's own schema fingerprint. */
export async function readStoredConfig(
  raw: unknown,
  format: string | undefined,
  source: string,
): Promise<CrawlConfig> {
  const stored = isRecord(raw) && typeof raw.format === 'string' && 'config' in raw;
  if (stored && format !== undefined && raw.format === format && isRecord(raw.config)) {
    return raw.config as CrawlConfig;
  }
  // Loaded only on this path: a function never holds the schema for a config its own CLI wrote.
  const { parseConfig }: typeof import('./config.ts') = await import(SCHEMA_MODULE);
  return parseConfig(stored ? raw.config : raw, stored ? `${source} (config)` : source);
}
