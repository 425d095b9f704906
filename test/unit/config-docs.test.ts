// docs/config.md is generated from the zod schema and its JSDoc; this fails when someone changes
// shared/config.ts without regenerating it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CONFIG_DOC, renderConfigDoc } from '../../scripts/gen-config-docs.ts';
import { ConfigSchema } from '../../shared/config.ts';

describe('docs/config.md', () => {
  it('matches the schema in shared/config.ts (regenerate with `npm run docs`)', () => {
    assert.equal(
      readFileSync(CONFIG_DOC, 'utf8'),
      renderConfigDoc(),
      'docs/config.md is out of date: run `npm run docs`',
    );
  });
  it('lists every top-level config key', () => {
    const text = renderConfigDoc();
    for (const key of Object.keys(ConfigSchema.shape)) assert.match(text, new RegExp(`\\| \`${key}\` \\|`));
  });
});
