// A loopback web server for tests, the CLI's demo and the benchmark: static files from a directory
// plus programmable routes. No test-framework imports here, the demo imports it at run time.
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';

/** A programmed response for one path; `handler` takes over the whole exchange. */
export interface Route {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  handler?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
}

/** One request as the server saw it; `status` is 0 when the connection closed without a response. */
export interface RequestLog {
  method: string;
  /** the request target as sent (path and query) */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Date.now() when the request arrived */
  at: number;
  status: number;
}

/** A running server. */
export interface SiteServer {
  /** http://127.0.0.1:PORT (no trailing slash) */
  url: string;
  port: number;
  requests: RequestLog[];
  /** add, replace (route) or remove (null) a route at runtime */
  route(path: string, route: Route | null): void;
  close(): Promise<void>;
}

/** Options of {@link startSiteServer}. */
export interface SiteServerOptions {
  /** a directory served statically */
  root?: string;
  /** exact request target (`/a?b=1`) or path (`/a`) -> response; routes win over `root` */
  routes?: Record<string, Route>;
  host?: string;
  port?: number;
  /** Last-Modified of every static file instead of its mtime */
  lastModified?: Date;
}

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  json: 'application/json',
  png: 'image/png',
  gif: 'image/gif',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  svg: 'image/svg+xml',
  ico: 'image/x-icon',
  xml: 'application/xml',
  rss: 'application/rss+xml',
  txt: 'text/plain; charset=utf-8',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  mp4: 'video/mp4',
};

const NOT_FOUND =
  '<!doctype html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>';

/** The Content-Type a static file with this name is served with. */
export function contentTypeFor(file: string): string {
  const ext = path.extname(file).slice(1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

/** Starts a server on `host:port` (default 127.0.0.1 and a free port). */
export async function startSiteServer(opts: SiteServerOptions = {}): Promise<SiteServer> {
  const routes = new Map<string, Route>(Object.entries(opts.routes ?? {}));
  const requests: RequestLog[] = [];
  const sockets = new Set<Socket>();
  const root = opts.root === undefined ? undefined : path.resolve(opts.root);
  const server = http.createServer((req, res) => {
    logWhenAnswered(req, res, requests);
    const route = routes.get(req.url ?? '/') ?? routes.get(pathOf(req.url));
    const done = route ? serveRoute(route, req, res) : serveStatic(root, opts.lastModified, req, res);
    done.catch(() => fail(res));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    requests,
    route(p, r) {
      if (r) routes.set(p, r);
      else routes.delete(p);
    },
    close: () => closeServer(server, sockets),
  };
}

// The log entry is pushed when the status line is about to go out (every response passes through
// writeHead, implicit ones included), so a client never sees a response before it is logged.
function logWhenAnswered(req: http.IncomingMessage, res: http.ServerResponse, log: RequestLog[]): void {
  const entry: RequestLog = {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers: { ...req.headers },
    at: Date.now(),
    status: 0,
  };
  let logged = false;
  const push = (status: number) => {
    if (logged) return;
    logged = true;
    entry.status = status;
    log.push(entry);
  };
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    push(typeof args[0] === 'number' ? args[0] : this.statusCode);
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
  res.on('close', () => push(res.headersSent ? res.statusCode : 0));
}

function pathOf(target: string | undefined): string {
  const t = target ?? '/';
  const q = t.search(/[?#]/);
  return q === -1 ? t : t.slice(0, q);
}

async function serveRoute(route: Route, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (route.handler) {
    await (route.handler(req, res) as unknown);
    return;
  }
  const body = typeof route.body === 'string' ? Buffer.from(route.body) : (route.body ?? new Uint8Array(0));
  const headers: Record<string, string> = { ...route.headers };
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('content-type') && route.body !== undefined) {
    headers['Content-Type'] =
      typeof route.body === 'string' ? 'text/html; charset=utf-8' : 'application/octet-stream';
  }
  if (!has('content-length') && !has('transfer-encoding'))
    headers['Content-Length'] = String(body.byteLength);
  res.writeHead(route.status ?? 200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

async function serveStatic(
  root: string | undefined,
  lastModified: Date | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return send(
      res,
      req,
      405,
      { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' },
      'Method Not Allowed',
    );
  }
  const file = root === undefined ? null : resolveInside(root, pathOf(req.url));
  if (file === undefined)
    return send(res, req, 403, { 'Content-Type': 'text/plain; charset=utf-8' }, 'Forbidden');
  const stat = file === null ? null : await fsp.stat(file).catch(() => null);
  if (!file || !stat) return send(res, req, 404, { 'Content-Type': 'text/html; charset=utf-8' }, NOT_FOUND);
  if (stat.isDirectory()) {
    // `/dir` -> `/dir/`, as static servers do, so relative links in dir/index.html resolve
    const query = (req.url ?? '').slice(pathOf(req.url).length);
    return send(
      res,
      req,
      301,
      { Location: `${pathOf(req.url)}/${query}`, 'Content-Type': 'text/plain' },
      'Moved',
    );
  }
  const modified = lastModified ?? stat.mtime;
  const etag = `W/"${stat.size.toString(16)}-${Math.floor(modified.getTime()).toString(16)}"`;
  const headers = {
    'Last-Modified': modified.toUTCString(),
    ETag: etag,
    'Content-Type': contentTypeFor(file),
  };
  if (isNotModified(req, etag, modified))
    return send(res, req, 304, { 'Last-Modified': headers['Last-Modified'], ETag: etag }, '');
  return send(res, req, 200, headers, await fsp.readFile(file));
}

// undefined: refused (traversal, NUL, bad escape); null: no file; else the absolute file path.
function resolveInside(root: string, rawPath: string): string | null | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return undefined;
  }
  const segments = decoded.split(/[/\\]/);
  if (decoded.includes('\0') || segments.includes('..')) return undefined;
  const file = path.resolve(root, `.${decoded.endsWith('/') ? `${decoded}index.html` : decoded}`);
  return file === root || file.startsWith(root + path.sep) ? file : undefined;
}

// RFC 9110 §13.2.2: If-None-Match wins over If-Modified-Since; weak comparison for GET/HEAD.
function isNotModified(req: http.IncomingMessage, etag: string, modified: Date): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) {
    const tags = inm.split(',').map((t) => t.trim().replace(/^W\//, ''));
    return tags.includes('*') || tags.includes(etag.replace(/^W\//, ''));
  }
  const ims = Date.parse(req.headers['if-modified-since'] ?? '');
  // HTTP dates have whole seconds
  return !Number.isNaN(ims) && Math.floor(modified.getTime() / 1000) * 1000 <= ims;
}

function send(
  res: http.ServerResponse,
  req: http.IncomingMessage,
  status: number,
  headers: Record<string, string>,
  body: string | Uint8Array,
): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  if (status !== 304) headers['Content-Length'] = String(bytes.byteLength);
  res.writeHead(status, headers);
  res.end(req.method === 'HEAD' || status === 304 ? undefined : bytes);
}

function fail(res: http.ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('Internal Server Error');
}

function closeServer(server: http.Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    for (const socket of sockets) socket.destroy();
    server.closeAllConnections();
  });
}
