/**
 * The CLI's warnings from the stages' logger, in words (`trawl: warning: …`), not raw JSON lines
 * mixed into `trawl crawl`'s output (helper-47); the JSON stays for tools when a level is asked for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inWords } from '../../../shared/stages/logger.ts';

describe('inWords: a Powertools line as the CLI says it', () => {
  it("keeps the message and the line's own fields, drops the Lambda context", () => {
    const line = JSON.stringify({
      level: 'WARN',
      message: 'Crawl-delay capped at limits.crawlDelayMs',
      timestamp: '2026-11-29T10:00:00.000Z',
      service: 'trawl',
      cold_start: false,
      function_name: 'trawl-local-fetch',
      function_request_id: 'x',
      sampling_rate: 0,
      host: 'a.test',
      askedMs: 120000,
    });
    assert.equal(
      inWords(line),
      'trawl: warning: Crawl-delay capped at limits.crawlDelayMs (host: a.test, askedMs: 120000)',
    );
  });

  it("an error's message, not its stack; a long value cut", () => {
    const line = JSON.stringify({
      level: 'ERROR',
      message: 'extract record failed',
      error: { name: 'InternalError', message: 'HTTP 500', stack: 'InternalError: HTTP 500\n    at x' },
      messageId: 'm1',
      big: { list: 'x'.repeat(500) },
    });
    const words = inWords(line) ?? '';
    assert.match(
      words,
      /^trawl: error: extract record failed \(error: HTTP 500, messageId: m1, big: \{"list":"x+…\)$/,
    );
    assert.ok(words.length < 320, `${words.length} characters`);
  });

  it('leaves what is not a Powertools line alone', () => {
    assert.equal(inWords('plain text'), null);
    assert.equal(inWords('{"no":"message"}'), null);
  });
});
