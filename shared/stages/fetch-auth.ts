/**
 * The fetch stage's side of `fetch.auth`: one set of resolved credentials and form-login sessions
 * per container (kept across warm invocations; a cold start resolves and logs in again), and a
 * fetch wrapper that adds the credentials of the URL's prefix and logs in again once when a
 * response says the session ended. Also `fetch.proxy`'s login, resolved once per container by
 * every stage that sends requests through the proxy (fetch; seed, for robots.txt).
 */
import { createSecretResolver } from '../aws/secrets.ts';
import type { CrawlConfig } from '../config.ts';
import {
  AuthSessions,
  isLoggedOut,
  plainSecretPaths,
  resolveAuth,
  unannouncedCleartext,
  withoutQuery,
} from '../net/auth.ts';
import { type FetchOutcome, fetchUrl, type HeaderRecord } from '../net/fetcher.ts';
import { type FetchProxy, resolveProxy } from '../net/proxy.ts';
import type { StageDeps } from './deps.ts';
import { siteConnection } from './fetch-context.ts';

/** A login page read for its form (`readForm`): larger ones are cut there. */
const LOGIN_PAGE_MAX_BYTES = 1024 * 1024;

/**
 * One value a container keeps for one config (a resolved secret, a login's sessions): made on
 * first use, made again when the config's key changes; a failed making (a missing variable,
 * Secrets Manager down) is forgotten, so it is tried again next time and fails the invocation
 * meanwhile.
 */
function containerMemo<T>() {
  let held: { key: string; value: Promise<T> } | null = null;
  return {
    get(key: string, make: () => Promise<T>): Promise<T> {
      if (held?.key === key) return held.value;
      const value = make();
      value.catch(() => {
        if (held?.value === value) held = null;
      });
      held = { key, value };
      return value;
    },
    reset(): void {
      held = null;
    },
  };
}

const proxies = containerMemo<FetchProxy | null>();
const sessionsMemo = containerMemo<AuthSessions>();

/**
 * `fetch.proxy` with its password resolved (once per container: a cold start reads it again); null
 * without a proxy.
 */
export function proxyFor(config: CrawlConfig, deps: Pick<StageDeps, 'log'>): Promise<FetchProxy | null> {
  const proxy = config.fetch.proxy;
  if (proxy?.password === undefined) return Promise.resolve(proxy && { host: proxy.host, port: proxy.port });
  return proxies.get(JSON.stringify(proxy), () => {
    // The path only, never the value.
    const plain = plainSecretPaths({ auth: [], proxy });
    if (plain.length > 0)
      deps.log.warn(
        'fetch.proxy: a plain-string password is stored in the config; use {"env"} or {"secretArn"}',
        {
          fields: plain,
        },
      );
    return resolveProxy(proxy, createSecretResolver());
  });
}

/**
 * The container's auth sessions for this config; null when `fetch.auth` is empty. Kept while the
 * config's `fetch` section stays the same: the logins go through its connection settings (the
 * proxy, `resolve`, private networks, timeouts) too.
 */
export function authSessionsFor(
  config: CrawlConfig,
  deps: StageDeps,
  proxy: FetchProxy | null,
): Promise<AuthSessions> | null {
  if (config.fetch.auth.length === 0) return null;
  return sessionsMemo.get(JSON.stringify(config.fetch), () => {
    const plain = plainSecretPaths({ auth: config.fetch.auth });
    // Paths only, never values: a plain secret is stored with the config object itself.
    if (plain.length > 0)
      deps.log.warn(
        'fetch.auth: plain-string secrets are stored in the config; use {"secretArn"} (or {"env"} for a crawl run here: a deployed crawl refuses it)',
        {
          fields: plain,
        },
      );
    const cleartext = unannouncedCleartext(config.fetch.auth);
    if (cleartext.length > 0)
      deps.log.warn('fetch.auth: credentials sent over plain http', { entries: cleartext });
    return resolveAuth(config.fetch.auth, createSecretResolver()).then(
      (resolved) =>
        new AuthSessions(
          resolved,
          (url, init) =>
            fetchUrl(url, {
              ...siteConnection(config, proxy),
              keepAliveMs: 0, // one login a session: its connection is not kept
              timeoutMs: config.fetch.timeoutMs,
              // A login answer's body is never needed; a login page's form is read (readForm).
              maxBytes: init.method === 'GET' ? LOGIN_PAGE_MAX_BYTES : 64 * 1024,
              ignoredMimeTypes: [],
              metadataFirst: false,
              now: deps.now,
              method: init.method,
              headers: init.headers,
              ...(init.body === undefined
                ? {}
                : { body: { contentType: 'application/x-www-form-urlencoded', data: init.body } }),
              onSetCookie: init.onSetCookie,
            }),
          deps.now,
        ),
    );
  });
}

/** Forgets the container's sessions and proxy login (tests; `trawl` between sessions). */
export function resetAuthSessions(): void {
  sessionsMemo.reset();
  proxies.reset();
}

type Attempt = FetchOutcome | number | null;

const loginFailed = (why: string): FetchOutcome => ({
  kind: 'error',
  errorKind: 'temporary',
  code: 'login-failed',
  message: `fetch.auth form login did not succeed: ${why}`,
});

const loggedOut: FetchOutcome = {
  kind: 'error',
  errorKind: 'temporary',
  code: 'logged-out',
  message: 'fetch.auth: the session ended again right after a new login',
};

/**
 * Fetches with the URL's credentials. A logged-out answer under a login that has let pages through
 * ends the session and the page is fetched once more after a new login; under a login that never
 * has, the login failed (the site set a cookie all the same) and is not tried again for a while.
 */
export async function fetchWithAuth(
  auth: AuthSessions | null | undefined,
  url: string,
  fetch: (headers: HeaderRecord | undefined, onSetCookie?: (values: string[]) => void) => Promise<Attempt>,
): Promise<Attempt> {
  if (!auth) return fetch(undefined);
  for (let attempt = 0; ; attempt++) {
    const creds = await auth.headersFor(url);
    if ('failed' in creds) return loginFailed(creds.failed);
    const { entry, generation } = creds;
    // A form login's session as the site renews it with the page (auth.ts renew).
    const renew = entry?.form ? (values: string[]) => auth.renew(entry, generation, values) : undefined;
    const res = await fetch(creds.headers, renew);
    if (!creds.entry || res === null || typeof res === 'number') return res;
    // Basic, bearer, header or cookie credentials the site refuses (rotated, expired): a temporary
    // error that keeps the documents while it is retried (refresh.maxTemporaryErrors). As the
    // permanent 401 of an unknown page, a password rotation deleted every page behind it at once.
    if (!creds.entry.form && res.kind === 'error' && res.status === 401)
      return credentialsRefused(creds.entry, res);
    if (!isLoggedOut(creds.entry, res)) {
      if (creds.entry.form && res.kind !== 'error') auth.accepted(creds.entry);
      return res;
    }
    if (!auth.works(creds.entry)) {
      // Not one page has come through under this login. A redirect to the login page (or its text)
      // says it does not work (a wrong password on a site that sets a cookie anyway): no new login
      // for a while. Before, every pass logged in again, and with a politeness delay the page went
      // back to its queue after each login, for ever. A 401/403 may be this page's own answer: the
      // session stays for the other pages, this one is retried as a temporary error.
      const why = `the site answered as logged out right after the login (${outcomeText(res)})`;
      if (res.kind !== 'error') auth.rejected(creds.entry, creds.generation, why);
      return loginFailed(why);
    }
    if (attempt > 0) {
      // Refused again right after a new login that works for other pages: a 401/403 is this page's
      // own answer (recorded as such, not retried as a session problem with a login each time);
      // a redirect to the login page is retried later as a temporary error.
      return res.kind === 'error' ? res : loggedOut;
    }
    auth.expire(creds.entry, creds.generation);
  }
}

function credentialsRefused(
  entry: { origin: string; pathPrefix: string },
  res: Extract<FetchOutcome, { kind: 'error' }>,
): FetchOutcome {
  return {
    ...res,
    errorKind: 'temporary',
    code: 'auth-refused',
    message: `fetch.auth for ${entry.origin}${entry.pathPrefix}: the site refused the credentials (HTTP 401): check them; the pages keep their documents while they are retried (refresh.maxTemporaryErrors)`,
  };
}

function outcomeText(res: FetchOutcome): string {
  // The query left out: a login page may echo the submitted fields back in it.
  if (res.kind === 'redirect')
    return `a redirect to ${res.location ? withoutQuery(res.location) : 'nowhere'}`;
  if (res.kind === 'error') return res.status ? `HTTP ${res.status}` : res.code;
  return 'the logged-out text in the page';
}
