/** htmlparser2 with a bound on open elements (bounded-parser.ts): linear work on any nesting. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../shared/config.ts';
import { boundedParser, MAX_OPEN } from '../../../shared/crawl/extract/bounded-parser.ts';
import { extractHtml } from '../../../shared/crawl/extract/extract-html.ts';

/** The deepest the parser's open elements went while parsing `html` (its callbacks, counted). */
function deepest(html: string, xmlMode = false): number {
  let depth = 0;
  let max = 0;
  const parser = boundedParser(
    {
      onopentagname: () => {
        depth++;
        max = Math.max(max, depth);
      },
      onclosetag: () => {
        depth--;
      },
    },
    { xmlMode },
  );
  parser.end(html);
  assert.equal(depth, 0, 'every open tag closed once');
  return max;
}

describe('boundedParser', () => {
  it(`keeps at most ${MAX_OPEN} elements open, however deep the markup nests (unclosed or nested)`, () => {
    assert.equal(deepest('<p><b><i><a href="/u">'.repeat(20_000)), MAX_OPEN);
    assert.equal(deepest(`${'<div>'.repeat(20_000)}x${'</div>'.repeat(20_000)}`), MAX_OPEN);
    assert.equal(deepest(`${'<e>'.repeat(20_000)}x`, true), MAX_OPEN);
    assert.equal(deepest('<html><body><div><p>x</p></div></body></html>'), 4, 'ordinary pages as before');
  });

  it('reads the text and links past the bound, and a removed element around deep markup stays removed', () => {
    const config = parseConfig({ name: 'p', startUrls: ['http://a.test/'] });
    const html =
      `<html><body><footer>${'<div>'.repeat(2_000)}footer text</footer>` +
      `<main>${'<p><b><i><a href="/u">'.repeat(5_000)}<a href="/deep">deep</a> words</main></body></html>`;
    const r = extractHtml({ url: 'http://a.test/', html, options: config.extract });
    assert.match(r.content, /deep words$/);
    assert.doesNotMatch(r.content, /footer text/);
    assert.deepEqual(r.links, ['http://a.test/u', 'http://a.test/deep']);
  });
});
