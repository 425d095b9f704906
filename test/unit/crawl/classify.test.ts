import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  backoffMs,
  classifyHttpStatus,
  classifyNetworkError,
  isIgnoredMimeType,
  parseRetryAfter,
  redirectTarget,
  type StatusContext,
} from '../../../shared/crawl/state/classify.ts';
import { FetchError } from '../../../shared/errors.ts';

const NOW = Date.parse('2025-01-01T00:00:00Z');
const plain: StatusContext = { conditional: false, retryAfter: null, now: NOW };

describe('classifyHttpStatus (seed 001 Error Handling)', () => {
  const table: [string, number, Partial<typeof plain>, ReturnType<typeof classifyHttpStatus>][] = [
    ['200 ok', 200, {}, { kind: 'ok', code: 'ok' }],
    ['204 ok', 204, {}, { kind: 'ok', code: 'ok' }],
    ['conditional 304', 304, { conditional: true }, { kind: 'not-modified', code: 'not-modified' }],
    ['non-conditional 304', 304, {}, { kind: 'permanent', code: 'non-conditional-304' }],
    ['301', 301, {}, { kind: 'redirect', code: 'redirect' }],
    ['302', 302, {}, { kind: 'redirect', code: 'redirect' }],
    ['307', 307, {}, { kind: 'redirect', code: 'redirect' }],
    ['308', 308, {}, { kind: 'redirect', code: 'redirect' }],
    ['404', 404, {}, { kind: 'permanent', code: 'http-404' }],
    ['410', 410, {}, { kind: 'permanent', code: 'http-410' }],
    ['403', 403, {}, { kind: 'permanent', code: 'http-403' }],
    ['500', 500, {}, { kind: 'permanent', code: 'http-500' }],
    ['502', 502, {}, { kind: 'permanent', code: 'http-502' }],
    ['503 without Retry-After', 503, {}, { kind: 'permanent', code: 'http-503' }],
    [
      '503 + seconds',
      503,
      { retryAfter: '120' },
      { kind: 'temporary', code: 'http-503', retryAfterMs: 120_000 },
    ],
    [
      '503 + HTTP-date',
      503,
      { retryAfter: 'Wed, 01 Jan 2025 00:05:00 GMT' },
      { kind: 'temporary', code: 'http-503', retryAfterMs: 300_000 },
    ],
    [
      '503 + past date',
      503,
      { retryAfter: 'Tue, 31 Dec 2024 00:00:00 GMT' },
      { kind: 'temporary', code: 'http-503', retryAfterMs: 0 },
    ],
    // A busy host, whatever its value says: the whole host waits the default (helper-44's audit).
    [
      '503 + garbage',
      503,
      { retryAfter: 'soon' },
      { kind: 'temporary', code: 'http-503', retryAfterMs: 60_000, retryAfterDefault: true },
    ],
    [
      '429 default',
      429,
      {},
      { kind: 'temporary', code: 'http-429', retryAfterMs: 60_000, retryAfterDefault: true },
    ],
    [
      '429 + garbage',
      429,
      { retryAfter: 'later please' },
      { kind: 'temporary', code: 'http-429', retryAfterMs: 60_000, retryAfterDefault: true },
    ],
    ['429 + seconds', 429, { retryAfter: '5' }, { kind: 'temporary', code: 'http-429', retryAfterMs: 5000 }],
    ['600 nonsense', 600, {}, { kind: 'permanent', code: 'http-600' }],
    // fetch.serverErrors "temporary": every 5xx is kept through; a 503's Retry-After still holds the host.
    [
      '502, serverErrors temporary',
      502,
      { serverErrors: 'temporary' },
      { kind: 'temporary', code: 'http-502' },
    ],
    [
      '503 bare, serverErrors temporary',
      503,
      { serverErrors: 'temporary' },
      { kind: 'temporary', code: 'http-503' },
    ],
    [
      '503 + seconds, serverErrors temporary',
      503,
      { retryAfter: '120', serverErrors: 'temporary' },
      { kind: 'temporary', code: 'http-503', retryAfterMs: 120_000 },
    ],
    [
      '404, serverErrors temporary',
      404,
      { serverErrors: 'temporary' },
      { kind: 'permanent', code: 'http-404' },
    ],
  ];
  for (const [label, status, ctx, expected] of table) {
    it(label, () => assert.deepEqual(classifyHttpStatus(status, { ...plain, ...ctx }), expected));
  }
});

describe('parseRetryAfter', () => {
  it('reads obsolete RFC 850 dates and rejects negative numbers', () => {
    assert.equal(parseRetryAfter('Wednesday, 01-Jan-25 00:01:00 GMT', NOW), 60_000);
    assert.equal(parseRetryAfter('-5', NOW), null);
    assert.equal(parseRetryAfter('  7 ', NOW), 7000);
  });
});

describe('classifyNetworkError (seed 001 Error Handling)', () => {
  const err = (code: string) => Object.assign(new Error(code), { code });
  const table: [string, unknown, ReturnType<typeof classifyNetworkError>][] = [
    ['ETIMEDOUT', err('ETIMEDOUT'), { kind: 'temporary', code: 'timeout' }],
    [
      'TimeoutError',
      Object.assign(new Error('t'), { name: 'TimeoutError' }),
      { kind: 'temporary', code: 'timeout' },
    ],
    ['ECONNRESET', err('ECONNRESET'), { kind: 'temporary', code: 'connection-reset' }],
    ['ECONNREFUSED', err('ECONNREFUSED'), { kind: 'temporary', code: 'connection-refused' }],
    ['EAI_AGAIN (DNS no answer)', err('EAI_AGAIN'), { kind: 'temporary', code: 'dns-no-answer' }],
    ['ENOTFOUND (DNS permanent)', err('ENOTFOUND'), { kind: 'permanent', code: 'dns-not-found' }],
    ['EHOSTUNREACH (other)', err('EHOSTUNREACH'), { kind: 'permanent', code: 'connection-error' }],
    ['HPE parse error', err('HPE_INVALID_CONSTANT'), { kind: 'permanent', code: 'protocol-error' }],
    ['TLS cert', err('DEPTH_ZERO_SELF_SIGNED_CERT'), { kind: 'permanent', code: 'tls-error' }],
    // A leaf signed by a CA the crawl was not given (fetch.caCertificates): no CERT in the name.
    ['unknown CA', err('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), { kind: 'permanent', code: 'tls-error' }],
    ['no issuer', err('UNABLE_TO_GET_ISSUER_CERT_LOCALLY'), { kind: 'permanent', code: 'tls-error' }],
    ['invalid CA', err('INVALID_CA'), { kind: 'permanent', code: 'tls-error' }],
    ['zlib', err('Z_DATA_ERROR'), { kind: 'permanent', code: 'content-decoding' }],
    [
      'wrapped cause',
      new Error('fetch failed', { cause: err('ECONNRESET') }),
      { kind: 'temporary', code: 'connection-reset' },
    ],
    [
      'a temporary FetchError',
      new FetchError('t', 'temporary', 'timeout'),
      { kind: 'temporary', code: 'timeout' },
    ],
    [
      'a permanent FetchError',
      new FetchError('p', 'permanent', 'private-address'),
      { kind: 'permanent', code: 'private-address' },
    ],
    ['not an Error', 'boom', { kind: 'permanent', code: 'connection-error' }],
  ];
  for (const [label, input, expected] of table) {
    it(label, () => assert.deepEqual(classifyNetworkError(input), expected));
  }
});

describe('backoffMs', () => {
  it('grows exponentially under full jitter and stops at the cap', () => {
    assert.equal(
      backoffMs(0, () => 0.999999),
      999,
    );
    assert.equal(
      backoffMs(3, () => 0.5),
      4000,
    );
    assert.equal(
      backoffMs(100, () => 0.5),
      450_000,
    );
    assert.equal(
      backoffMs(5000, () => 1 - Number.EPSILON),
      15 * 60_000 - 1,
    );
    assert.equal(
      backoffMs(-1, () => 0.5, 200),
      100,
    );
    assert.equal(
      backoffMs(4, () => 0),
      0,
    );
  });
});

describe('isIgnoredMimeType', () => {
  const table: [string, string[], boolean][] = [
    ['video/mp4', ['video/*'], true],
    ['Video/MP4; codecs="avc1"', ['video/*'], true],
    ['text/html; charset=utf-8', ['video/*', 'audio/*', 'image/*'], false],
    ['application/pdf', ['application/pdf'], true],
    ['application/pdfx', ['application/pdf'], false],
    ['videox/mp4', ['video/*'], false],
    ['text/plain', ['*/*'], true],
    ['', ['*/*'], false],
  ];
  for (const [mime, patterns, expected] of table) {
    it(`${mime || '(none)'} vs ${patterns.join(',')}`, () =>
      assert.equal(isIgnoredMimeType(mime, patterns), expected));
  }
});

describe('redirectTarget (seed 001: redirection to a malformed URL is permanent)', () => {
  const base = 'http://www.example.com/a/b?q=1';
  const table: [string, string | undefined, string | null][] = [
    ['relative path', 'c?d=2', 'http://www.example.com/a/c?d=2'],
    ['absolute path', '/x', 'http://www.example.com/x'],
    ['scheme-relative', '//cdn.example.com/y', 'http://cdn.example.com/y'],
    ['absolute', 'https://other.example/z', 'https://other.example/z'],
    [
      'UTF-8 bytes read as latin1',
      Buffer.from('/caf\u00e9', 'utf8').toString('latin1'),
      'http://www.example.com/caf%C3%A9',
    ],
    ['space in host', 'http://exa mple.com/', null],
    ['unclosed IPv6', 'http://[::1/', null],
    ['empty', '  ', null],
    ['missing', undefined, null],
  ];
  for (const [label, location, expected] of table) {
    it(label, () => assert.equal(redirectTarget(location, base), expected));
  }
});
