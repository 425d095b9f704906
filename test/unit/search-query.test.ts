/** `trawl search`'s query: phrases in quotes, exclusions with a minus, the rest words. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseQuery } from '../../shared/search/opensearch-sink.ts';

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
});
