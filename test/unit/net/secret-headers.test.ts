import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headersToRecord } from '../../../shared/net/fetcher.ts';

describe('headersToRecord', () => {
  it('drops Set-Cookie and credential headers so page bundles and logs never hold them', () => {
    const record = headersToRecord({
      'content-type': 'text/html',
      'set-cookie': ['sid=secret1', 'b=secret2'],
      authorization: 'Bearer secret3',
      'proxy-authorization': 'Basic secret4',
      etag: '"x"',
    });
    assert.deepEqual(record, { 'content-type': 'text/html', etag: '"x"' });
    assert.doesNotMatch(JSON.stringify(record), /secret/);
  });

  it('drops them whatever their case when given as pairs', () => {
    const record = headersToRecord([
      ['Set-Cookie', 'sid=secret'],
      ['Last-Modified', 'Mon, 01 Jan 2024 00:00:00 GMT'],
    ]);
    assert.deepEqual(record, { 'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT' });
  });
});
