/**
 * Fetch outcome classification (pure): maps HTTP statuses and network errors onto seed 001's
 * "Error Handling" categories, permanent and temporary, plus retry timing and MIME filtering.
 */
import { FetchError } from '../../errors.ts';

export type StatusKind = 'ok' | 'not-modified' | 'redirect' | 'permanent' | 'temporary';

export interface StatusContext {
  /** the GET carried If-None-Match / If-Modified-Since */
  conditional: boolean;
  /** raw Retry-After header, null when absent */
  retryAfter: string | null;
  /** current time in ms since the epoch (Retry-After may be an HTTP-date) */
  now: number;
  /** fetch.serverErrors: a 5xx is permanent (seed 001, the default) or temporary */
  serverErrors?: 'permanent' | 'temporary';
}

export interface StatusVerdict {
  kind: StatusKind;
  code: string;
  retryAfterMs?: number;
  /** `retryAfterMs` is the default: the response had no Retry-After it could be read from */
  retryAfterDefault?: true;
}

export interface NetworkVerdict {
  kind: 'permanent' | 'temporary';
  code: string;
}

/**
 * The errors of a forward proxy's own answers (fetch.proxy): a 4xx is the proxy turning the request
 * away (its login, 407; its policy, 403), anything else its failure to reach the site (a CONNECT
 * answered 502/503/504). Both temporary: no request reached the site, which said nothing about its
 * page (a permanent 407 deleted every https page of a crawl at its next refresh).
 */
export const PROXY_ERROR_CODES: ReadonlySet<string> = new Set(['proxy-refused', 'proxy-failed']);

/** Maps a proxy's own non-2xx status onto its temporary error code (PROXY_ERROR_CODES). */
export function proxyAnswerVerdict(status: number): NetworkVerdict {
  return { kind: 'temporary', code: status >= 400 && status < 500 ? 'proxy-refused' : 'proxy-failed' };
}

/** Rate limiting (429) is the client's pace, not the page's fault: retry after this when no Retry-After. */
export const DEFAULT_RATE_LIMIT_RETRY_MS = 60_000;

/** Maps an HTTP status onto seed 001's categories (3xx Location handling is the fetcher's). */
export function classifyHttpStatus(status: number, ctx: StatusContext): StatusVerdict {
  if (status >= 200 && status < 300) return { kind: 'ok', code: 'ok' };
  // Seed 001: "HTTP 304 Not Modified when GET was not conditional (inconsistent server behavior)" is permanent.
  if (status === 304) {
    return ctx.conditional
      ? { kind: 'not-modified', code: 'not-modified' }
      : permanent('non-conditional-304');
  }
  // A 3xx without a usable Location becomes location null in the fetcher; seed 001: malformed redirect is permanent.
  if (status >= 300 && status < 400) return { kind: 'redirect', code: 'redirect' };
  // A 503 with a Retry-After is a host saying it is busy, whether or not its value can be read
  // ("soon", "1.5", "-5"): the whole host waits the default then, as after a 429 (until
  // 2026-11-29 only the URL was retried, the host's other pages sent 10 ms after the 503).
  if (status === 503 && ctx.retryAfter !== null)
    return temporaryWithRetry(status, ctx, DEFAULT_RATE_LIMIT_RETRY_MS);
  // Extension of seed 001: 429 says "slow down" (RFC 6585 §4), not that the page is gone.
  if (status === 429) return temporaryWithRetry(status, ctx, DEFAULT_RATE_LIMIT_RETRY_MS);
  // fetch.serverErrors "temporary": a server's failure says nothing of its page; kept through it.
  if (status >= 500 && status < 600 && ctx.serverErrors === 'temporary')
    return { kind: 'temporary', code: `http-${status}` };
  // Seed 001: 404, other 4xx content errors and 5xx server errors are permanent (also anything non-HTTP).
  return permanent(`http-${status}`);
}

function permanent(code: string): StatusVerdict {
  return { kind: 'permanent', code };
}

function temporaryWithRetry(
  status: number,
  ctx: StatusContext,
  fallbackMs: number | undefined,
): StatusVerdict {
  const parsed = ctx.retryAfter === null ? null : parseRetryAfter(ctx.retryAfter, ctx.now);
  const retryAfterMs = parsed ?? fallbackMs;
  const verdict: StatusVerdict = { kind: 'temporary', code: `http-${status}` };
  if (retryAfterMs !== undefined) verdict.retryAfterMs = retryAfterMs;
  if (parsed === null && fallbackMs !== undefined) verdict.retryAfterDefault = true;
  return verdict;
}

/** Parses Retry-After (RFC 9110 §10.2.3: delay-seconds or HTTP-date) into ms from `now`; null if unreadable. */
export function parseRetryAfter(value: string, now: number): number | null {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP-date: IMF-fixdate, obsolete RFC 850 and asctime forms are all read by Date.parse.
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

const TEMPORARY_CODES: Record<string, string> = {
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ECONNRESET: 'connection-reset',
  EPIPE: 'connection-reset',
  UND_ERR_SOCKET: 'connection-reset',
  ECONNREFUSED: 'connection-refused',
  EAI_AGAIN: 'dns-no-answer',
};

const PERMANENT_CODES: Record<string, string> = {
  ENOTFOUND: 'dns-not-found',
  EAI_NONAME: 'dns-not-found',
  ENODATA: 'dns-not-found',
  EAI_NODATA: 'dns-not-found',
  EAI_FAIL: 'dns-failure',
};

/** Maps a network error onto seed 001: timeouts, resets, refusals and DNS no-answer are temporary. */
export function classifyNetworkError(err: unknown, depth = 0): NetworkVerdict {
  if (err instanceof FetchError) return { kind: err.errorKind, code: err.code };
  const code = errorCode(err);
  const cause = (err as { cause?: unknown } | null)?.cause;
  // Wrapped errors (fetch's "fetch failed", AbortSignal reasons) carry the socket error as `cause`.
  if (code === null && cause !== undefined && depth < 5) return classifyNetworkError(cause, depth + 1);
  if (code === null) {
    return (err as { name?: unknown })?.name === 'TimeoutError'
      ? { kind: 'temporary', code: 'timeout' }
      : { kind: 'permanent', code: 'connection-error' };
  }
  const temporary = TEMPORARY_CODES[code];
  if (temporary) return { kind: 'temporary', code: temporary };
  const known = PERMANENT_CODES[code];
  if (known) return { kind: 'permanent', code: known };
  // a server sending more header bytes than limits.headerBytes: as permanent as any protocol error
  if (code === 'HPE_HEADER_OVERFLOW') return { kind: 'permanent', code: 'header-overflow' };
  if (code.startsWith('HPE_')) return { kind: 'permanent', code: 'protocol-error' };
  // zlib's (Z_DATA_ERROR…) and brotli's (ERR__ERROR_FORMAT_…, ERR_BROTLI_…) decoding errors
  if (code.startsWith('Z_') || code.startsWith('ERR__ERROR_') || code.startsWith('ERR_BROTLI'))
    return { kind: 'permanent', code: 'content-decoding' };
  // OpenSSL's verify errors as Node names them: DEPTH_ZERO_SELF_SIGNED_CERT, CERT_HAS_EXPIRED, and
  // the ones without CERT in their name — UNABLE_TO_VERIFY_LEAF_SIGNATURE (a private CA not in
  // fetch.caCertificates, an intranet's usual case), UNABLE_TO_GET_ISSUER_CERT…, INVALID_CA,
  // HOSTNAME_MISMATCH — which were a "connection-error" that said nothing of the certificate.
  if (/CERT|SSL|TLS|^UNABLE_TO_|SIGNATURE|^INVALID_CA$|^HOSTNAME_MISMATCH$|^CRL_|_CRL$/.test(code))
    return { kind: 'permanent', code: 'tls-error' };
  // Seed 001: "Other connection errors" are permanent.
  return { kind: 'permanent', code: 'connection-error' };
}

function errorCode(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}

/** Resolves a Location header against the request URL; null when missing or unparseable (seed 001: malformed redirect). */
export function redirectTarget(location: string | undefined, base: URL | string): string | null {
  if (location === undefined || location.trim() === '') return null;
  try {
    return new URL(utf8Header(location), base).href;
  } catch {
    return null;
  }
}

/** Node reads header bytes as latin1; a UTF-8 Location (common in practice) is decoded back. */
function utf8Header(value: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

/** Exponential backoff with full jitter: random in [0, min(cap, base * 2^attempt)). */
export function backoffMs(attempt: number, random: () => number, baseMs = 1000, capMs = 15 * 60_000): number {
  const n = Number.isFinite(attempt) && attempt > 0 ? Math.floor(attempt) : 0;
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(n, 60));
  return Math.floor(random() * ceiling);
}

/** True when a MIME type (parameters ignored) matches a pattern such as "video/*", "*\/*" or "text/html". */
export function isIgnoredMimeType(mime: string, patterns: string[]): boolean {
  const essence = (mime.split(';')[0] ?? '').trim().toLowerCase();
  if (!essence) return false;
  const [type] = essence.split('/');
  return patterns.some((raw) => {
    const pattern = raw.trim().toLowerCase();
    if (pattern === '*/*' || pattern === '*') return true;
    if (pattern.endsWith('/*')) return pattern.slice(0, -2) === type;
    return pattern === essence;
  });
}
