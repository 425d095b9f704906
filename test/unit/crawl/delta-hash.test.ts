import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { type DeltaHashInput, deltaHash } from '../../../shared/crawl/extract/delta-hash.ts';

const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;
const fixedId = () => 'id-1';

describe('deltaHash (seed 003 DefaultRecordProducer, first that applies)', () => {
  const all: DeltaHashInput = {
    content: 'Title\nText',
    lastModified: 'Tue, 01 Jul 2025 10:00:00 GMT',
    size: 42,
    mimeType: 'text/html',
  };
  const cases: [string, DeltaHashInput, string][] = [
    ['content digest first', all, sha('Title\nText')],
    ['empty content is still content', { ...all, content: '' }, sha('')],
    ['then Last-Modified', { ...all, content: null }, 'lm:Tue, 01 Jul 2025 10:00:00 GMT'],
    [
      'then size + mime type',
      { size: 42, mimeType: 'application/pdf', lastModified: '  ' },
      'size:42:application/pdf',
    ],
    ['size 0 counts', { size: 0, mimeType: null }, 'size:0:'],
    ['size -1 means not set (SMILA httpSize)', { size: -1, mimeType: 'text/html' }, 'random:id-1'],
    ['else a random id', {}, 'random:id-1'],
  ];
  for (const [label, input, expected] of cases) {
    it(label, () => assert.equal(deltaHash(input, fixedId), expected));
  }

  it('bytes and the same text hash alike', () => {
    const text = 'grüße';
    assert.equal(
      deltaHash({ content: new Uint8Array(Buffer.from(text)) }, fixedId),
      deltaHash({ content: text }, fixedId),
    );
  });
  it('a changed text changes the hash', () => {
    assert.notEqual(deltaHash({ content: 'a' }, fixedId), deltaHash({ content: 'b' }, fixedId));
  });
  it('calls randomId only as the last resort', () => {
    let calls = 0;
    const counting = () => `n${++calls}`;
    deltaHash({ content: 'x' }, counting);
    deltaHash({ lastModified: 'x' }, counting);
    assert.equal(calls, 0);
    assert.equal(deltaHash({}, counting), 'random:n1');
  });
});
