/**
 * The crawl config as the CLI stores it for the functions (CONFIG_KEY): parsed and normalised once
 * by parseConfig, and tagged with the fingerprint of the schema that did it (config.ts
 * configFormat). A function built from the same schema (the stack gives it the fingerprint as
 * TRAWL_CONFIG_FORMAT) takes the config as it is, without loading zod and the schema: a fetch
 * container loads in 84 MB without them, 92 with, and the fetch function's memory is its price.
 * Any other object (another schema's, or one written by hand) is validated in full, as the CLI
 * does. The fingerprint follows the schema's shape and defaults, not its refinements: a change to
 * how a field is normalised that keeps its shape needs the config uploaded again (`trawl deploy`
 * always does).
 */
import type { CrawlConfig } from './config.ts';

export interface StoredConfig {
  /** the schema's fingerprint, `trawl-config/<sha256 prefix>` */
  format: string;
  config: CrawlConfig;
}

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
  const { parseConfig } = await import('./config.ts');
  return parseConfig(stored ? raw.config : raw, stored ? `${source} (config)` : source);
}
