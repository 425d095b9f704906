/**
 * `fetch.proxy` as the fetcher uses it: its login resolved (the `fetch.auth` secret resolver), the
 * `Proxy-Authorization` value, a name for the login that holds no secret (connection-pool keys),
 * and what the proxy's own refusals say. The password lives in memory only: nothing here puts it
 * in a message.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SecretResolver } from '../aws/secrets.ts';
import type { ProxyConfig } from '../config-auth.ts';
import { proxyAnswerVerdict } from '../crawl/state/classify.ts';
import { FetchError } from '../errors.ts';

/** The proxy a fetch goes through, its Basic credentials resolved. */
export interface FetchProxy {
  host: string;
  port: number;
  /** sent as `Proxy-Authorization: Basic` to the proxy only (fetch.proxy.username/password) */
  credentials?: { username: string; password: string };
}

/** The proxy of `fetch.proxy` with its password resolved; null without a proxy. */
export async function resolveProxy(
  proxy: ProxyConfig | null,
  resolve: SecretResolver,
): Promise<FetchProxy | null> {
  if (!proxy) return null;
  const at = { host: proxy.host, port: proxy.port };
  if (proxy.username === undefined || proxy.password === undefined) return at;
  const password = await resolve(proxy.password, 'fetch.proxy.password');
  return { ...at, credentials: { username: proxy.username, password } };
}

/** The `Proxy-Authorization` header value (RFC 7617 Basic, UTF-8), or null without credentials. */
export function proxyAuthorization(proxy: FetchProxy): string | null {
  const c = proxy.credentials;
  if (!c) return null;
  return `Basic ${Buffer.from(`${c.username}:${c.password}`, 'utf8').toString('base64')}`;
}

/** A key known to this process only: a login's id cannot be tried against guessed passwords. */
const LOGIN_ID_KEY = randomBytes(32);
const loginIds = new WeakMap<object, string>();

/**
 * Which proxy and login a connection was made with ('host:port' plus a keyed digest of the
 * credentials): a tunnel opened under one login is not reused under another (a rotated password).
 */
export function proxyConnectionId(proxy: FetchProxy | null): string {
  if (!proxy) return '';
  const at = `${proxy.host}:${proxy.port}`;
  const c = proxy.credentials;
  if (!c) return at;
  let id = loginIds.get(c);
  if (id === undefined) {
    id = createHmac('sha256', LOGIN_ID_KEY).update(`${c.username}:${c.password}`).digest('hex').slice(0, 32);
    loginIds.set(c, id);
  }
  return `${at}#${id}`;
}

/**
 * The proxy's own non-2xx answer (to CONNECT; a 407 to a plain-http request) as a temporary error:
 * the proxy's, not the site's, so the pages keep their documents while the proxy (its login, its
 * policy, its upstream) is put right. No HTTP status is given: it is not the page's (a 403 of a
 * proxy's policy read as the page's ended a form login's session). The note names the proxy and
 * the status, never a credential.
 */
export function proxyAnswerError(status: number, proxy: FetchProxy, request: string): FetchError {
  const verdict = proxyAnswerVerdict(status);
  const at = `the proxy ${proxy.host}:${proxy.port} answered ${request} with HTTP ${status}`;
  return new FetchError(`${at}: ${proxyAdvice(status, proxy)}`, 'temporary', verdict.code);
}

function proxyAdvice(status: number, proxy: FetchProxy): string {
  if (status === 407)
    return proxy.credentials
      ? 'it refused the credentials (check fetch.proxy.username and fetch.proxy.password)'
      : 'it wants a login (set fetch.proxy.username and fetch.proxy.password)';
  if (status >= 400 && status < 500)
    return "its policy refused the request (the proxy's rules, not the site's)";
  return "it could not reach the site (the proxy's or its upstream's failure, not the site's answer)";
}
