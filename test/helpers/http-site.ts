// A loopback HTTP/1.1 server for one test, counting connections and requests (the fetcher and
// keep-alive tests). No test-framework imports.
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';

export interface Site {
  base: string;
  port: number;
  requests: http.IncomingMessage[];
  connections: number;
  server: http.Server;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** Serves `handler` on `host` while `run` runs; always closed afterwards. */
export async function withSite(handler: Handler, run: (site: Site) => Promise<void>, host = '127.0.0.1') {
  const server = http.createServer((req, res) => {
    site.requests.push(req);
    handler(req, res);
  });
  const site: Site = { base: '', port: 0, requests: [], connections: 0, server };
  server.on('connection', () => site.connections++);
  server.listen(0, host);
  await once(server, 'listening');
  site.port = (server.address() as net.AddressInfo).port;
  site.base = `http://${host.includes(':') ? `[${host}]` : host}:${site.port}`;
  try {
    await run(site);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}
