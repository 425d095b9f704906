/** Duplicate folding, pure: the text digest, which URL keeps the document, the registry's moves. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  admitContent,
  ENTRY_MAX_BYTES,
  releaseContent,
  textDigest,
} from '../../../shared/crawl/extract/duplicates.ts';

describe('duplicate content', () => {
  it('digests normalized text: spacing does not count; words and letter case do', () => {
    assert.equal(textDigest('A', 'one  two\nthree'), textDigest('A', ' one two three '));
    assert.notEqual(textDigest('A', 'one two'), textDigest('A', 'one two three'));
    // Two pages that differ only in case (case-sensitive IDs, codes) are two documents.
    assert.notEqual(textDigest('Part AB-12', 'part ab-12'), textDigest('Part ab-12', 'part AB-12'));
  });

  it('the URL a keeper names as its canonical takes the content over, in either order', () => {
    const a = 'http://x/canon-a.html';
    const b = 'http://x/canon-b.html';
    // a (naming b canonical) first, then b, which names no canonical: b keeps it, a is demoted.
    const first = admitContent(null, a, 1, b);
    const second = admitContent(first.entry, b, 1, null);
    assert.deepEqual([second.kind, second.kind === 'keep' && second.demoted], ['keep', a]);
    // a fetched again: a duplicate of b, and it stays so.
    const third = admitContent(second.entry, a, 1, b);
    assert.deepEqual([third.kind, third.kind === 'duplicate' && third.of], ['duplicate', b]);
    assert.equal(admitContent(third.entry, b, 1, null).kind, 'keep');
    // b first: a names the keeper its canonical, a duplicate at once.
    const bFirst = admitContent(null, b, 1, null);
    assert.equal(admitContent(bFirst.entry, a, 1, b).kind, 'duplicate');
    // A third URL is not helped by the keeper's canonical naming someone else.
    assert.equal(admitContent(first.entry, 'http://x/zz-longer-url.html', 1, null).kind, 'duplicate');
  });

  it('passes a released keeper’s content to the shorter duplicate, else the smaller', () => {
    const entry = { keeper: 'http://x/k', depth: 1, dups: ['http://x/long', 'http://x/b', 'http://x/a'] };
    assert.equal(releaseContent(entry, 'http://x/k').successor, 'http://x/a');
    const two = { keeper: 'http://x/k', depth: 1, dups: ['http://x/b', 'http://x/longer'] };
    assert.equal(releaseContent(two, 'http://x/k').successor, 'http://x/b');
  });

  it('registers, demotes a longer keeper, records duplicates, passes the content on', () => {
    const first = admitContent(null, 'http://x/long', 1, null);
    assert.deepEqual(first, { kind: 'keep', entry: { keeper: 'http://x/long', depth: 1, dups: [] } });
    const shorter = admitContent(first.entry, 'http://x/a', 2, null);
    assert.deepEqual(shorter, {
      kind: 'keep',
      entry: { keeper: 'http://x/a', depth: 2, dups: ['http://x/long'] },
      demoted: 'http://x/long',
    });
    const again = admitContent(shorter.entry, 'http://x/long', 1, null);
    assert.equal(again.kind, 'duplicate');
    assert.deepEqual(again.entry.dups, ['http://x/long'], 'counted once');
    const gone = releaseContent(again.entry, 'http://x/a');
    assert.deepEqual(gone, {
      entry: { keeper: 'http://x/long', depth: 2, dups: [] },
      successor: 'http://x/long',
    });
    assert.deepEqual(releaseContent(gone.entry, 'http://x/long').entry.keeper, '');
    assert.equal(admitContent({ keeper: '', depth: 0, dups: [] }, 'http://x/z', 0, null).kind, 'keep');
  });

  it('settles: a self-canonical page and a shorter one without a canonical do not take turns', () => {
    // A refresh once fetched these two 919 times each: each took the content from the other (the
    // newcomer's canonical ranked it; the keeper's own was forgotten), and each demotion fetched
    // the loser again.
    const a = 'http://x/dupA.html';
    const p = 'http://x/pdouble.html';
    let entry = admitContent(null, a, 1, null).entry;
    const taken = admitContent(entry, p, 1, p);
    assert.equal(taken.kind, 'keep');
    assert.equal(taken.kind === 'keep' && taken.demoted, a, 'the self-canonical page takes it');
    entry = taken.entry;
    for (let round = 0; round < 3; round++) {
      const refetched = admitContent(entry, a, 1, null);
      assert.equal(refetched.kind, 'duplicate', `round ${round}: the demoted page stays a duplicate`);
      entry = refetched.entry;
      const keeper = admitContent(entry, p, 1, p);
      assert.deepEqual([keeper.kind, keeper.kind === 'keep' && keeper.demoted], ['keep', undefined]);
      entry = keeper.entry;
    }
    // A page naming another URL canonical does not outrank a self-canonical keeper either.
    assert.equal(admitContent(entry, 'http://x/b', 1, a).kind, 'duplicate');
    // Two self-canonical pages: the shorter, both ways round.
    const q = 'http://x/q.html';
    assert.equal(admitContent(entry, q, 1, q).kind, 'keep');
    const qFirst = admitContent(null, q, 1, q).entry;
    assert.equal(admitContent(qFirst, p, 1, p).kind, 'duplicate');
  });

  it('an entry stays under one write unit however many URLs share the content', () => {
    let entry = admitContent(null, 'https://shop.example.com/a', 1, null).entry;
    const listedBefore: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const url = `https://shop.example.com/search?color=red&size=${i}&sort=price`;
      const d = admitContent(entry, url, 2, null);
      assert.equal(d.kind, 'duplicate', url);
      assert.equal(d.kind === 'duplicate' && d.of, 'https://shop.example.com/a');
      listedBefore.push(entry.dups.length);
      entry = d.entry;
      assert.ok(Buffer.byteLength(JSON.stringify(entry)) <= ENTRY_MAX_BYTES);
    }
    const listed = entry.dups.length;
    assert.ok(listed >= 10, `${listed} duplicates listed`);
    // Past the bound the entry is the same: the stage writes nothing for such a duplicate.
    assert.deepEqual(admitContent(entry, 'https://shop.example.com/search?x=1', 2, null).entry, entry);
    // A shorter URL still takes the content over, the demoted keeper first in line.
    const taken = admitContent(entry, 'https://shop.example.com/', 0, null);
    assert.equal(taken.kind, 'keep');
    assert.equal(taken.entry.dups[0], 'https://shop.example.com/a');
    assert.ok(Buffer.byteLength(JSON.stringify(taken.entry)) <= ENTRY_MAX_BYTES);
    // The keeper's content gone: a listed duplicate takes its place.
    assert.equal(
      releaseContent(taken.entry, 'https://shop.example.com/').successor,
      'https://shop.example.com/a',
    );
  });
});
