// A real forward proxy on loopback that wants a Basic login (Proxy-Authorization), as enterprise
// proxies do: plain http in absolute form is forwarded to the origin, https is tunnelled with
// CONNECT; without the right credentials it answers 407 with Proxy-Authenticate. Every host name is
// reached on 127.0.0.1 (the test sites), its port kept. No test-framework imports.
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';

export interface ProxyRequest {
  method: string;
  /** the request target: an absolute URL, or host:port for CONNECT */
  target: string;
  /** the Proxy-Authorization header as received, if any */
  authorization: string | undefined;
  /** the status the proxy answered (200: forwarded or tunnelled) */
  status: number;
}

export interface AuthProxy {
  port: number;
  /** every request the proxy was asked, in order */
  requests: ProxyRequest[];
  /** the username and password it takes; may be changed between requests */
  login: { username: string; password: string };
  close(): Promise<void>;
}

const REFUSED = {
  'proxy-authenticate': 'Basic realm="trawl-test-proxy"',
  'content-type': 'text/plain',
};

/** Starts the proxy on a free loopback port. */
export async function startAuthProxy(login: { username: string; password: string }): Promise<AuthProxy> {
  const requests: ProxyRequest[] = [];
  const sockets = new Set<net.Socket>();
  const proxy: AuthProxy = { port: 0, requests, login: { ...login }, close: async () => {} };
  const allowed = (header: string | undefined) => {
    const want = Buffer.from(`${proxy.login.username}:${proxy.login.password}`).toString('base64');
    return header === `Basic ${want}`;
  };
  const server = http.createServer((req, res) => {
    const authorization = req.headers['proxy-authorization'];
    const entry: ProxyRequest = { method: req.method ?? '', target: req.url ?? '', authorization, status: 0 };
    requests.push(entry);
    const target = URL.parse(req.url ?? '');
    if (!allowed(authorization)) {
      entry.status = 407;
      req.resume();
      return void res.writeHead(407, REFUSED).end('login first');
    }
    if (target?.protocol !== 'http:') {
      entry.status = 400;
      return void res.writeHead(400).end('absolute-form http only');
    }
    entry.status = 200;
    // A proxy consumes Proxy-Authorization (RFC 9110 §11.7.2): the origin never sees it.
    const { 'proxy-authorization': _, ...headers } = req.headers;
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: target.port || 80,
        method: req.method,
        path: `${target.pathname}${target.search}`,
        headers,
        // A connection of its own per request: Node's global agent keeps upstream connections 5 s,
        // as long as the site's server keeps them, and a request racing that close got a 502 here
        // (a flake of this helper, not of the crawler behind it).
        agent: false,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    req.pipe(upstream);
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('error', () => client.destroy()).on('close', () => sockets.delete(client));
    const authorization = req.headers['proxy-authorization'];
    const entry: ProxyRequest = { method: 'CONNECT', target: req.url ?? '', authorization, status: 0 };
    requests.push(entry);
    if (!allowed(authorization)) {
      entry.status = 407;
      const lines = Object.entries(REFUSED).map(([k, v]) => `${k}: ${v}\r\n`);
      return void client.end(
        `HTTP/1.1 407 Proxy Authentication Required\r\n${lines.join('')}content-length: 0\r\n\r\n`,
      );
    }
    const port = Number((req.url ?? '').split(':').pop());
    const upstream = net.connect(port, '127.0.0.1', () => {
      entry.status = 200;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  proxy.port = (server.address() as net.AddressInfo).port;
  proxy.close = async () => {
    for (const s of sockets) s.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return proxy;
}
