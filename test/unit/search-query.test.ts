/** `trawl search`'s query: phrases in quotes, exclusions with a minus, the rest words. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedQuery, MAX_QUERY_TERMS, parseQuery } from '../../shared/search/opensearch-sink.ts';

describe('parseQuery', () => {
  it('splits phrases, exclusions and words', () => {
    assert.deepEqual(parseQuery('redirect "crawl delay" -sitemap -"robots txt" timeout'), {
      words: 'redirect timeout',
      phrases: ['crawl delay'],
      excluded: ['robots txt', 'sitemap'],
    });
  });
  it('leaves a hyphen inside a word alone, and runs an open quote to the end', () => {
    assert.deepEqual(parseQuery('e-mail "open ended'), {
      words: 'e-mail',
      phrases: ['open ended'],
      excluded: [],
    });
  });
  it('plain words stay as written; empty quotes are nothing', () => {
    assert.deepEqual(parseQuery('  hauptstrasse  cafe ""'), {
      words: 'hauptstrasse cafe',
      phrases: [],
      excluded: [],
    });
    assert.deepEqual(parseQuery('-draft'), { words: '', phrases: [], excluded: ['draft'] });
  });
  it('reads a decomposed accent as the composed letter documents are indexed with', () => {
    assert.equal(parseQuery('cafe\u0301 -na\u0308ive').words, 'caf\u00e9');
    assert.deepEqual(parseQuery('cafe\u0301 -na\u0308ive').excluded, ['n\u00e4ive']);
  });
  it(`keeps at most ${MAX_QUERY_TERMS} terms (OpenSearch refuses past 1,024 clauses): phrases and exclusions first, then the first distinct words`, () => {
    const words = Array.from({ length: 300 }, (_, i) => `w${i}`);
    const typed = `"a phrase" -"left out" ${words.join(' ')} W0 w1`;
    const { query, dropped } = boundedQuery(parseQuery(typed));
    assert.deepEqual(query.phrases, ['a phrase']);
    assert.deepEqual(query.excluded, ['left out']);
    assert.deepEqual(query.words.split(' '), words.slice(0, MAX_QUERY_TERMS - 2));
    assert.equal(dropped, 300 - (MAX_QUERY_TERMS - 2));
    assert.deepEqual(boundedQuery(parseQuery('short query')), {
      query: { words: 'short query', phrases: [], excluded: [] },
      dropped: 0,
    });
  });
});
