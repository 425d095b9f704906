/**
 * ChangeFold: what the change feed's readers fold (docs/documents.md "Change feed"). Copies of one
 * outcome (same identity) and re-upserts of the content a URL already has are folded; real changes
 * (new content, content back after a delete, a change record without a version) never are.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChangeFold } from '../../../shared/stages/change-feed.ts';
import type { ChangeRecord } from '../../../shared/types.ts';

const U = 'https://example.com/a';
const up = (version: number, hash: string, at = new Date(version).toISOString()): ChangeRecord => ({
  type: 'upsert',
  url: U,
  at,
  bulk: `docs/bulks/${version}.jsonl.gz`,
  line: 0,
  hash,
  version,
});
const del = (version: number, reason = 'gone: 404'): ChangeRecord => ({
  type: 'delete',
  url: U,
  at: new Date(version).toISOString(),
  reason,
  version,
});

/** The records the fold keeps, by index. */
function kept(records: ChangeRecord[]): number[] {
  const fold = new ChangeFold();
  return records.flatMap((r, i) => (fold.keep(r) ? [i] : []));
}

describe('ChangeFold', () => {
  it('folds a copy of one outcome written twice, whatever its bulk and batch time', () => {
    const first = up(1000, 'h1');
    const copy = {
      ...up(1000, 'h1', new Date(5000).toISOString()),
      bulk: 'docs/bulks/other.jsonl.gz',
      line: 7,
    };
    assert.deepEqual(kept([first, copy]), [0]);
    assert.deepEqual(kept([del(1000), del(1000)]), [0]);
  });

  it('folds a second fetch of the page with the content the URL already has', () => {
    assert.deepEqual(kept([up(1000, 'h1'), up(2000, 'h1')]), [0]);
    // Other URLs with the same content are their own documents.
    assert.deepEqual(kept([up(1000, 'h1'), { ...up(2000, 'h1'), url: 'https://example.com/b' }]), [0, 1]);
  });

  it('keeps changed content, content back after a delete, and A → B → A', () => {
    assert.deepEqual(kept([up(1000, 'h1'), up(2000, 'h2')]), [0, 1]);
    assert.deepEqual(kept([up(1000, 'h1'), del(2000), up(3000, 'h1')]), [0, 1, 2]);
    assert.deepEqual(kept([up(1000, 'h1'), up(2000, 'h2'), up(3000, 'h1')]), [0, 1, 2]);
  });

  it('keeps deletes with other reasons or versions, and records without a version or hash', () => {
    assert.deepEqual(kept([del(1000), del(1000, 'not-indexed: noindex'), del(2000)]), [0, 1, 2]);
    const bare = (at: string): ChangeRecord => ({ type: 'upsert', url: U, at, bulk: 'b', line: 0 });
    assert.deepEqual(kept([bare('2026-01-01T00:00:00.000Z'), bare('2026-01-01T00:00:01.000Z')]), [0, 1]);
    // The same record read twice is one change, with or without a version.
    assert.deepEqual(kept([bare('2026-01-01T00:00:00.000Z'), bare('2026-01-01T00:00:00.000Z')]), [0]);
  });
});
