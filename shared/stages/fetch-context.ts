/** What one fetch invocation shares between its tasks, and what a task comes to (fetch-one.ts). */
import type { CrawlConfig } from '../config.ts';
import type { AuthSessions } from '../net/auth.ts';
import type { FetchedPage, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { RobotsCache } from './robots-cache.ts';

export type TaskResult =
  | { type: 'page'; page: FetchedPage }
  | { type: 'requeue'; task: UrlTask; delaySeconds: number; reason: 'politeness' | 'retry' | 'deadline' };

export interface FetchContext {
  deps: StageDeps;
  config: CrawlConfig;
  robots: RobotsCache;
  deadline: number;
  /** hosts backed off (429/503 Retry-After) as this invocation knows it: until when, and when last read */
  backoffs?: Map<string, { until: number; readAt: number }>;
  /** how far ahead politeness slots are booked (grows when DynamoDB answers slowly) */
  slotLeadMs?: number;
  /** each host's politeness delay as the last fetch found it (config and robots.txt Crawl-delay) */
  hostDelays?: Map<string, number>;
  /** hosts not due in this invocation: until when, and the delay their tasks go back with */
  deferred?: Map<string, { until: number; delaySeconds: number }>;
  /** a clean stop: tasks not started go back */
  signal?: AbortSignal;
  /** how many hosts of the current round still have tasks (fetch-stage.ts keeps it) */
  activeHosts?: () => number;
  /** `fetch.auth` credentials and form-login sessions (fetch-auth.ts) */
  auth?: AuthSessions | null;
}
