/** Reads a crawl config file (JSON, or YAML by extension) and validates it, naming the file in every error. */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { type CrawlConfig, parseConfig } from '../shared/config.ts';
import { createUrlDecider } from '../shared/crawl/rules/decide.ts';
import { ConfigError } from '../shared/errors.ts';

/** One YAML document: a second (after a `---` line) is an error naming its line, not the yaml library's hint. */
function parseYamlConfig(text: string): unknown {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return null; // an empty file: null, as parse() gives, for parseConfig to refuse
  if (docs.length > 1) {
    const start = docs[1]?.range[0] ?? 0;
    const line = text.slice(0, start).split('\n').length;
    throw new Error(`a config is one YAML document; a second begins at line ${line} (a "---" line)`);
  }
  const [doc] = docs;
  if (doc && doc.errors.length > 0) throw doc.errors[0];
  return doc?.toJS() ?? null;
}

/** Loads, validates and compiles (rules included) the config at `file`. */
export function loadConfigFile(file: string): CrawlConfig {
  let text: string;
  try {
    // A byte order mark (Windows editors and PowerShell write one) is no part of the config.
    text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  } catch (err) {
    throw new ConfigError(
      `${file}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? err})`,
    );
  }
  let raw: unknown;
  try {
    raw = /\.ya?ml$/i.test(file) ? parseYamlConfig(text) : JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `${file}: not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(err as Error).message}`,
    );
  }
  if (raw === null || raw === undefined) throw new ConfigError(`${file}: the config file is empty`);
  const config = parseConfig(raw, file);
  try {
    createUrlDecider(config); // compiles the crawl rules: a bad rule fails here with its path
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${file}: ${err.message}`);
    throw err;
  }
  return config;
}
