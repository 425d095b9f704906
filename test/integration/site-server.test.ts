import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateDemoSite } from '../../demo/generate-site.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

// A raw request: fetch() and http.get() would normalize `/../x` away before sending it.
function rawGet(port: number, target: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    });
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('end', () =>
      resolve({ status: Number(data.split(' ')[1]), body: data.split('\r\n\r\n')[1] ?? '' }),
    );
  });
}

describe('startSiteServer', () => {
  let tmp = '';
  let root = '';
  let server: SiteServer;
  before(async () => {
    tmp = mkdtempSync(path.join(tmpdir(), 'trawl-site-server-'));
    root = path.join(tmp, 'site');
    mkdirSync(root);
    writeFileSync(path.join(tmp, 'secret.txt'), 'TOP SECRET');
    generateDemoSite(root, { pages: 40 });
    server = await startSiteServer({ root });
  });
  after(async () => {
    await server.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('listens on a free loopback port', () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(server.url, `http://127.0.0.1:${server.port}`);
    assert.ok(server.port > 0);
  });

  const types: [string, string][] = [
    ['/', 'text/html; charset=utf-8'],
    ['/guide/', 'text/html; charset=utf-8'],
    ['/about.html', 'text/html; charset=utf-8'],
    ['/robots.txt', 'text/plain; charset=utf-8'],
    ['/sitemap.xml', 'application/xml'],
    ['/images/diagram.png', 'image/png'],
    ['/styles/site.css', 'text/css; charset=utf-8'],
  ];
  for (const [p, type] of types) {
    it(`serves ${p} as ${type}`, async () => {
      const res = await fetch(server.url + p);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), type);
      assert.ok(res.headers.get('last-modified'));
      assert.match(res.headers.get('etag') ?? '', /^W\/"/);
      assert.ok((await res.arrayBuffer()).byteLength > 0);
    });
  }

  it('serves the page body with its title and ignores the query string', async () => {
    const res = await fetch(`${server.url}/?utm_source=x`);
    assert.match(await res.text(), /<title>Trawl Demo Site<\/title>/);
  });

  it('answers 404 text/html for a missing file and 301 for a directory without slash', async () => {
    const missing = await fetch(`${server.url}/guide/retired-page-99.html`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await missing.text(), /Not Found/);
    const dir = await fetch(`${server.url}/guide`, { redirect: 'manual' });
    assert.equal(dir.status, 301);
    assert.equal(dir.headers.get('location'), '/guide/');
  });

  it('answers HEAD with headers and no body, other methods with 405', async () => {
    const head = await fetch(`${server.url}/about.html`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.ok(Number(head.headers.get('content-length')) > 100);
    assert.equal((await head.arrayBuffer()).byteLength, 0);
    const post = await fetch(`${server.url}/about.html`, { method: 'POST', body: 'x' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });

  it('answers conditional GETs with 304', async () => {
    const first = await fetch(`${server.url}/about.html`);
    await first.arrayBuffer();
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    const byEtag = await fetch(`${server.url}/about.html`, { headers: { 'If-None-Match': `"x", ${etag}` } });
    assert.equal(byEtag.status, 304);
    assert.equal(byEtag.headers.get('etag'), etag);
    const byDate = await fetch(`${server.url}/about.html`, {
      headers: { 'If-Modified-Since': lastModified },
    });
    assert.equal(byDate.status, 304);
    const stale = await fetch(`${server.url}/about.html`, {
      headers: { 'If-Modified-Since': new Date(0).toUTCString() },
    });
    assert.equal(stale.status, 200);
    const otherTag = await fetch(`${server.url}/about.html`, {
      headers: { 'If-None-Match': 'W/"nope"', 'If-Modified-Since': lastModified },
    });
    assert.equal(otherTag.status, 200, 'If-None-Match wins over If-Modified-Since');
    await Promise.all([stale.arrayBuffer(), otherTag.arrayBuffer()]);
  });

  it('lets routes override static files, and be replaced and removed at runtime', async () => {
    server.route('/about.html', {
      status: 200,
      body: 'overridden',
      headers: { 'Content-Type': 'text/plain', 'X-Test': '1' },
    });
    const over = await fetch(`${server.url}/about.html`);
    assert.equal(await over.text(), 'overridden');
    assert.equal(over.headers.get('x-test'), '1');
    server.route('/about.html', {
      handler: (_req, res) => res.writeHead(503, { 'Retry-After': '1' }).end('busy'),
    });
    const replaced = await fetch(`${server.url}/about.html`);
    assert.equal(replaced.status, 503);
    assert.equal(await replaced.text(), 'busy');
    server.route('/about.html', null);
    const restored = await fetch(`${server.url}/about.html`);
    assert.equal(restored.status, 200);
    assert.match(await restored.text(), /<title>About<\/title>/);
  });

  it('matches a route by exact target before path, with a binary body', async () => {
    server.route('/feed?page=2', { body: new Uint8Array([1, 2, 3]) });
    server.route('/feed', { status: 302, headers: { Location: '/' } });
    const exact = await fetch(`${server.url}/feed?page=2`);
    assert.equal(exact.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual([...new Uint8Array(await exact.arrayBuffer())], [1, 2, 3]);
    const other = await fetch(`${server.url}/feed?page=3`, { redirect: 'manual' });
    assert.equal(other.status, 302);
    server.route('/feed?page=2', null);
    server.route('/feed', null);
  });

  it('refuses path traversal', async () => {
    for (const target of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/guide/..%2f..%2fsecret.txt',
      '/../package.json',
    ]) {
      const res = await rawGet(server.port, target);
      assert.equal(res.status, 403, target);
      assert.doesNotMatch(res.body, /TOP SECRET|"name"/, target);
    }
  });

  it('logs every request with its status', async () => {
    const before = server.requests.length;
    await (
      await fetch(`${server.url}/no-such-page.html`, { headers: { 'User-Agent': 'trawl-test' } })
    ).arrayBuffer();
    await (await fetch(`${server.url}/contact.html`, { method: 'HEAD' })).arrayBuffer();
    const [miss, head] = server.requests.slice(before);
    assert.deepEqual([miss?.method, miss?.path, miss?.status], ['GET', '/no-such-page.html', 404]);
    assert.equal(miss?.headers['user-agent'], 'trawl-test');
    assert.deepEqual([head?.method, head?.path, head?.status], ['HEAD', '/contact.html', 200]);
    assert.ok(head!.at >= miss!.at && miss!.at > Date.now() - 60_000);
    assert.ok(server.requests.some((r) => r.status === 403 && r.path === '/../secret.txt'));
  });
});

describe('startSiteServer options', () => {
  it('uses the given Last-Modified and closes with a connection still open', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'trawl-site-server-'));
    writeFileSync(path.join(root, 'a.json'), '{}');
    writeFileSync(path.join(root, 'b.gz'), 'x');
    const lastModified = new Date('2024-05-01T12:00:00Z');
    let arrived = false;
    const slow = {
      handler: () => {
        arrived = true;
      },
    };
    const server = await startSiteServer({ root, lastModified, routes: { '/slow': slow } });
    try {
      const res = await fetch(`${server.url}/a.json`);
      assert.equal(res.headers.get('last-modified'), lastModified.toUTCString());
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.equal((await fetch(`${server.url}/b.gz`)).headers.get('content-type'), 'application/gzip');
      const hanging = fetch(`${server.url}/slow`).catch((e: unknown) => e);
      await waitFor(() => arrived || undefined);
      await server.close();
      assert.ok((await hanging) instanceof Error, 'the hanging request fails once the server closes');
      await waitFor(() => server.requests.length === 3 || undefined);
      assert.deepEqual([server.requests[2]?.path, server.requests[2]?.status], ['/slow', 0]);
      await server.close();
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('accepts initial routes without a root', async () => {
    const server = await startSiteServer({ routes: { '/x': { body: 'hi' } } });
    try {
      assert.equal(await (await fetch(`${server.url}/x`)).text(), 'hi');
      assert.equal((await fetch(`${server.url}/y`)).status, 404);
    } finally {
      await server.close();
    }
  });
});

async function waitFor(check: () => true | undefined, deadlineMs = 5000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met before the deadline');
    await new Promise((r) => setTimeout(r, 10));
  }
}
