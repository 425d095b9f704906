/**
 * SigV4 on the wire: the search client, given AWS signing, sends requests signed for the service
 * and region with the SDK credential chain's credentials (here: the environment's), to a real
 * loopback server standing in for the AWS endpoint.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { searchClient } from '../../shared/search/opensearch-sink.ts';

describe('search client signing', () => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ took: 1, errors: false, items: [] }));
    });
  });
  let endpoint: string;
  const saved = { ...process.env };
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDSEARCHTEST', AWS_SECRET_ACCESS_KEY: 'secret' });
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_PROFILE;
  });
  after(() => {
    process.env = saved;
    server.close();
  });

  it('signs for aoss with the credential chain; plain endpoints are not signed', async () => {
    const signed = searchClient(endpoint, { service: 'aoss', region: 'eu-west-1' });
    await signed.bulk({ body: [{ index: { _index: 'x', _id: '1' } }, { a: 1 }] });
    const auth = String(seen[0]?.authorization);
    assert.match(auth, /^AWS4-HMAC-SHA256 Credential=AKIDSEARCHTEST\/\d{8}\/eu-west-1\/aoss\/aws4_request/);
    assert.match(String(seen[0]?.['x-amz-content-sha256']), /^[0-9a-f]{64}$/, 'aoss needs the payload hash');
    await searchClient(endpoint).bulk({ body: [{ index: { _index: 'x', _id: '1' } }, { a: 1 }] });
    assert.equal(seen[1]?.authorization, undefined);
  });
});
