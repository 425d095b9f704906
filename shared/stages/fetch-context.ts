/** What one fetch invocation shares between its tasks, and what a task comes to (fetch-one.ts). */
import type { CrawlConfig } from '../config.ts';
import type { ByteBudget, Places } from '../crawl/state/concurrency.ts';
import type { AuthSessions } from '../net/auth.ts';
import type { FetchOptions } from '../net/fetcher.ts';
import type { FetchProxy } from '../net/proxy.ts';
import type { FetchedPage, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { FetchMemoryPlan } from './fetch-memory.ts';
import type { HostTurns } from './politeness/host-turns.ts';
import type { RobotsCache } from './politeness/robots-cache.ts';

export type TaskResult =
  | { type: 'page'; page: FetchedPage }
  | {
      type: 'requeue';
      task: UrlTask;
      delaySeconds: number;
      reason: 'politeness' | 'retry' | 'deadline' | 'session-redirect';
      /** when it is due (epoch ms): its delay is counted from the decision, not from the send */
      dueAt?: number;
      /** a wake-up call for it was left as it was sent (fetch-flush.ts): none needed at the end */
      woken?: boolean;
    };

/** A task that came to a page, and one that goes back to its queue. */
export type PageResult = Extract<TaskResult, { type: 'page' }>;
export type Requeued = Extract<TaskResult, { type: 'requeue' }>;

/** The page a task came to: no status, headers or body unless `extra` says (a skip, an error, a fetch). */
export function pageResult(task: UrlTask, fetchedAt: string, extra: Partial<FetchedPage>): PageResult {
  return {
    type: 'page',
    page: {
      task,
      url: task.url,
      status: 0,
      headers: {},
      fetchedAt,
      body: '',
      truncated: false,
      notModified: false,
      ...extra,
    },
  };
}

export interface FetchContext {
  deps: StageDeps;
  config: CrawlConfig;
  robots: RobotsCache;
  deadline: number;
  /** politeness: each host's turn, delay, back-off and deferral as this invocation knows them */
  turns: HostTurns;
  /** a clean stop: tasks not started go back */
  signal?: AbortSignal;
  /** stops the invocation after a task failed (an AWS failure): `signal` aborts, no task starts */
  stop: () => void;
  /** what the invocation may hold, sized from its memory (fetch-memory.ts) */
  memory: FetchMemoryPlan;
  /**
   * A place among the fetch.concurrency requests in flight: a task takes it as its first request
   * starts and keeps it until its page is made (the body read, decoded and encoded), not while it
   * waits for its host's turn before that, so hosts waiting out their delay do not keep other
   * hosts' due requests from starting (fetch-stage.ts gives each task its own, a TaskPlace).
   */
  requests: Places;
  /** the bytes bodies past `memory.largeBodyBytes` may hold together (fetch-one.ts) */
  largeBodies: ByteBudget;
  /** resolves once the pages held for writing leave room (the round's flusher sets it) */
  room: () => Promise<void>;
  /** `fetch.auth` credentials and form-login sessions (fetch-auth.ts) */
  auth?: AuthSessions | null;
  /** `fetch.proxy`, its login resolved (fetch-auth.ts proxyFor) */
  proxy: FetchProxy | null;
}

/**
 * What every request to a site takes from the config (pages, robots.txt, form logins): the user
 * agent, where it may connect and how (private networks, resolve, the proxy: `fetch.proxy` with its
 * login resolved, fetch-auth.ts proxyFor), the CAs it trusts and how long its connection is kept.
 */
export function siteConnection(config: CrawlConfig, proxy: FetchProxy | null) {
  const f = config.fetch;
  return {
    userAgent: f.userAgent,
    allowPrivateNetworks: f.allowPrivateNetworks,
    resolve: f.resolve,
    proxy,
    caCertificates: f.caCertificates,
    keepAliveMs: f.keepAliveSeconds * 1000,
  } satisfies Partial<FetchOptions>;
}

/** A task URL's host (its politeness key); the URL itself when it does not parse. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
