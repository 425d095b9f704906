/**
 * Credentials per URL prefix (`fetch.auth`): which entry covers a URL, the request headers it adds,
 * and form-login sessions kept per entry in the container's memory (a cold start logs in again).
 * Credentials go only to URLs of the prefix's origin under its path: the fetcher never follows a
 * redirect itself, so a redirect to another origin is a new URL that gets that URL's credentials.
 */

import type { SecretResolver } from '../aws/secrets.ts';
import type { AuthEntry, ProxyConfig, SecretRef } from '../config-auth.ts';
import { normalizePercentEncoding } from '../crawl/url/normalize-url.ts';
import type { FetchOutcome, HeaderRecord } from './fetcher.ts';
import type { LoginForm } from './login-form.ts';

export interface ResolvedAuth {
  origin: string;
  pathPrefix: string;
  /** Authorization (basic) and configured headers, secrets resolved */
  headers: HeaderRecord;
  cookies: Record<string, string>;
  form?: {
    loginUrl: string;
    fields: Record<string, string>;
    /** GET the login page first and submit its form (hidden fields, cookies) */
    readForm: boolean;
    successCookie: string | null;
    successStatus?: number[];
    loggedOut: { status: number[]; redirectTo: string; bodyContains: string | null };
  };
}

/** Resolves every secret of the entries (env, Secrets Manager); the values stay in memory. */
export async function resolveAuth(entries: AuthEntry[], resolve: SecretResolver): Promise<ResolvedAuth[]> {
  return Promise.all(
    entries.map(async (e, i) => {
      const at = `fetch.auth.${i}`;
      const prefix = new URL(e.urlPrefix);
      const headers: HeaderRecord = {};
      if (e.basic) {
        const user = await resolve(e.basic.username, `${at}.basic.username`);
        const pass = await resolve(e.basic.password, `${at}.basic.password`);
        headers.authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
      }
      if (e.bearer) headers.authorization = `Bearer ${await resolve(e.bearer, `${at}.bearer`)}`;
      for (const [k, v] of Object.entries(e.headers ?? {}))
        headers[k.toLowerCase()] = await resolve(v, `${at}.headers.${k}`);
      const cookies: Record<string, string> = {};
      for (const [k, v] of Object.entries(e.cookies ?? {}))
        cookies[k] = await resolve(v, `${at}.cookies.${k}`);
      // The path as the crawl's normalized URLs carry it (`/%7Eann/` is `/~ann/` there).
      const pathPrefix = normalizePercentEncoding(prefix.pathname);
      const out: ResolvedAuth = { origin: prefix.origin, pathPrefix, headers, cookies };
      if (e.form) out.form = await resolveForm(e.form, at, resolve);
      return out;
    }),
  );
}

async function resolveForm(form: NonNullable<AuthEntry['form']>, at: string, resolve: SecretResolver) {
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(form.fields)) fields[k] = await resolve(v, `${at}.form.fields.${k}`);
  const login = new URL(form.loginUrl);
  return {
    loginUrl: form.loginUrl,
    fields,
    readForm: form.readForm,
    successCookie: form.successWhen.cookie,
    ...(form.successWhen.status ? { successStatus: form.successWhen.status } : {}),
    loggedOut: {
      status: form.loggedOutWhen.status,
      redirectTo: form.loggedOutWhen.redirectTo ?? `${login.origin}${login.pathname}`,
      bodyContains: form.loggedOutWhen.bodyContains,
    },
  };
}

/** The entry covering `url` (same origin, path under the prefix's path; the longest prefix wins). */
export function authFor(url: string, entries: ResolvedAuth[]): ResolvedAuth | null {
  const u = URL.parse(url);
  if (!u) return null;
  let best: ResolvedAuth | null = null;
  for (const e of entries) {
    if (u.origin !== e.origin || !u.pathname.startsWith(e.pathPrefix)) continue;
    if (!best || e.pathPrefix.length > best.pathPrefix.length) best = e;
  }
  return best;
}

/** `name=value` pairs of Set-Cookie headers (attributes dropped: the session is this container's). */
export function parseSetCookies(values: string[]): Record<string, string> {
  return Object.fromEntries(setCookieLines(values, 0).map(({ name, value }) => [name, value]));
}

/** Each Set-Cookie line's pair, and whether it deletes the cookie (empty, `Max-Age` ≤ 0, `Expires` past). */
function setCookieLines(values: string[], now: number): { name: string; value: string; deleted: boolean }[] {
  const out: { name: string; value: string; deleted: boolean }[] = [];
  for (const line of values) {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const value = pair.slice(eq + 1).trim();
    let deleted = value === '';
    for (const attribute of attributes) {
      const [key = '', raw = ''] = attribute.split('=', 2).map((x) => x.trim());
      if (key.toLowerCase() === 'max-age' && Number(raw) <= 0) deleted = true;
      if (key.toLowerCase() === 'expires' && Date.parse(raw) <= now) deleted = true;
    }
    out.push({ name: pair.slice(0, eq).trim(), value, deleted });
  }
  return out;
}

function cookieHeader(cookies: Record<string, string>): string {
  return Object.entries(cookies)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');
}

/** True when a response under a form-login entry says the session has ended. */
export function isLoggedOut(entry: ResolvedAuth, res: FetchOutcome): boolean {
  const when = entry.form?.loggedOut;
  if (!when) return false;
  if (res.kind === 'error') return res.status !== undefined && when.status.includes(res.status);
  if (res.kind === 'redirect') return res.location?.startsWith(when.redirectTo) === true;
  if (res.kind === 'ok' && when.bodyContains) return Buffer.from(res.body).includes(when.bodyContains);
  return false;
}

/** Sends a login request: the form's submission, or (`readForm`) the GET of the login page. */
export type LoginFetch = (
  url: string,
  init: { method: 'GET' | 'POST'; headers: HeaderRecord; body?: string; onSetCookie: (v: string[]) => void },
) => Promise<FetchOutcome>;

/** Redirects followed to reach a login page (`readForm`): /login → /login/ → /login?next=… */
const LOGIN_PAGE_REDIRECTS = 5;

/** A URL for a note: no query or fragment (a login page may echo the submitted fields in its query). */
export const withoutQuery = (url: string) => url.replace(/[?#].*$/s, '').slice(0, 2048);

interface Session {
  /** the session cookies, or why the login failed */
  cookies: Promise<{ jar: Record<string, string> } | { failed: string }>;
  generation: number;
}

/**
 * After a failed login an entry's URLs fail at once, with no new login, for this long; it doubles
 * with every failure in a row, up to LOGIN_RETRY_MAX_MS. A login that fails for every URL of a
 * crawl (a wrong password, a login page that answers 500) was sent again for each of them, ten
 * within 40 ms: on an intranet whose directory locks an account after a few wrong passwords, that
 * locks the crawler's account.
 */
export const LOGIN_RETRY_MS = 60_000;
const LOGIN_RETRY_MAX_MS = 15 * 60_000;

/** Request headers for a URL, or why the login of its entry failed. */
export type AuthHeaders =
  | { headers: HeaderRecord; entry: ResolvedAuth | null; generation: number }
  | { failed: string };

/**
 * Form-login sessions per entry (two accounts on one site are two sessions), one login at a time per
 * entry (concurrent fetches share it), failed logins remembered for a while.
 */
export class AuthSessions {
  private readonly sessions = new Map<ResolvedAuth, Session>();
  /** entries whose login failed: until when no new login is tried, the next wait, and why */
  private readonly failures = new Map<ResolvedAuth, { until: number; nextMs: number; reason: string }>();
  /** entries whose login has let a page through: a logged-out answer then means the session ended */
  private readonly proven = new Set<ResolvedAuth>();
  private generation = 0;
  /** logins sent (the tests count re-logins) */
  logins = 0;

  constructor(
    readonly entries: ResolvedAuth[],
    private readonly send: LoginFetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** Request headers for `url` (none outside every prefix), or why its entry's login failed. */
  async headersFor(url: string): Promise<AuthHeaders> {
    const entry = authFor(url, this.entries);
    if (!entry) return { headers: {}, entry: null, generation: 0 };
    let generation = 0;
    let sessionCookies: Record<string, string> = {};
    if (entry.form) {
      const failure = this.failures.get(entry);
      if (failure && failure.until > this.now()) return { failed: failure.reason };
      const session = this.session(entry);
      const login = await session.cookies;
      if ('failed' in login) return login;
      sessionCookies = login.jar;
      generation = session.generation;
    }
    const headers: HeaderRecord = { ...entry.headers };
    // Read when the request is sent, not now: a page waiting for its place in line goes out with
    // the session as the pages before it left it (renew: a session id the site rotates).
    const jar = sessionCookies;
    if (Object.keys(entry.cookies).length + Object.keys(jar).length > 0)
      Object.defineProperty(headers, 'cookie', {
        enumerable: true,
        get: () => cookieHeader({ ...entry.cookies, ...jar }),
      });
    return { headers, entry, generation };
  }

  /**
   * Set-Cookie values of a page fetched under the session of `generation`: the site renews the
   * session's own cookies (a session id rotated on every answer, a sliding expiry), which the
   * next requests send. Only cookies the session holds are taken (a page's other cookies are not
   * the session's, and the jar stays bounded); one the site deletes (no value, `Max-Age` ≤ 0, an
   * `Expires` past) leaves the jar, so the next page shows whether the session ended.
   */
  renew(entry: ResolvedAuth, generation: number, values: string[]): void {
    const session = this.sessions.get(entry);
    if (!session || session.generation !== generation) return;
    void session.cookies.then((c) => {
      if ('failed' in c) return;
      for (const { name, value, deleted } of setCookieLines(values, this.now())) {
        if (!(name in c.jar)) continue;
        if (deleted) delete c.jar[name];
        else c.jar[name] = value;
      }
    });
  }

  /** The session of `generation` ended: the next request logs in again (once, whoever asks first). */
  expire(entry: ResolvedAuth, generation: number): void {
    if (this.sessions.get(entry)?.generation === generation) this.sessions.delete(entry);
  }

  /** A page came through under the entry's login: it works. */
  accepted(entry: ResolvedAuth): void {
    this.proven.add(entry);
    this.failures.delete(entry);
  }

  /** Whether a page has come through under the entry's login since the container started. */
  works(entry: ResolvedAuth): boolean {
    return this.proven.has(entry);
  }

  /**
   * The login of `generation` was answered but did not let the next page through (the site sets a
   * cookie on a failed login too): it counts as a failed login.
   */
  rejected(entry: ResolvedAuth, generation: number, reason: string): void {
    this.expire(entry, generation);
    this.failed(entry, reason);
  }

  private failed(entry: ResolvedAuth, reason: string): void {
    const waitMs = this.failures.get(entry)?.nextMs ?? LOGIN_RETRY_MS;
    this.failures.set(entry, {
      until: this.now() + waitMs,
      nextMs: Math.min(LOGIN_RETRY_MAX_MS, waitMs * 2),
      reason,
    });
  }

  private session(entry: ResolvedAuth): Session {
    let s = this.sessions.get(entry);
    if (!s) {
      const created: Session = { cookies: this.login(entry), generation: ++this.generation };
      this.sessions.set(entry, created);
      // A failed login is remembered (LOGIN_RETRY_MS) instead of being tried by the next URL.
      void created.cookies.then((c) => {
        if (!('failed' in c)) return;
        this.expire(entry, created.generation);
        this.failed(entry, c.failed);
      });
      s = created;
    }
    return s;
  }

  private async login(entry: ResolvedAuth): Promise<{ jar: Record<string, string> } | { failed: string }> {
    const form = entry.form!;
    this.logins++;
    // The entry's cookies go with the login only to the prefix's own origin: a login page on
    // another host (an SSO server) got them too, against "credentials go only to their origin".
    const loginOrigin = new URL(form.loginUrl).origin;
    const sameOrigin = loginOrigin === entry.origin;
    const entryCookies = sameOrigin ? entry.cookies : {};
    /** the cookies the login page set (readForm): they go with the submission */
    const pageJar: Record<string, string> = {};
    let target = form.loginUrl;
    let method: 'GET' | 'POST' = 'POST';
    // Loaded at the first login: its HTML parser (htmlparser2 and its entity tables, 7 MB) is not
    // in the memory of a fetch function that logs in nowhere (shared/stages/fetch-memory.ts).
    const { findLoginForm, loginBody } = await import('./login-form.ts');
    let body = loginBody(null, form.fields);
    // As a browser sends them: a site checking its CSRF token checks these too (Django on https).
    const headers: HeaderRecord = { origin: loginOrigin };
    if (form.readForm) {
      const page = await this.readLoginPage(
        form.loginUrl,
        Object.keys(form.fields),
        entryCookies,
        pageJar,
        findLoginForm,
      );
      if ('failed' in page) return page;
      body = loginBody(page.form, form.fields);
      headers.referer = page.url;
      if (page.form.method === 'get') {
        const url = new URL(page.form.action);
        url.search = body;
        [target, method, body] = [url.href, 'GET', ''];
      } else target = page.form.action;
    }
    const cookies = { ...entryCookies, ...pageJar };
    if (Object.keys(cookies).length > 0) headers.cookie = cookieHeader(cookies);
    const jar: Record<string, string> = {};
    const res = await this.send(target, {
      method,
      headers,
      ...(method === 'POST' ? { body } : {}),
      onSetCookie: (v) => Object.assign(jar, parseSetCookies(v)),
    });
    if (res.kind === 'late' || res.kind === 'not-due') return { failed: 'the login form was not sent' };
    // A site that checks a token in its form refuses a login without it: 403 (Django, Spring),
    // 419 (Laravel), 400 (others).
    const hint =
      !form.readForm && 'status' in res && [400, 403, 419].includes(res.status ?? 0)
        ? ' (a login form that carries a token, CSRF, needs form.readForm: true)'
        : '';
    if (res.kind === 'error')
      return {
        failed: `the login answered ${res.status ? `HTTP ${res.status}` : res.code}: ${res.message}${hint}`,
      };
    const status = 'status' in res ? res.status : 200;
    if (form.successStatus && !form.successStatus.includes(status))
      return { failed: `the login answered HTTP ${status}, not one of successWhen.status${hint}` };
    // Success is the submission's own cookie: the login page sets cookies before any login.
    const ok = form.successCookie ? form.successCookie in jar : Object.keys(jar).length > 0;
    if (ok) return { jar: sameOrigin ? { ...pageJar, ...jar } : jar };
    return {
      failed: `the login set no ${form.successCookie ? `${form.successCookie} cookie` : 'cookie'} (successWhen)${hint}`,
    };
  }

  /**
   * The login page (`readForm`): GET `loginUrl`, following redirects within its origin, keeping the
   * cookies it sets in `jar`; its login form, or why there is none.
   */
  private async readLoginPage(
    loginUrl: string,
    fieldNames: string[],
    cookies: Record<string, string>,
    jar: Record<string, string>,
    findLoginForm: (html: string, pageUrl: string, fieldNames: string[]) => LoginForm | null,
  ): Promise<{ url: string; form: LoginForm } | { failed: string }> {
    const origin = new URL(loginUrl).origin;
    let url = loginUrl;
    for (let hop = 0; ; hop++) {
      const sent = { ...cookies, ...jar };
      const res = await this.send(url, {
        method: 'GET',
        headers: Object.keys(sent).length > 0 ? { cookie: cookieHeader(sent) } : {},
        onSetCookie: (v) => Object.assign(jar, parseSetCookies(v)),
      });
      if (res.kind === 'redirect') {
        const next = res.location === null ? null : URL.parse(res.location);
        if (!next) return { failed: 'the login page redirected to no valid URL' };
        if (next.origin !== origin)
          return {
            failed: `the login page redirected to another origin (${next.origin}): set loginUrl to the page of the form`,
          };
        if (hop >= LOGIN_PAGE_REDIRECTS)
          return { failed: `the login page redirected more than ${LOGIN_PAGE_REDIRECTS} times` };
        url = next.href;
        continue;
      }
      if (res.kind === 'error')
        return {
          failed: `the login page answered ${res.status ? `HTTP ${res.status}` : res.code}: ${res.message}`,
        };
      if (res.kind !== 'ok') return { failed: 'the login page was not read' };
      const form = findLoginForm(Buffer.from(res.body).toString('utf8'), url, fieldNames);
      if (!form)
        return {
          failed: `no login form on ${withoutQuery(url)} (no form with the fields ${fieldNames.join(', ')} or a password input)`,
        };
      const action = new URL(form.action);
      if (action.origin !== origin)
        return {
          failed: `the login form posts to another origin (${action.origin}): set loginUrl to that site's login page`,
        };
      return { url, form };
    }
  }
}

/** The parts of the fetch section that hold secrets: `fetch.auth` and `fetch.proxy`'s password. */
export interface FetchSecrets {
  auth: AuthEntry[];
  proxy?: ProxyConfig | null;
}

interface SecretField {
  path: string;
  ref: SecretRef;
  /** a name rather than a secret (a basic username: plain text is fine there) */
  name?: true;
  /** read by every stage that sends requests through the proxy, not by the fetch stage alone */
  proxy?: true;
}

/** Every secret reference of the fetch section with its field path (`fetch.auth.0.basic.password`). */
function* secretFields({ auth: entries, proxy }: FetchSecrets): Generator<SecretField> {
  if (proxy?.password !== undefined) yield { path: 'fetch.proxy.password', ref: proxy.password, proxy: true };
  for (const [i, e] of entries.entries()) {
    const at = `fetch.auth.${i}`;
    if (e.basic) {
      yield { path: `${at}.basic.username`, ref: e.basic.username, name: true };
      yield { path: `${at}.basic.password`, ref: e.basic.password };
    }
    if (e.bearer) yield { path: `${at}.bearer`, ref: e.bearer };
    for (const [k, ref] of Object.entries(e.headers ?? {})) yield { path: `${at}.headers.${k}`, ref };
    for (const [k, ref] of Object.entries(e.cookies ?? {})) yield { path: `${at}.cookies.${k}`, ref };
    for (const [k, ref] of Object.entries(e.form?.fields ?? {}))
      yield { path: `${at}.form.fields.${k}`, ref };
  }
}

/** Field paths of secrets given as plain strings (for the warning; never the values). */
export function plainSecretPaths(fetch: FetchSecrets): string[] {
  return [...secretFields(fetch)].filter((f) => !f.name && typeof f.ref === 'string').map((f) => f.path);
}

/**
 * Entries whose credentials travel unencrypted: an `http:` prefix, or a form login posted to an
 * `http:` URL (for the warning; many intranets have no TLS, so it is not refused).
 */
export function cleartextAuthPaths(entries: AuthEntry[]): string[] {
  const out: string[] = [];
  entries.forEach((e, i) => {
    if (e.urlPrefix.startsWith('http:')) out.push(`fetch.auth.${i} (${e.urlPrefix})`);
    else if (e.form?.loginUrl.startsWith('http:'))
      out.push(`fetch.auth.${i}.form.loginUrl (${e.form.loginUrl})`);
  });
  return out;
}

const announcedCleartext = new Set<string>();

/**
 * The cleartext entries (cleartextAuthPaths) this process has not warned of yet, marked as warned
 * of: `trawl crawl` prints its warning and the fetch stage it runs in the same process then says
 * nothing more (it used to repeat it as a JSON log line); a deployed function warns once.
 */
export function unannouncedCleartext(entries: AuthEntry[]): string[] {
  const fresh = cleartextAuthPaths(entries).filter((p) => !announcedCleartext.has(p));
  for (const p of fresh) announcedCleartext.add(p);
  return fresh;
}

/** Field paths of secrets read from the environment (`{"env": NAME}`): a deployed function has none. */
export function envSecretPaths(fetch: FetchSecrets): string[] {
  return [...secretFields(fetch)]
    .filter((f) => typeof f.ref === 'object' && 'env' in f.ref)
    .map((f) => f.path);
}

/**
 * The Secrets Manager ARNs the config reads: `fetch.auth`'s (granted to the fetch role only) and
 * `fetch.proxy`'s (granted to the roles whose requests go through the proxy: fetch, and seed, which
 * reads the start sites' robots.txt).
 */
export function secretArns(fetch: FetchSecrets): { auth: string[]; proxy: string[] } {
  const auth = new Set<string>();
  const proxy = new Set<string>();
  for (const { ref, proxy: viaProxy } of secretFields(fetch))
    if (typeof ref === 'object' && 'secretArn' in ref) (viaProxy ? proxy : auth).add(ref.secretArn);
  return { auth: [...auth], proxy: [...proxy] };
}
