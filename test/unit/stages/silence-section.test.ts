// The part of a host whose silence is counted apart (politeness/host-turns.ts, sectionOf).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sectionOf } from '../../../shared/stages/politeness/host-turns.ts';

describe('sectionOf', () => {
  it('is the first path segment, without the query', () => {
    assert.equal(sectionOf('https://a.test/search?q=1'), '/search');
    assert.equal(sectionOf('https://a.test/search/advanced?q=1'), '/search');
    assert.equal(sectionOf('https://a.test/docs/guide/intro.html'), '/docs');
    assert.equal(sectionOf('https://a.test/about.html'), '/about.html');
  });
  it('is / for the home page and a bare query', () => {
    assert.equal(sectionOf('https://a.test/'), '/');
    assert.equal(sectionOf('https://a.test/?page=2'), '/');
    assert.equal(sectionOf('https://a.test'), '/');
  });
  it('is bounded: a hostile first segment is cut at 100 characters', () => {
    const s = sectionOf(`https://a.test/${'x'.repeat(5000)}/y`);
    assert.equal(s.length, 100);
    assert.ok(s.startsWith('/xxx'));
  });
  it('is / for what is not a URL', () => {
    assert.equal(sectionOf('not a url'), '/');
  });
});
