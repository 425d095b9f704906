/**
 * The HTTP fetcher: one GET, bounded in time (overall deadline), wire bytes and decoded bytes, guarded
 * against private targets (SSRF). Redirects are returned, not followed: the pipeline re-enqueues the
 * target after its scope check (seed 003 followRedirects/maxRedirects). Errors never throw: they become
 * seed 001's permanent/temporary categories through classify.ts.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { open, unlink } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { finished, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tls from 'node:tls';
import zlib from 'node:zlib';
import {
  classifyHttpStatus,
  classifyNetworkError,
  isIgnoredMimeType,
  redirectTarget,
} from '../crawl/state/classify.ts';
import type { BudgetShare } from '../crawl/state/concurrency.ts';
import { FetchError } from '../errors.ts';
import { hasIdle, keepIdle, keptConnectionDropped, takeIdle } from './connection-pool.ts';
import {
  connectGuarded,
  destroyLayers,
  destroyOnAbort,
  detachSockets,
  overrideFor,
  type PrivateAllow,
  portOf,
  resolveGuarded,
} from './ip-guard.ts';
import { type FetchProxy, proxyAnswerError, proxyAuthorization, proxyConnectionId } from './proxy.ts';

export interface FetchOptions {
  userAgent: string;
  /** overall deadline for connect + headers + body (SMILA socketTimeout, but a drip cannot extend it) */
  timeoutMs: number;
  /** wire bytes kept; past this the read stops and `truncated` is set */
  maxBytes: number;
  /** false, true, or the CIDRs / IPs / host names whose private addresses may be fetched */
  allowPrivateNetworks: PrivateAllow;
  /** host -> IP like curl --resolve: the URL's port, Host header and TLS servername are kept */
  resolve: Record<string, string>;
  /** PEM CA certificates trusted besides the system's (fetch.caCertificates) */
  caCertificates?: string[];
  /**
   * SMILA proxyHost/proxyPort: absolute-form for http, CONNECT for https; its credentials go to the
   * proxy only, as `Proxy-Authorization` on the CONNECT request and on plain-http requests
   */
  proxy: FetchProxy | null;
  conditional?: { etag?: string; lastModified?: string };
  /** fetch.serverErrors: whether a 5xx is a permanent error (the default) or a temporary one */
  serverErrors?: 'permanent' | 'temporary';
  ignoredMimeTypes: string[];
  /** seed 004: read the MIME type from the headers and skip an ignored type without reading its body */
  metadataFirst: boolean;
  /** decoded bytes kept when Content-Encoding is used; default `maxBytes` (gzip bomb cap) */
  maxDecompressedBytes?: number;
  now?: () => number;
  method?: 'GET' | 'POST';
  /** status line + response headers; more fails the fetch with `header-overflow` (limits.headerBytes) */
  maxHeaderBytes?: number;
  /** extra request headers (shared/net/auth.ts: credentials for URLs under their prefix only) */
  headers?: HeaderRecord;
  /** a request body (a login form's POST) */
  body?: { contentType: string; data: string };
  /** receives the response's Set-Cookie values, which headersToRecord drops (a form login's session) */
  onSetCookie?: (values: string[]) => void;
  /**
   * Politeness: the host's turn, taken once the connection is open (TCP, TLS: a real network's round
   * trips) so that they never eat into the turn. Resolves with the time the request must leave by
   * (epoch ms; past it nothing is sent and `late` returned), or with the seconds until the host is
   * due (nothing sent, `not-due`). Waiting for it does not count towards `timeoutMs`; what it
   * throws (an AWS failure) is thrown by fetchUrl, not made an outcome.
   */
  turn?: () => Promise<{ sendBy?: number } | { requeueSeconds: number }>;
  /**
   * Memory: a body growing past `afterBytes` (decoded) takes a share of the invocation's byte budget
   * from `share` and reserves every byte it reads from then on (what it holds so far first), so
   * large bodies together stay within the budget; waiting for room does not count towards `timeoutMs`.
   */
  largeBodies?: { afterBytes: number; share: () => Promise<BudgetShare> };
  /**
   * Memory: a body growing past `afterBytes` (decoded) goes on in a file of `file()`'s path
   * instead (what it held so far first, its large-body share given back): the outcome then names
   * the file (`spooled`) and the caller owns it. A fetch that fails or outlives its deadline
   * removes its file.
   */
  spool?: { afterBytes: number; file: () => Promise<string> };
  /**
   * HTTP keep-alive (fetch.keepAliveSeconds): a connection whose response was read whole is kept
   * this long for the next request to the same origin (connection-pool.ts); 0 or absent: every
   * request has its own connection (`Connection: close`).
   */
  keepAliveMs?: number;
}

/** A body read into a file (FetchOptions.spool): its path and decoded size. */
export interface SpooledBody {
  path: string;
  bytes: number;
}

/** The overall deadline of one fetch, which stops while the fetch waits on the invocation (not the site). */
interface Clock {
  pause(): void;
  resume(): void;
  /** the site's response headers came: a timeout after them is a slow body, not a silent host */
  answered: boolean;
}

/** Response headers: lower-case names, repeated values joined. */
export type HeaderRecord = Record<string, string>;

export type FetchOutcome =
  | {
      kind: 'ok';
      status: number;
      headers: HeaderRecord;
      /** the body; empty when it went to a file (`spooled`) */
      body: Uint8Array;
      truncated: boolean;
      remoteAddress: string;
      spooled?: SpooledBody;
    }
  | { kind: 'not-modified'; status: 304; headers: HeaderRecord }
  /** location: absolute; null when missing or malformed (seed 001: the caller makes it a permanent error) */
  | { kind: 'redirect'; status: number; location: string | null; headers: HeaderRecord }
  | { kind: 'skipped'; reason: 'mime-type'; mimeType: string; headers: HeaderRecord }
  /** the request could not leave by its turn's `sendBy`: nothing was sent (the caller takes a new slot) */
  | { kind: 'late' }
  /** the host's turn is `requeueSeconds` away: nothing was sent */
  | { kind: 'not-due'; requeueSeconds: number }
  | {
      kind: 'error';
      errorKind: 'permanent' | 'temporary';
      code: string;
      status?: number;
      retryAfterMs?: number;
      /** `retryAfterMs` is the default: no Retry-After could be read (classify.ts) */
      retryAfterDefault?: true;
      message: string;
      /** a timeout before any response came: nothing was heard from the host (politeness/host-turns.ts holds a host that does it again) */
      silent?: true;
    };

const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;
/** An error or redirect body up to this size is read and dropped, keeping its connection. */
const DRAINED_BODY_MAX = 16 * 1024;
/** How long a dropped body may take to end after its headers before its connection is closed instead. */
const DRAIN_MS = 2_000;

type HeaderSource = http.IncomingHttpHeaders | Iterable<[string, string]>;

/** Response headers that carry secrets: kept out of page bundles (S3) and logs. */
const SECRET_HEADERS = new Set(['set-cookie', 'set-cookie2', 'authorization', 'proxy-authorization']);

/**
 * Lower-cased header names to values; repeated headers are joined with ", " (RFC 9110 §5.3).
 * Secret headers are dropped here, so nothing downstream can store or log them.
 */
export function headersToRecord(headers: HeaderSource): HeaderRecord {
  const out: HeaderRecord = {};
  const entries = Symbol.iterator in headers ? headers : Object.entries(headers);
  for (const [name, value] of entries as Iterable<[string, string | string[] | undefined]>) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    if (SECRET_HEADERS.has(key)) continue;
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[key] = key in out ? `${out[key]}, ${text}` : text;
  }
  return out;
}

/** Fetches one URL with a GET; never throws (failures are `kind: 'error'`). */
export async function fetchUrl(url: string, opts: FetchOptions): Promise<FetchOutcome> {
  const deadline = new AbortController();
  const timeout = new FetchError(`no complete response within ${opts.timeoutMs} ms`, 'temporary', 'timeout');
  // setTimeout fires at once past 2^31-1 ms, so larger deadlines are clamped to ~24.8 days.
  let left = Math.min(opts.timeoutMs, 2 ** 31 - 1);
  let armedAt = Date.now();
  let timer = setTimeout(() => deadline.abort(timeout), left);
  const clock: Clock = {
    answered: false,
    pause() {
      clearTimeout(timer);
      left -= Date.now() - armedAt;
    },
    resume() {
      armedAt = Date.now();
      timer = setTimeout(() => deadline.abort(timeout), Math.max(0, left));
    },
  };
  const expired = once(deadline.signal, 'abort').then(() => Promise.reject(deadline.signal.reason));
  const attempt = fetchOnce(url, opts, deadline.signal, clock);
  attempt.catch(() => {}); // settles after the deadline in the background; its sockets are destroyed
  expired.catch(() => {});
  try {
    return await Promise.race([attempt, expired]);
  } catch (err) {
    if (err instanceof TurnFailed) throw err.cause;
    // A body finished into a file after the deadline won is nobody's: the file goes.
    attempt
      .then((res) => (res.kind === 'ok' && res.spooled ? unlink(res.spooled.path) : undefined))
      .catch(noop);
    const outcome = errorOutcome(deadline.signal.aborted ? deadline.signal.reason : err);
    return outcome.kind === 'error' && outcome.code === 'timeout' && !clock.answered
      ? { ...outcome, message: `no response within ${opts.timeoutMs} ms`, silent: true }
      : outcome;
  } finally {
    clearTimeout(timer);
    // Destroys every socket of this fetch (each registered on the signal) but a connection kept alive.
    if (!deadline.signal.aborted) deadline.abort(new Error('fetch finished'));
  }
}

const noop = () => {};

/** What FetchOptions.turn threw: the caller's failure, not the site's. */
class TurnFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('the politeness turn failed');
  }
}

function errorOutcome(err: unknown): FetchOutcome {
  const verdict = classifyNetworkError(err);
  let message = err instanceof Error ? err.message : String(err);
  // Node's own advice ("try running Node.js with --use-system-ca") is not the crawler's: a site's
  // private CA is given in the config.
  if (verdict.code === 'tls-error')
    message = `${message.replace(/; if the root CA is installed locally.*$/, '')} (a private CA: fetch.caCertificates)`;
  const status = err instanceof FetchError && err.httpStatus ? { status: err.httpStatus } : {};
  return { kind: 'error', errorKind: verdict.kind, code: verdict.code, message, ...status };
}

async function fetchOnce(
  url: string,
  opts: FetchOptions,
  signal: AbortSignal,
  clock: Clock,
  fresh = false,
): Promise<FetchOutcome> {
  const target = parseTarget(url);
  const key = opts.keepAliveMs ? connectionKey(target, opts) : null;
  const startedAt = Date.now();
  // With a turn to wait for, an idle connection stays in the pool until the turn has come: the pool
  // notices the site closing it meanwhile (its keep-alive timeout, shorter than a Crawl-delay),
  // where one taken before the wait was written to closed and hung until fetch.timeoutMs, a
  // robots.txt read that way losing its whole site (`robots-unavailable`).
  let kept: net.Socket[] | null = null;
  // An idle connection (its keep time counted from the start), else a new one.
  const connect = async (): Promise<net.Socket> => {
    kept = key && !fresh ? takeIdle(key, startedAt) : null;
    if (kept) for (const s of kept) destroyOnAbort(s, signal);
    return kept ? (kept[kept.length - 1] as net.Socket) : openConnection(target, opts, signal);
  };
  const waitsIdle = Boolean(key && !fresh && opts.turn && hasIdle(key, startedAt));
  let socket = waitsIdle ? null : await connect();
  let sendBy: number | undefined;
  if (opts.turn) {
    // Connected first: the slot is taken when the request can leave at once, so a handshake of a
    // few round trips never makes every slot late (they were missed for good past 50 ms).
    clock.pause();
    const turn = await opts.turn().catch((err) => {
      throw new TurnFailed(err);
    });
    clock.resume();
    // Not due, nothing sent: the connection is kept for the host's next task, which then pays no
    // handshake (64 polite hosts over https with 100 ms handshakes, 4 runs: 23.5-29.1 pages/s,
    // against 23.7-27.7 closed). A missed slot's connection is closed: kept too, the same profile
    // fell to 16.8-19.9 pages/s with 11-20 fetch invocations (bench/README.md).
    if ('requeueSeconds' in turn) {
      if (key && socket) keepIdle(key, detachSockets(signal), opts.keepAliveMs ?? 0);
      return { kind: 'not-due', requeueSeconds: turn.requeueSeconds };
    }
    sendBy = turn.sendBy;
  }
  // The idle connection left in the pool for the wait (gone meanwhile: a new one).
  socket ??= await connect();
  if (sendBy !== undefined && (opts.now ?? Date.now)() > sendBy) return { kind: 'late' };
  const remoteAddress = socket.remoteAddress ?? '';
  let res: http.IncomingMessage;
  try {
    res = await sendRequest(socket, target, opts, signal);
  } catch (err) {
    // A response the parser refused (HPE_*: headers past limits.headerBytes, a malformed status
    // line) is the site's answer, not a closed connection: sent again, it came 4 times (helper-47).
    if (!kept || signal.aborted || /^HPE_/.test(String((err as { code?: unknown }).code))) throw err;
    // The site closed the kept connection as the request went out (its keep-alive timeout): no
    // answer, so nothing was done. A turn's slot is spent (the caller takes a new one); without a
    // turn the request goes again on a new connection. Either way the site's connections are not
    // kept for a while (connection-pool.ts): a site that does this to every request gets it once.
    destroyLayers(kept);
    if (key) keptConnectionDropped(key);
    return opts.turn ? { kind: 'late' } : fetchOnce(url, opts, signal, clock, true);
  }
  clock.answered = true;
  const outcome = await readResponse(res, target, opts, remoteAddress, clock);
  // A dropped body that came with its headers (a 304, most 404s) ends in a few ticks: then the
  // connection is kept before the next request to the site (robots.txt's page) looks for one.
  // Not a response destroyed unread (a skipped MIME type): it never ends, and waiting for it held
  // every skipped image up to the fetch's deadline (30 s by default) before its outcome came.
  if (key && outcome.kind !== 'ok' && res.complete && !res.readableEnded && !res.destroyed)
    await once(res, 'end', { signal }).catch(noop);
  if (key) settle(key, res, outcome, detachSockets(signal), opts.keepAliveMs ?? 0);
  return outcome;
}

/**
 * Keeps the connection for the next request if it can carry one: HTTP/1.1, neither side said
 * `close`, and the response read to its end (a page read whole; a 304, or an error or redirect
 * whose short body is dropped as it ends, without holding the outcome up). A truncated body, a
 * skipped MIME type, a long or slow error body end it. The fetch has handed its sockets over.
 */
function settle(
  key: string,
  res: http.IncomingMessage,
  outcome: FetchOutcome,
  layers: net.Socket[],
  keepMs: number,
): void {
  const verdict = connectionVerdict(res, outcome);
  if (verdict === 'drain') {
    const slow = setTimeout(() => res.destroy(), DRAIN_MS).unref();
    // After the HTTP client's own end handler has let go of the socket.
    finished(res, (err) => {
      clearTimeout(slow);
      if (err || !res.complete) destroyLayers(layers);
      else setImmediate(() => keepIdle(key, layers, keepMs));
    });
  } else if (verdict === 'keep')
    keepIdle(key, layers, keepMs); // (it checks the socket is open)
  else destroyLayers(layers);
}

function connectionVerdict(res: http.IncomingMessage, outcome: FetchOutcome): 'keep' | 'drop' | 'drain' {
  if (res.httpVersion !== '1.1' || /\bclose\b/i.test(res.headers.connection ?? '')) return 'drop';
  if (outcome.kind === 'ok') return !outcome.truncated && res.complete ? 'keep' : 'drop';
  if (outcome.kind !== 'not-modified' && outcome.kind !== 'redirect' && outcome.kind !== 'error')
    return 'drop';
  if (res.readableEnded) return res.complete ? 'keep' : 'drop';
  return 'drain';
}

/**
 * What makes a connection: scheme, host, port, the address it was resolved to, the proxy and its
 * login (a keyed digest, never the password: proxy.ts), the trust.
 */
function connectionKey(target: URL, opts: FetchOptions): string {
  const host = target.hostname.toLowerCase();
  const mapped = overrideFor(host, opts.resolve) ?? '';
  const proxy = proxyConnectionId(opts.proxy);
  const allow = JSON.stringify(opts.allowPrivateNetworks);
  return JSON.stringify([
    target.protocol,
    host,
    portOf(target),
    mapped,
    proxy,
    allow,
    caListId(opts.caCertificates),
  ]);
}

function parseTarget(url: string): URL {
  const target = URL.parse(url);
  if (target === null) throw new FetchError(`malformed URL: ${url}`, 'permanent', 'malformed-url');
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new FetchError(
      `unsupported scheme ${target.protocol} in ${url}`,
      'permanent',
      'unsupported-scheme',
    );
  }
  target.hash = '';
  return target;
}

/** TCP (+ CONNECT tunnel) (+ TLS) to the target or the proxy; the SSRF check sits in connectGuarded. */
async function openConnection(target: URL, opts: FetchOptions, signal: AbortSignal): Promise<net.Socket> {
  const host = target.hostname;
  const allow = opts.allowPrivateNetworks;
  if (!opts.proxy) {
    const direct = await connectGuarded(host, portOf(target), { resolve: opts.resolve, allow, signal });
    return target.protocol === 'https:' ? startTls(direct, host, signal, opts.caCertificates) : direct;
  }
  // Through a proxy the guard runs first, on Trawl's own resolution (fetch.resolve, else DNS):
  // nothing reaches the proxy for a private target. The proxy itself is configured, so trusted.
  const checked = await proxiedTargetAddress(host, opts);
  let socket = await connectGuarded(opts.proxy.host, opts.proxy.port, {
    resolve: opts.resolve,
    allow: true,
    signal,
  });
  if (target.protocol === 'https:') {
    socket = await openTunnel(socket, target, opts, signal, checked);
    socket = await startTls(socket, host, signal, opts.caCertificates);
  }
  return socket;
}

/**
 * The address a proxied request is checked against: null when every target is allowed and no
 * fetch.resolve entry names the host (the proxy resolves it). A resolve entry is honoured: the
 * CONNECT tunnel goes to that address (Host and TLS name stay the URL's, like curl --resolve).
 */
async function proxiedTargetAddress(host: string, opts: FetchOptions): Promise<string | null> {
  const mapped = overrideFor(host, opts.resolve) !== undefined;
  if (opts.allowPrivateNetworks === true && !mapped) return null;
  const [address] = await resolveGuarded(host, opts.resolve, opts.allowPrivateNetworks);
  return mapped && address !== undefined ? address : null;
}

/**
 * The absolute-form target of a plain http request through the proxy: a fetch.resolve entry for the
 * host is honoured as the CONNECT tunnel honours it (the address checked is the one asked for; the
 * Host header keeps the name). It was left out: the proxy resolved the name again, to whatever its
 * DNS said (helper-51).
 */
function proxiedHref(target: URL, opts: FetchOptions): string {
  const mapped = overrideFor(target.hostname, opts.resolve);
  if (mapped === undefined) return target.href;
  const u = new URL(target.href);
  u.hostname = net.isIPv6(mapped) ? `[${mapped}]` : mapped;
  return u.href;
}

type ConnectEvent = [http.IncomingMessage, net.Socket, Buffer];

/** RFC 9110 §9.3.6: CONNECT host:port through the proxy; the TLS handshake then runs inside the tunnel. */
async function openTunnel(
  socket: net.Socket,
  target: URL,
  opts: FetchOptions,
  signal: AbortSignal,
  address: string | null,
) {
  const to = address === null ? target.hostname : net.isIPv6(address) ? `[${address}]` : address;
  const authority = `${to}:${portOf(target)}`;
  const proxy = opts.proxy as FetchProxy;
  const headers: HeaderRecord = { host: authority, 'user-agent': opts.userAgent };
  // The login goes on the CONNECT request only: what travels inside the tunnel is the site's.
  const login = proxyAuthorization(proxy);
  if (login) headers['proxy-authorization'] = login;
  const req = http.request({ method: 'CONNECT', path: authority, headers, createConnection: () => socket });
  req.on('error', () => {}); // the awaited once() below reports it
  req.end();
  const [res, tunnel, head] = (await once(req, 'connect', { signal })) as ConnectEvent;
  // Any 2xx opens the tunnel (RFC 9110 §9.3.6); anything else is the proxy's answer, not the site's.
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    tunnel.destroy();
    throw proxyAnswerError(status, proxy, `CONNECT ${authority}`);
  }
  destroyOnAbort(tunnel, signal);
  if (head.length > 0) tunnel.unshift(head);
  return tunnel;
}

/** Secure contexts with extra CAs, one per list: building one reads every system CA (milliseconds). */
const contexts = new Map<string, tls.SecureContext>();
/** Each CA list's digest, computed once per list (the config's array): up to 32 × 64 KB of PEM. */
const caIds = new WeakMap<string[], string>();

/** A short name for a CA list's contents ('' for none): the key of its secure context and connections. */
function caListId(caCertificates: string[] | undefined): string {
  if (!caCertificates?.length) return '';
  let id = caIds.get(caCertificates);
  if (id === undefined) {
    id = createHash('sha256').update(caCertificates.join('\n')).digest('hex');
    caIds.set(caCertificates, id);
  }
  return id;
}

function secureContextFor(caCertificates: string[] | undefined): { secureContext?: tls.SecureContext } {
  if (!caCertificates?.length) return {};
  const key = caListId(caCertificates);
  let context = contexts.get(key);
  if (!context) {
    // The process's defaults (Node's bundled CAs and NODE_EXTRA_CA_CERTS, which Lambda's runtime sets).
    const defaults =
      typeof tls.getCACertificates === 'function' ? tls.getCACertificates('default') : tls.rootCertificates;
    context = tls.createSecureContext({ ca: [...defaults, ...caCertificates] });
    if (contexts.size >= 4) contexts.clear(); // one config per container: a few lists at most
    contexts.set(key, context);
  }
  return { secureContext: context };
}

async function startTls(
  socket: net.Socket,
  hostname: string,
  signal: AbortSignal,
  caCertificates?: string[],
): Promise<net.Socket> {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  // RFC 6066 §3: SNI carries host names only, never IP literals.
  const sni = net.isIP(bare) ? {} : { servername: bare };
  const secure = tls.connect({
    socket,
    ALPNProtocols: ['http/1.1'],
    ...sni,
    // The certificate must name the URL's host, an IP address too (its IP SANs). Without a
    // servername Node checked an IP URL's certificate against "localhost": any certificate a
    // trusted CA issued for localhost passed, and one naming the IP was refused.
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(bare, cert),
    ...secureContextFor(caCertificates),
  });
  destroyOnAbort(secure, signal);
  await once(secure, 'secureConnect', { signal });
  return secure;
}

function requestHeaders(target: URL, opts: FetchOptions, viaProxy: boolean): HeaderRecord {
  const headers: HeaderRecord = {
    host: target.host,
    'user-agent': opts.userAgent,
    accept: '*/*',
    'accept-encoding': 'gzip, deflate, br',
    connection: opts.keepAliveMs ? 'keep-alive' : 'close',
  };
  // Seed 004 / RFC 9110 §13.1: refresh with a conditional GET; a 304 then means "unchanged".
  if (opts.conditional?.etag) headers['if-none-match'] = opts.conditional.etag;
  if (opts.conditional?.lastModified) headers['if-modified-since'] = opts.conditional.lastModified;
  if (opts.body) {
    headers['content-type'] = opts.body.contentType;
    headers['content-length'] = String(Buffer.byteLength(opts.body.data));
  }
  const all = { ...headers, ...opts.headers };
  // Plain http through the proxy: the request is the proxy's to read, its login with it (RFC 9110
  // §11.7.2: a proxy consumes Proxy-Authorization). Never on a direct request nor inside a tunnel.
  const login = viaProxy && opts.proxy ? proxyAuthorization(opts.proxy) : null;
  if (login) all['proxy-authorization'] = login;
  return all;
}

async function sendRequest(socket: net.Socket, target: URL, opts: FetchOptions, signal: AbortSignal) {
  // RFC 9112 §3.2.2: absolute-form to a forward proxy for plain http; origin-form otherwise.
  const viaProxy = opts.proxy !== null && target.protocol === 'http:';
  const path = viaProxy ? proxiedHref(target, opts) : `${target.pathname}${target.search}`;
  const headers = requestHeaders(target, opts, viaProxy);
  const maxHeaderSize = opts.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  const req = http.request({
    method: opts.method ?? 'GET',
    path,
    headers,
    maxHeaderSize,
    createConnection: () => socket,
  });
  // Before the response once() reports an error; after it, the body pipeline does. A parse error
  // in the body (a malformed chunk) reaches only the request, and the response as "aborted", a
  // reset (temporary, tried again): the response fails with the parser's own error instead.
  // (Taken as the event comes: a body in the same packet fails before an awaited once() resumes.)
  let response: http.IncomingMessage | undefined;
  req.on('response', (res: http.IncomingMessage) => {
    response = res;
  });
  req.on('error', (err: Error & { code?: unknown }) => {
    // Bytes past a response the server said was complete (a Content-Length shorter than what it
    // sent) are the next response's to the parser: that response is whole, and kept (it had been
    // a permanent protocol-error, the page lost; an audit). The connection is not kept.
    if (response?.complete) return;
    if (typeof err.code === 'string' && err.code.startsWith('HPE_')) response?.destroy(err);
  });
  req.end(opts.body?.data);
  const [res] = (await once(req, 'response', { signal })) as [http.IncomingMessage];
  return res;
}

async function readResponse(
  res: http.IncomingMessage,
  url: URL,
  opts: FetchOptions,
  remoteAddress: string,
  clock: Clock,
) {
  const headers = headersToRecord(res.headers);
  // Each X-Robots-Tag header is a list of its own, a user agent's prefix covering only its own
  // header (Google's reading): joined with ", " by Node, `otherbot: noindex` and a later
  // `noindex, nofollow` read as all otherbot's. A line break can be in no header value.
  const robotsTags = res.headersDistinct?.['x-robots-tag'];
  if (robotsTags && robotsTags.length > 1) headers['x-robots-tag'] = robotsTags.join('\n');
  const status = res.statusCode ?? 0;
  // A 407 to a plain-http request is the proxy's (RFC 9110 §15.5.8), as to a CONNECT: not the page's.
  if (status === 407 && opts.proxy && url.protocol === 'http:') {
    dropBody(res);
    return errorOutcome(proxyAnswerError(status, opts.proxy, 'the request'));
  }
  if (opts.onSetCookie && res.headers['set-cookie']) opts.onSetCookie(res.headers['set-cookie']);
  const conditional = Boolean(opts.conditional?.etag || opts.conditional?.lastModified);
  const retryAfter = headers['retry-after'] ?? null;
  const verdict = classifyHttpStatus(status, {
    conditional,
    retryAfter,
    now: (opts.now ?? Date.now)(),
    ...(opts.serverErrors ? { serverErrors: opts.serverErrors } : {}),
  });
  if (verdict.kind !== 'ok') dropBody(res);
  switch (verdict.kind) {
    case 'not-modified':
      return { kind: 'not-modified', status: 304, headers } as const;
    case 'redirect':
      return {
        kind: 'redirect',
        status,
        location: redirectTarget(headers['location'], url),
        headers,
      } as const;
    case 'permanent':
    case 'temporary': {
      const retry =
        verdict.retryAfterMs === undefined
          ? {}
          : {
              retryAfterMs: verdict.retryAfterMs,
              ...(verdict.retryAfterDefault ? { retryAfterDefault: true as const } : {}),
            };
      // The site's reason phrase, without control characters: printed as sent, an escape sequence
      // cleared the operator's terminal and wrote lines of its own (helper-51). Bounded too.
      const reason = (res.statusMessage ?? '').replace(/\p{Cc}/gu, '').slice(0, 200);
      const message = `HTTP ${status} ${reason}`.trim();
      return {
        kind: 'error',
        errorKind: verdict.kind,
        code: verdict.code,
        status,
        message,
        ...retry,
      } as const;
    }
  }
  const mimeType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (opts.metadataFirst && isIgnoredMimeType(mimeType, opts.ignoredMimeTypes)) {
    res.destroy(); // seed 004: know the mime type, "not retrieve the video itself"
    return { kind: 'skipped', reason: 'mime-type', mimeType, headers } as const;
  }
  const { body, truncated, spooled } = await readBody(res, headers, opts, clock);
  return {
    kind: 'ok',
    status,
    headers,
    body,
    truncated,
    remoteAddress,
    ...(spooled ? { spooled } : {}),
  } as const;
}

/**
 * Error and redirect bodies are never kept: a short one is read and dropped, so that its
 * connection can be kept (a 404 robots.txt is most sites'), a longer one ends it.
 */
function dropBody(res: http.IncomingMessage): void {
  let seen = Number(res.headers['content-length'] ?? 0);
  if (seen > DRAINED_BODY_MAX) res.destroy();
  else
    res.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > DRAINED_BODY_MAX) res.destroy();
    });
}

type Decoder = Readable | ((source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer>);

/**
 * `deflate` as servers send it: zlib-wrapped as RFC 9110 §8.4.1.2 says, or raw, as some servers
 * (IIS among them) send it and every browser reads it. The first two bytes tell: a zlib header's
 * method is 8 and the pair is a multiple of 31 (RFC 1950 §2.2).
 */
function inflateEither(options: zlib.ZlibOptions) {
  return async function* inflate(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    const input = source[Symbol.asyncIterator]();
    let head = Buffer.alloc(0);
    while (head.length < 2) {
      const next = await input.next();
      if (next.done) break;
      head = Buffer.concat([head, next.value]);
    }
    const b0 = head[0] ?? 0;
    const wrapped = head.length >= 2 && (b0 & 0x0f) === 8 && ((b0 << 8) | (head[1] ?? 0)) % 31 === 0;
    const inflater = wrapped ? zlib.createInflate(options) : zlib.createInflateRaw(options);
    async function* all() {
      if (head.length > 0) yield head;
      for (let next = await input.next(); !next.done; next = await input.next()) yield next.value;
    }
    // Read as the next stage asks (a bomb inflates no further than it reads); errors either side end it.
    pipeline(Readable.from(all()), inflater).catch((err) => inflater.destroy(err));
    yield* inflater as AsyncIterable<Buffer>;
  };
}

/**
 * Content codings undone at most (curl stops at 5): each is a decoder with its own buffers, and a
 * header of 20,000 `br,` (60 KB) held 434 MB before any body byte arrived.
 */
const MAX_CODINGS = 4;

function decodersFor(encoding: string | undefined): Decoder[] {
  const codings = (encoding ?? '').toLowerCase().split(',');
  const layers = codings.filter((c) => c.trim() !== '' && c.trim() !== 'identity').length;
  if (layers > MAX_CODINGS)
    throw new FetchError(
      `unsupported Content-Encoding: ${layers} codings (at most ${MAX_CODINGS})`,
      'permanent',
      'unsupported-encoding',
    );
  // RFC 9110 §8.4: codings are listed in the order applied, so they are undone in reverse.
  // A sync flush at the end keeps what decodes from a stream cut at maxBytes instead of failing on it.
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return codings.reverse().flatMap((raw): Decoder | Decoder[] => {
    const coding = raw.trim();
    if (coding === '' || coding === 'identity') return [];
    if (coding === 'gzip' || coding === 'x-gzip') return zlib.createGunzip(flush);
    if (coding === 'deflate') return inflateEither(flush);
    if (coding === 'br')
      return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    if (coding === 'zstd' && zstd) return zstd({ finishFlush: zlib.constants.ZSTD_e_flush });
    // A compression known but not undone here: its bytes would be indexed as text.
    if (COMPRESSIONS.has(coding))
      throw new FetchError(`unsupported Content-Encoding: ${coding}`, 'permanent', 'unsupported-encoding');
    // Any other label (`none`, `UTF-8`, `binary`, a media type: servers' mistakes) is no coding:
    // the body is passed through as browsers do (Chromium: "Unknown encoding type. Pass through
    // raw response body"). Until 2026-11-28 it was a permanent error, and a refresh deleted the page.
    return [];
  });
}

/** Codings that compress (IANA's HTTP Content Coding Registry) and are not undone here. */
const COMPRESSIONS = new Set([
  'compress',
  'x-compress',
  'pack200-gzip',
  'exi',
  'aes128gcm',
  'dcb',
  'dcz',
  'zstd',
]);
/** Zstandard (RFC 8878), where the runtime's zlib has it (Node 22.15, 23.8 and later). */
const zstd = (zlib as { createZstdDecompress?: (o: object) => Decoder }).createZstdDecompress;

/** Body bytes read since the last collection of the young generation. */
let readSinceGc = 0;
const GC_EVERY_BYTES = 1024 * 1024;
/**
 * Every 1 MB of bodies read, a collection of the young generation (a scavenge: about a
 * millisecond), where the runtime exposes one (Lambda's Node.js runtime starts Node with
 * --expose-gc). A body's chunks die young, but their bytes live outside V8's heap, and V8 lets
 * 64 MB of such garbage pile up before it collects on its own; Lambda also gives a 192 MB function
 * a young generation of 27 MB. Peak RSS of a 192 MB fetch function (bench/fetch-memory.ts):
 * 48 pages of 10 MB 169–184 MB without this, 143–155 MB every 8 MB, 132–147 MB every 1 MB;
 * typical 120 KB pages 156–162, 146–151 MB. CPU a page: the same, or less.
 */
function collectChunks(bytes: number): void {
  readSinceGc += bytes;
  if (readSinceGc < GC_EVERY_BYTES) return;
  readSinceGc = 0;
  (globalThis as { gc?: (options?: { type: 'minor' }) => void }).gc?.({ type: 'minor' });
}

/** Reads at most maxBytes off the wire and keeps at most the decoded cap: a gzip bomb stops at the cap. */
async function readBody(res: http.IncomingMessage, headers: HeaderRecord, opts: FetchOptions, clock: Clock) {
  const decoders = decodersFor(headers['content-encoding']);
  const wire = { seen: 0, truncated: false };
  const large = opts.largeBodies;
  /** the body's share of the large-body budget once it is past `afterBytes`, given back when it is read */
  const held: { share?: BudgetShare } = {};
  const cap = decoders.length > 0 ? (opts.maxDecompressedBytes ?? opts.maxBytes) : opts.maxBytes;
  const sink = { chunks: [] as Buffer[], size: 0, truncated: false };
  /** the file the body goes on in once past `opts.spool.afterBytes` */
  const spool: { path?: string; file?: Awaited<ReturnType<typeof open>> } = {};
  // The response is iterated here, not handed to pipeline: cutting it short must not fail the decoders.
  async function* fromWire() {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      const room = opts.maxBytes - wire.seen;
      if (chunk.length > room) {
        wire.truncated = true;
        if (room > 0) yield chunk.subarray(0, room);
        return;
      }
      wire.seen += chunk.length;
      yield chunk;
    }
  }
  /** Moves what is held to the body's file; from then on chunks go there and hold no memory. */
  async function toFile(spooling: NonNullable<FetchOptions['spool']>) {
    spool.path = await spooling.file();
    spool.file = await open(spool.path, 'w');
    for (const chunk of sink.chunks) await spool.file.write(chunk);
    sink.chunks = [];
    held.share?.release();
    held.share = undefined;
  }
  async function reserve(chunk: Buffer) {
    if (!large || !(held.share || sink.size + chunk.length > large.afterBytes)) return;
    clock.pause();
    try {
      if (!held.share) {
        held.share = await large.share();
        await held.share.reserve(sink.size);
      }
      await held.share.reserve(chunk.length);
    } finally {
      clock.resume();
    }
  }
  async function collect(source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      const room = cap - sink.size;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      // Counted decoded: a gzip body of a few KB on the wire may inflate to the cap.
      if (!spool.file && opts.spool && sink.size + kept.length > opts.spool.afterBytes)
        await toFile(opts.spool);
      if (spool.file) await spool.file.write(kept);
      else {
        await reserve(kept);
        sink.chunks.push(kept);
      }
      sink.size += kept.length;
      collectChunks(kept.length);
      if (kept !== chunk) {
        sink.truncated = true;
        return; // pipeline destroys the decoders and the response: inflation stops here
      }
    }
  }
  let done = false;
  try {
    try {
      await (pipeline as (...stages: unknown[]) => Promise<void>)(fromWire, ...decoders, collect);
    } catch (err) {
      // Stopping at a cap aborts the rest of the pipeline on purpose: what was kept is the result.
      if (!wire.truncated && !sink.truncated) throw err;
    }
    await spool.file?.close();
    spool.file = undefined;
    const truncated = wire.truncated || sink.truncated;
    done = true;
    if (spool.path)
      return { body: new Uint8Array(0), truncated, spooled: { path: spool.path, bytes: sink.size } };
    // A Buffer is a Uint8Array: no copy of what may be maxBytes.
    const body: Uint8Array = Buffer.concat(sink.chunks, sink.size);
    sink.chunks = [];
    return { body, truncated };
  } finally {
    held.share?.release();
    if (!done) {
      await spool.file?.close().catch(() => {});
      if (spool.path) await unlink(spool.path).catch(() => {});
    }
  }
}
