/** Reads a crawl config file (JSON, or YAML by extension) and validates it, naming the file in every error. */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type CrawlConfig, parseConfig } from '../shared/config.ts';
import { createUrlDecider } from '../shared/crawl/rules/decide.ts';
import { ConfigError } from '../shared/errors.ts';

/** Loads, validates and compiles (rules included) the config at `file`. */
export function loadConfigFile(file: string): CrawlConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `${file}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? err})`,
    );
  }
  let raw: unknown;
  try {
    raw = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `${file}: not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(err as Error).message}`,
    );
  }
  const config = parseConfig(raw, file);
  try {
    createUrlDecider(config); // compiles the crawl rules: a bad rule fails here with its path
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${file}: ${err.message}`);
    throw err;
  }
  return config;
}
