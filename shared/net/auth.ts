/**
 * Credentials per URL prefix (`fetch.auth`): which entry covers a URL, the request headers it adds,
 * and form-login sessions kept per origin in the container's memory (a cold start logs in again).
 * Credentials go only to URLs of the prefix's origin under its path: the fetcher never follows a
 * redirect itself, so a redirect to another origin is a new URL that gets that URL's credentials.
 */

import type { SecretResolver } from '../aws/secrets.ts';
import type { AuthEntry, SecretRef } from '../config-auth.ts';
import type { FetchOutcome, HeaderRecord } from './fetcher.ts';

export interface ResolvedAuth {
  origin: string;
  pathPrefix: string;
  /** Authorization (basic) and configured headers, secrets resolved */
  headers: HeaderRecord;
  cookies: Record<string, string>;
  form?: {
    loginUrl: string;
    fields: Record<string, string>;
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
      const out: ResolvedAuth = { origin: prefix.origin, pathPrefix: prefix.pathname, headers, cookies };
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
  const out: Record<string, string> = {};
  for (const line of values) {
    const pair = line.split(';', 1)[0] ?? '';
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
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

/** Sends the login form: the session cookies, or null when the answer is not a success. */
export type LoginFetch = (
  url: string,
  init: { headers: HeaderRecord; body: string; onSetCookie: (v: string[]) => void },
) => Promise<FetchOutcome>;

interface Session {
  cookies: Promise<Record<string, string> | null>;
  generation: number;
}

/** Form-login sessions per origin, one login at a time per origin (concurrent fetches share it). */
export class AuthSessions {
  private readonly sessions = new Map<string, Session>();
  private generation = 0;
  /** logins sent (the tests count re-logins) */
  logins = 0;

  constructor(
    readonly entries: ResolvedAuth[],
    private readonly send: LoginFetch,
  ) {}

  /** Request headers for `url` (none outside every prefix); null when the login failed. */
  async headersFor(
    url: string,
  ): Promise<{ headers: HeaderRecord; entry: ResolvedAuth | null; generation: number } | null> {
    const entry = authFor(url, this.entries);
    if (!entry) return { headers: {}, entry: null, generation: 0 };
    const session = entry.form ? this.session(entry) : null;
    const sessionCookies = session ? await session.cookies : {};
    if (sessionCookies === null) return null;
    const cookies = { ...entry.cookies, ...sessionCookies };
    const headers = { ...entry.headers };
    if (Object.keys(cookies).length > 0) headers.cookie = cookieHeader(cookies);
    return { headers, entry, generation: session?.generation ?? 0 };
  }

  /** The session of `generation` ended: the next request logs in again (once, whoever asks first). */
  expire(entry: ResolvedAuth, generation: number): void {
    if (this.sessions.get(entry.origin)?.generation === generation) this.sessions.delete(entry.origin);
  }

  private session(entry: ResolvedAuth): Session {
    let s = this.sessions.get(entry.origin);
    if (!s) {
      const created: Session = { cookies: this.login(entry), generation: ++this.generation };
      this.sessions.set(entry.origin, created);
      // A failed login is not kept: the next URL tries again.
      void created.cookies.then((c) => c === null && this.expire(entry, created.generation));
      s = created;
    }
    return s;
  }

  private async login(entry: ResolvedAuth): Promise<Record<string, string> | null> {
    const form = entry.form!;
    const jar: Record<string, string> = {};
    this.logins++;
    const res = await this.send(form.loginUrl, {
      headers: Object.keys(entry.cookies).length ? { cookie: cookieHeader(entry.cookies) } : {},
      body: new URLSearchParams(form.fields).toString(),
      onSetCookie: (v) => Object.assign(jar, parseSetCookies(v)),
    });
    if (res.kind === 'error' || res.kind === 'late' || res.kind === 'not-due') return null;
    const status = 'status' in res ? res.status : 200;
    if (form.successStatus && !form.successStatus.includes(status)) return null;
    const ok = form.successCookie ? form.successCookie in jar : Object.keys(jar).length > 0;
    return ok ? jar : null;
  }
}

/**
 * Every secret reference of the entries with its field path (`fetch.auth.0.basic.password`), and
 * whether it is a name rather than a secret (a basic username: plain text is fine there).
 */
function* secretFields(entries: AuthEntry[]): Generator<{ path: string; ref: SecretRef; name?: true }> {
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
export function plainSecretPaths(entries: AuthEntry[]): string[] {
  return [...secretFields(entries)].filter((f) => !f.name && typeof f.ref === 'string').map((f) => f.path);
}

/** The Secrets Manager ARNs the config reads (the fetch role is granted exactly these). */
export function secretArns(entries: AuthEntry[]): string[] {
  const arns = new Set<string>();
  for (const { ref } of secretFields(entries))
    if (typeof ref === 'object' && 'secretArn' in ref) arns.add(ref.secretArn);
  return [...arns];
}
