// docs/config.md is generated from the zod schema and its JSDoc; this fails when someone changes
// shared/config.ts without regenerating it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CONFIG_DOC, renderConfigDoc } from '../../scripts/gen-config-docs.ts';
import { ConfigSchema } from '../../shared/config.ts';

/** The cells of one key's row: type, required, default, limits, description. */
function row(text: string, key: string): { limits: string; note: string } {
  const line = text.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
  assert.ok(line, `no row for ${key}`);
  const [, , , , limits = '', note = ''] = line.split(/ (?<!\\)\| /);
  return { limits, note: note.replace(/ \|$/, '') };
}

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
  it("gives each row its own field's JSDoc, also when a name repeats under another key", () => {
    const text = renderConfigDoc();
    for (const [key, own] of [
      ['refresh', /refetched/],
      ['index', /duplicates/],
      ['weights.refresh', /^the refresh cycle's re-fetches/],
      ['weights.index', /^links to pages indexed, not followed/],
      ['refresh.maxAge', /^a document is refetched/],
      ['scope.traps.maxPathDepth', /path-too-deep/],
    ] as const) {
      assert.match(row(text, key).note, own, key);
    }
  });
  it('shows the limits of nullable and union keys (inside anyOf)', () => {
    const text = renderConfigDoc();
    for (const [key, limits] of [
      ['scope.maxDepth', '≥ 0'],
      ['scope.traps.maxPathDepth', '> 0'],
      ['scope.traps.maxUrlsPerHost', '> 0'],
      ['scope.traps.maxQueryVariantsPerPath', '> 0'],
      ['fetch.memoryMb', '≥ 128, ≤ 10240'],
      ['refresh.orphanGrace', 'integer ≥ 3'],
      ['fetch.maxRedirects', '≥ 0, ≤ 30'],
    ] as const) {
      assert.equal(row(text, key).limits, limits, key);
    }
  });
});
