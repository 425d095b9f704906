/**
 * Tasks queued under another config are decided again before any request: no politeness slot, no
 * robots.txt, no request for a URL the current config rejects (an exclude added while the frontier
 * held its tasks, a killed crawl run again with a new `ignore` rule, a lower `maxDepth`). Such a
 * task becomes a page that was not fetched (`outOfScope`), which the extract stage records
 * `ignored` (`out-of-scope: <reason>`), counted among the summary's rejections, and which the
 * index stage takes a document away from, as for any page the config now skips.
 *
 * A task carries the scope version it was decided under (scope-version.ts); one decided under the
 * current config is not decided again (the same decision, by construction): the round pays one
 * string comparison per task. The decider is loaded only when a task needs it — beside the
 * handler's bundle on Lambda (`decide.mjs`, infra/constructs/stage-function.ts), as the config
 * schema is (stored-config.ts): the fetch function's memory is the price of what its container loads.
 */
import type { CrawlConfig } from '../config.ts';
import type { QueuedJudge } from '../crawl/rules/decide.ts';
import { scopeVersion } from '../crawl/rules/scope-version.ts';
import type { UrlTask } from '../types.ts';
import { type FetchContext, type PageResult, pageResult } from './fetch-context.ts';
import { bump } from './logger.ts';

/** The decider's module: from source, or its bundle beside the handler's. A value, so esbuild leaves it to run time. */
const DECIDE_MODULE = import.meta.url.endsWith('.ts') ? '../crawl/rules/decide.ts' : './decide.mjs';

interface Judging {
  version: string;
  judge: QueuedJudge;
}
/** The container's judge, compiled once per scope version. */
let judging: Judging | null = null;
/** The config each invocation judges under, read once (freshConfig). */
const fresh = new WeakMap<FetchContext, Promise<CrawlConfig>>();

async function judgingFor(config: CrawlConfig): Promise<Judging> {
  const version = scopeVersion(config);
  if (judging?.version !== version) {
    const { queuedTaskJudge }: typeof import('../crawl/rules/decide.ts') = await import(DECIDE_MODULE);
    judging = { version, judge: queuedTaskJudge(config) };
  }
  return judging;
}

/**
 * The config to judge under. The one the invocation holds may be older than the tasks' (a
 * container keeps its copy for half a minute; another stage queued them under the config uploaded
 * since): it is read again, once per invocation, before a task is judged under an older config.
 */
function freshConfig(ctx: FetchContext): Promise<CrawlConfig> {
  let config = fresh.get(ctx);
  if (!config) {
    config = ctx.deps.loadConfig({ maxAgeMs: 0 });
    fresh.set(ctx, config);
  }
  return config;
}

/** A message's tasks: those to fetch, and the pages of those the current config rejects. */
export interface Rescoped {
  fetch: UrlTask[];
  out: PageResult[];
}

/**
 * Each message's tasks, those decided under another config decided again: the accepted ones carry
 * the current version on (a task put back is not decided a second time), the rejected ones are
 * pages not fetched. Nothing is read or loaded when every task carries the current version.
 */
export async function rescope(ctx: FetchContext, perMessage: UrlTask[][]): Promise<Rescoped[]> {
  const held = scopeVersion(ctx.config);
  if (perMessage.every((tasks) => tasks.every((t) => t.decidedUnder === held)))
    return perMessage.map((fetch) => ({ fetch, out: [] }));
  const { version, judge } = await judgingFor(await freshConfig(ctx));
  const at = new Date(ctx.deps.now()).toISOString();
  let judged = 0;
  const rescoped = perMessage.map((tasks) => {
    const r: Rescoped = { fetch: [], out: [] };
    for (const task of tasks) {
      if (task.decidedUnder === version) {
        r.fetch.push(task);
        continue;
      }
      judged++;
      const d = judge(task);
      if (d.accepted) r.fetch.push({ ...task, decidedUnder: version });
      else r.out.push(notFetched(task, d.reason, at));
    }
    return r;
  });
  if (judged > 0) bump('scope:rechecked', judged);
  return rescoped;
}

/** The page of a task the current config rejects: no request was made. */
function notFetched(task: UrlTask, reason: string, at: string): PageResult {
  return pageResult(task, at, { outOfScope: reason });
}

/**
 * What `href` (a redirect's Location) normalizes to under the invocation's config, judged as the
 * task's URL is: the decider is loaded for it (a rare case, see fetch-one.ts `sessionRedirect`).
 */
export async function normalizedAs(ctx: FetchContext, task: UrlTask, href: string): Promise<string | null> {
  const { judge } = await judgingFor(ctx.config);
  return judge({ url: href, depth: task.depth, kind: task.kind }).normalized ?? null;
}
