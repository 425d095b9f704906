/**
 * HTTP keep-alive (fetch.keepAliveSeconds, shared/net/connection-pool.ts) against real servers on
 * loopback: what reuses a connection, what must not, and a site that closes kept connections
 * (at its idle timeout, or as the next request goes out).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { closeIdle, idleConnections } from '../../shared/net/connection-pool.ts';
import { type FetchOutcome, fetchUrl } from '../../shared/net/fetcher.ts';
import { fetchOptions } from '../helpers/fetch-options.ts';
import { withSite } from '../helpers/http-site.ts';
import { startHandshakeFront, TLS_FIXTURE, trustTlsFixture } from '../helpers/tls-front.ts';

const openOn = (server: net.Server) =>
  new Promise<number>((resolve, reject) =>
    server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );

const page = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.setHeader('content-type', 'text/html');
  res.end('<html><body>hello</body></html>');
};
const kept = (over = {}) => fetchOptions({ keepAliveMs: 4000, ...over });
const ok = (r: FetchOutcome) => {
  assert.equal(r.kind, 'ok', JSON.stringify(r));
};

describe('keep-alive', () => {
  afterEach(() => closeIdle());

  it('sends the next requests to a site over the connection the first one opened', async () => {
    await withSite(page, async (site) => {
      for (let i = 0; i < 5; i++) ok(await fetchUrl(`${site.base}/${i}.html`, kept()));
      assert.equal(site.requests.length, 5);
      assert.equal(site.connections, 1);
      assert.equal(idleConnections(), 1);
    });
  });

  it('a response the parser refuses on a kept connection is an answer: not sent again', async () => {
    const big = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/big') res.setHeader('x-big', 'x'.repeat(2048));
      page(req, res);
    };
    await withSite(big, async (site) => {
      ok(await fetchUrl(`${site.base}/first`, kept({ maxHeaderBytes: 1024 })));
      const out = await fetchUrl(`${site.base}/big`, kept({ maxHeaderBytes: 1024 }));
      assert.deepEqual(out.kind === 'error' && [out.errorKind, out.code], ['permanent', 'header-overflow']);
      // It was taken for the site closing the kept connection, and sent again until it came to
      // a new connection (4 requests a page, helper-47).
      assert.deepEqual(
        site.requests.map((r) => r.url),
        ['/first', '/big'],
      );
    });
  });

  it('opens one connection a request with keepAliveMs 0, or when the site says close', async () => {
    await withSite(page, async (site) => {
      for (let i = 0; i < 3; i++) ok(await fetchUrl(`${site.base}/${i}.html`, fetchOptions()));
      assert.equal(site.connections, 3);
    });
    const closing = (req: http.IncomingMessage, res: http.ServerResponse) => {
      res.setHeader('connection', 'close');
      page(req, res);
    };
    await withSite(closing, async (site) => {
      for (let i = 0; i < 3; i++) ok(await fetchUrl(`${site.base}/${i}.html`, kept()));
      assert.equal(site.connections, 3);
      assert.equal(idleConnections(), 0);
    });
  });

  it('keeps no connection whose response was not read to its end', { timeout: 20_000 }, async () => {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/big') return res.end('x'.repeat(64 * 1024)); // truncated at maxBytes
      if (req.url === '/video') {
        res.setHeader('content-type', 'video/mp4'); // skipped on its headers, body unread
        return res.end('x'.repeat(1024));
      }
      if (req.url === '/long-404') return res.writeHead(404).end('x'.repeat(64 * 1024));
      if (req.url === '/slow-404') return res.writeHead(404).write('never ends'); // and never ends
      page(req, res);
    };
    await withSite(handler, async (site) => {
      const results = [];
      for (const path of ['/big', '/video', '/long-404', '/slow-404'])
        results.push((await fetchUrl(`${site.base}${path}`, kept({ maxBytes: 1024 }))).kind);
      // The slow body does not hold the 404 up (its outcome came first); its connection goes.
      assert.deepEqual(results, ['ok', 'skipped', 'error', 'error']);
      // The slow body's connection is closed after its drain time (2 s), not kept.
      while ((await openOn(site.server)) > 0) await new Promise((r) => setTimeout(r, 50));
      assert.equal(idleConnections(), 0);
      assert.equal(site.connections, 4);
    });
  });

  it('gives a skipped MIME type its outcome before its deadline, and drops its connection', async () => {
    // A small image arrives whole with its headers; its response is destroyed unread. Waiting for
    // its end (which never comes) held each skipped image up to the fetch's deadline.
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/logo.png') return res.writeHead(200, { 'content-type': 'image/png' }).end('PNG');
      page(req, res);
    };
    await withSite(handler, async (site) => {
      const timeoutMs = 120_000;
      const started = Date.now();
      const out = await fetchUrl(`${site.base}/logo.png`, kept({ timeoutMs }));
      const took = Date.now() - started;
      assert.equal(out.kind, 'skipped');
      assert.ok(took < timeoutMs / 2, `the outcome waited ${took} ms of its ${timeoutMs} ms deadline`);
      ok(await fetchUrl(`${site.base}/a.html`, kept({ timeoutMs })));
      assert.equal(site.connections, 2, 'the skipped response took its connection with it');
    });
  });

  it('keeps the connection of an error or redirect whose short body is dropped', async () => {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/robots.txt') return res.writeHead(404).end(); // chunked, empty
      if (req.url === '/missing') return res.writeHead(404, { 'content-length': 8 }).end('not here');
      if (req.url === '/moved') return res.writeHead(301, { location: '/' }).end('moved');
      page(req, res);
    };
    await withSite(handler, async (site) => {
      const results = [];
      for (const path of ['/robots.txt', '/a', '/missing', '/moved', '/b'])
        results.push((await fetchUrl(`${site.base}${path}`, kept())).kind);
      assert.deepEqual(results, ['error', 'ok', 'error', 'redirect', 'ok']);
      assert.equal(site.connections, 1);
    });
  });

  it('keeps the connection of a 304 (no body) for the next request', async () => {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.headers['if-none-match'] === '"v1"') return res.writeHead(304, { etag: '"v1"' }).end();
      page(req, res);
    };
    await withSite(handler, async (site) => {
      const first = await fetchUrl(`${site.base}/a`, kept({ conditional: { etag: '"v1"' } }));
      assert.equal(first.kind, 'not-modified');
      ok(await fetchUrl(`${site.base}/b`, kept()));
      assert.equal(site.connections, 1);
    });
  });

  it('opens a new connection once the site closed the kept one at its idle timeout', {
    timeout: 20_000,
  }, async () => {
    await withSite(page, async (site) => {
      site.server.keepAliveTimeout = 100;
      const closed = new Promise((r) =>
        site.server.once('connection', (s: net.Socket) => s.once('close', r)),
      );
      ok(await fetchUrl(`${site.base}/a`, kept()));
      assert.equal(idleConnections(), 1);
      await closed;
      // The site's FIN takes the connection out of the pool as it arrives.
      while (idleConnections() > 0) await new Promise((r) => setTimeout(r, 10));
      ok(await fetchUrl(`${site.base}/b`, kept()));
      assert.equal(site.connections, 2);
    });
  });

  it('a kept connection the site closes while the request waits for its turn: a new one, no hang', {
    timeout: 20_000,
  }, async () => {
    // A Crawl-delay longer than the site's keep-alive timeout: the connection was taken before
    // the wait and written to after the site had closed it; the request hung until timeoutMs
    // (a robots.txt read that way lost its whole site). Now it stays in the pool while the task
    // waits, and leaves it when the site closes it.
    await withSite(page, async (site) => {
      site.server.keepAliveTimeout = 200; // Node 24 adds a second (keepAliveTimeoutBuffer)
      ok(await fetchUrl(`${site.base}/a`, kept()));
      assert.equal(idleConnections(), 1);
      const turn = async () => {
        await new Promise((r) => setTimeout(r, 2500));
        return {};
      };
      const started = Date.now();
      ok(await fetchUrl(`${site.base}/b`, kept({ turn, timeoutMs: 8000 })));
      assert.ok(Date.now() - started < 8000, 'answered, not timed out');
      assert.equal(site.connections, 2);
      assert.deepEqual(
        site.requests.map((r) => r.url),
        ['/a', '/b'],
      );
    });
  });

  it('drops a kept connection past keepAliveMs', async () => {
    await withSite(page, async (site) => {
      ok(await fetchUrl(`${site.base}/a`, kept({ keepAliveMs: 50 })));
      await new Promise((r) => setTimeout(r, 150));
      ok(await fetchUrl(`${site.base}/b`, kept({ keepAliveMs: 50 })));
      assert.equal(site.connections, 2);
    });
  });

  /**
   * A raw server: answers the first `answered` requests, each on a connection of its own first
   * request, then closes the connection without an answer (what a keep-alive timeout racing the
   * request does, or a firewall that drops what it has read).
   */
  async function droppingServer(answers: (request: number, onConnection: number) => boolean) {
    const site = { connections: 0, requests: 0, base: '', close: () => server.close() };
    const server = net.createServer((socket) => {
      site.connections++;
      let onConnection = 0;
      socket.on('error', () => {});
      socket.on('data', (chunk) => {
        if (!chunk.includes('\r\n\r\n')) return;
        if (!answers(++site.requests, ++onConnection)) return socket.destroy();
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nhello');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    site.base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    return site;
  }

  it('a site that drops the kept connection as the request goes out: sent again without a turn, late with one', async () => {
    // Each connection's first request answered, its second dropped.
    const plain = await droppingServer((_, onConnection) => onConnection === 1);
    try {
      ok(await fetchUrl(`${plain.base}/a`, kept()));
      ok(await fetchUrl(`${plain.base}/b`, kept()));
      assert.equal(plain.connections, 2, 'the second request went again on a new connection');
      assert.equal(idleConnections(), 0, 'the site drops kept connections: none kept for it');
      ok(await fetchUrl(`${plain.base}/c`, kept()));
      assert.deepEqual([plain.connections, plain.requests], [3, 4], '/c on a connection of its own');
    } finally {
      plain.close();
    }
    const polite = await droppingServer((_, onConnection) => onConnection === 1);
    try {
      ok(await fetchUrl(`${polite.base}/a`, kept()));
      const turn = async () => ({ sendBy: Date.now() + 1000 });
      assert.equal((await fetchUrl(`${polite.base}/c`, kept({ turn }))).kind, 'late');
      ok(await fetchUrl(`${polite.base}/d`, kept({ turn })));
      assert.equal(polite.connections, 2);
    } finally {
      polite.close();
    }
  });

  it('a site that drops every request: each fetch sends it at most twice, then once (no free late turns)', async () => {
    // The first request answered, every later one dropped, on whatever connection.
    const site = await droppingServer((request) => request === 1);
    try {
      ok(await fetchUrl(`${site.base}/a`, kept()));
      assert.equal((await fetchUrl(`${site.base}/b`, kept())).kind, 'error');
      assert.equal(site.requests, 3, '/b on the kept connection, then on a new one');
      // A polite host: each task connects first, finds its turn not due (the connection would be
      // kept for its next try), then goes on its turn.
      const notDue = async () => ({ requeueSeconds: 1 });
      const turn = async () => ({ sendBy: Date.now() + 1000 });
      for (const path of ['/c', '/d', '/e']) {
        assert.equal((await fetchUrl(`${site.base}${path}`, kept({ turn: notDue }))).kind, 'not-due');
        const before: number = site.requests;
        const res = await fetchUrl(`${site.base}${path}`, kept({ turn }));
        assert.equal(res.kind, 'error', `${path}: an error (a temporary one, counted), not a free late`);
        assert.equal(site.requests - before, 1);
      }
      assert.equal(idleConnections(), 0);
    } finally {
      site.close();
    }
  });

  it("keeps the connection of a turn not due (nothing sent) for the host's next task; closes a missed one", async () => {
    await withSite(page, async (site) => {
      const notDue = async () => ({ requeueSeconds: 1 });
      assert.equal((await fetchUrl(`${site.base}/a`, kept({ turn: notDue }))).kind, 'not-due');
      assert.equal(idleConnections(), 1);
      ok(await fetchUrl(`${site.base}/a`, kept({ turn: async () => ({}) })));
      assert.equal(site.connections, 1, "the due turn went over the not-due one's connection");
      assert.equal(idleConnections(), 1);
      const missed = async () => ({ sendBy: Date.now() - 1 });
      assert.equal((await fetchUrl(`${site.base}/b`, kept({ turn: missed }))).kind, 'late');
      assert.equal(idleConnections(), 0);
      ok(await fetchUrl(`${site.base}/b`, kept({ turn: async () => ({}) })));
      assert.equal(site.connections, 2);
      assert.deepEqual(
        site.requests.map((r) => r.url),
        ['/a', '/b'],
        'only the due turns sent their request',
      );
    });
  });

  it('over TLS, the next request pays no handshake', async () => {
    const untrust = trustTlsFixture();
    const server = https.createServer(TLS_FIXTURE, page);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const front = await startHandshakeFront((server.address() as net.AddressInfo).port, 100);
    try {
      const opts = kept({ resolve: { 'a.tls.test': '127.0.0.1' } });
      const times = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        ok(await fetchUrl(`https://a.tls.test:${front.port}/${i}.html`, opts));
        times.push(performance.now() - t);
      }
      assert.equal(front.connections, 1);
      // The first request paid the 100 ms hold; the kept connection's did not.
      assert.ok((times[0] ?? 0) >= 100, `first ${times[0]} ms`);
    } finally {
      closeIdle();
      front.close();
      server.closeAllConnections();
      server.close();
      untrust?.();
    }
  });
});
