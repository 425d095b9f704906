/**
 * The fetch stage's side of `fetch.auth`: one set of resolved credentials and form-login sessions
 * per container (kept across warm invocations; a cold start resolves and logs in again), and a
 * fetch wrapper that adds the credentials of the URL's prefix and logs in again once when a
 * response says the session ended.
 */
import { createSecretResolver } from '../aws/secrets.ts';
import type { CrawlConfig } from '../config.ts';
import { AuthSessions, isLoggedOut, plainSecretPaths, resolveAuth } from '../net/auth.ts';
import { type FetchOutcome, fetchUrl, type HeaderRecord } from '../net/fetcher.ts';
import type { StageDeps } from './deps.ts';
import { siteConnection } from './fetch-context.ts';

let cached: { key: string; sessions: Promise<AuthSessions> } | null = null;

/** The container's auth sessions for this config; null when `fetch.auth` is empty. */
export function authSessionsFor(config: CrawlConfig, deps: StageDeps): Promise<AuthSessions> | null {
  if (config.fetch.auth.length === 0) return null;
  const key = JSON.stringify(config.fetch.auth);
  if (cached?.key === key) return cached.sessions;
  const plain = plainSecretPaths(config.fetch.auth);
  // Paths only, never values: a plain secret is stored with the config object itself.
  if (plain.length > 0)
    deps.log.warn('fetch.auth: plain-string secrets are stored in the config; use {"env"} or {"secretArn"}', {
      fields: plain,
    });
  const sessions = resolveAuth(config.fetch.auth, createSecretResolver()).then(
    (resolved) =>
      new AuthSessions(resolved, (url, init) =>
        fetchUrl(url, {
          ...siteConnection(config),
          keepAliveMs: 0, // one login a session: its connection is not kept
          timeoutMs: config.fetch.timeoutMs,
          maxBytes: 64 * 1024, // a login answer is not a page: its body is never needed
          ignoredMimeTypes: [],
          metadataFirst: false,
          now: deps.now,
          method: 'POST',
          headers: init.headers,
          body: { contentType: 'application/x-www-form-urlencoded', data: init.body },
          onSetCookie: init.onSetCookie,
        }),
      ),
  );
  // A failed resolution (a missing variable, Secrets Manager down) is tried again next time.
  sessions.catch(() => {
    if (cached?.sessions === sessions) cached = null;
  });
  cached = { key, sessions };
  return sessions;
}

/** Forgets the container's sessions (tests; `trawl` between sessions). */
export function resetAuthSessions(): void {
  cached = null;
}

type Attempt = FetchOutcome | number | null;

const loginFailed: FetchOutcome = {
  kind: 'error',
  errorKind: 'temporary',
  code: 'login-failed',
  message: 'fetch.auth form login did not succeed (successWhen not met)',
};

const loggedOut: FetchOutcome = {
  kind: 'error',
  errorKind: 'temporary',
  code: 'logged-out',
  message: 'fetch.auth: the session ended again right after a new login',
};

/** Fetches with the URL's credentials; a logged-out answer ends the session and is fetched once more. */
export async function fetchWithAuth(
  auth: AuthSessions | null | undefined,
  url: string,
  fetch: (headers: HeaderRecord | undefined) => Promise<Attempt>,
): Promise<Attempt> {
  if (!auth) return fetch(undefined);
  for (let attempt = 0; ; attempt++) {
    const creds = await auth.headersFor(url);
    if (creds === null) return loginFailed;
    const res = await fetch(creds.headers);
    if (!creds.entry || res === null || typeof res === 'number') return res;
    if (!isLoggedOut(creds.entry, res)) return res;
    auth.expire(creds.entry, creds.generation);
    // Logged out again right after a new login: retried later as a temporary error, not recorded as the
    // login page's redirect.
    if (attempt > 0) return loggedOut;
  }
}
