/**
 * Fetches one URL task as a good citizen: robots.txt, the host's turn (politeness/host-turns.ts),
 * conditional GET, metadata first, and seed 001's error classes with retries.
 */
import { randomUUID } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { disallowedBy, userAgentToken } from '../crawl/robots/robots.ts';
import { backoffMs } from '../crawl/state/classify.ts';
import type { BudgetShare } from '../crawl/state/concurrency.ts';
import { KEYS } from '../layout.ts';
import { type FetchOutcome, fetchUrl, type HeaderRecord } from '../net/fetcher.ts';
import type { UrlTask } from '../types.ts';
import { spoolFile } from './body-spool.ts';
import { fetchWithAuth } from './fetch-auth.ts';
import { type FetchContext, pageResult, siteConnection, type TaskResult } from './fetch-context.ts';
import { normalizedAs } from './fetch-scope.ts';
import { type SilentHold, sectionOf } from './politeness/host-turns.ts';
import type { CachedRobots } from './politeness/robots-cache.ts';
import { hostSoft404 } from './soft-404.ts';

/** Slots missed because connecting took too long, before the URL goes back to its queue. */
const MAX_LATE_SLOTS = 5;

const page = pageResult;

/** A request not sent: the invocation is stopping. */
const STOPPED = { kind: 'stopped' } as const;

/**
 * Fetches in a politeness slot: the outcome, seconds to put the URL back (0: the invocation is
 * stopping), or null after missed slots.
 */
async function politeFetch(
  ctx: FetchContext,
  task: UrlTask,
  host: string,
  delayMs: number,
  sent: { at: number },
  headers: HeaderRecord | undefined,
  onSetCookie?: (values: string[]) => void,
) {
  const { config, deps } = ctx;
  for (let missed = 0; missed < MAX_LATE_SLOTS; missed++) {
    // No place among the requests in flight while waiting for the host to be nearly due (after a
    // soft-404 probe or a missed slot, the task may hold one).
    ctx.requests.release?.();
    const notNow = await ctx.turns.notDue(host, task.queue);
    if (notNow) return notNow.reason === 'politeness' ? notNow.delaySeconds : 0;
    let sendBy: number | undefined;
    let placed = 0;
    const res = await ctx.requests.run(async () => {
      // The pages held for writing must leave room: checked as the request starts, not as its task
      // starts waiting for the host's turn (a round's tasks all wait at once).
      await ctx.room();
      // The invocation stopped (a round failed, a stop signal) while this task waited for a place.
      if (ctx.signal?.aborted) return STOPPED;
      const started = deps.now();
      return fetchUrl(task.url, {
        ...siteConnection(config, ctx.proxy),
        timeoutMs: config.fetch.timeoutMs,
        maxBytes: config.fetch.maxBytes,
        maxHeaderBytes: config.limits.headerBytes,
        conditional: task.conditional,
        serverErrors: config.fetch.serverErrors,
        ignoredMimeTypes: config.scope.ignoredMimeTypes,
        metadataFirst: true,
        now: deps.now,
        // The host's turn is taken once connected (fetcher.ts): a real network's handshake
        // (DNS, TCP, TLS: a few round trips) comes before the slot, not inside it.
        turn: async () => {
          ctx.turns.connected(host, deps.now() - started);
          // Waiting for the turn (another worker's slot, a run's next one) holds no place among
          // the requests in flight: other hosts' due requests go out meanwhile.
          ctx.requests.release?.();
          const slot = await ctx.turns.turn(host, delayMs, task.queue, sectionOf(task.url));
          if ('requeueSeconds' in slot) return slot;
          // The request's place again (a TaskPlace keeps what a run takes) before it is sent, ahead
          // of requests that are not yet due: its slot is lost past its jitter.
          await ctx.requests.run(async () => undefined, true);
          placed = deps.now();
          sent.at = placed;
          sendBy = slot.sendBy;
          return slot;
        },
        headers,
        onSetCookie,
        largeBodies: { afterBytes: ctx.memory.largeBodyBytes, share: () => largeBodyShare(ctx) },
        spool: { afterBytes: ctx.memory.spoolBytes, file: spoolFile },
      });
    });
    if (res.kind === 'stopped') return 0;
    if (res.kind === 'not-due') return res.requeueSeconds;
    if (res.kind !== 'late') return res;
    // The request missed its slot with its place in hand (a slow slot write, a stall): book
    // further ahead next time; not when the slot passed while every place was taken (then the
    // run's next slot is used, or a new one booked).
    if (sendBy !== undefined && placed <= sendBy) ctx.turns.late();
  }
  return null;
}

/**
 * A large body's share of the invocation's budget. It grows only while the pages held for writing
 * leave room: a body that finishes adds its base64 to them, so bodies read side by side must not
 * all finish into a full hold.
 */
async function largeBodyShare(ctx: FetchContext): Promise<BudgetShare> {
  const share = ctx.largeBodies.share();
  return {
    async reserve(bytes) {
      await ctx.room();
      await share.reserve(bytes);
    },
    release: () => share.release(),
  };
}

/** Fetches one task; never throws for a site's misbehaviour (only for AWS failures). */
export async function fetchOne(ctx: FetchContext, task: UrlTask): Promise<TaskResult> {
  const host = new URL(task.url).host;
  // A host (or the host's section) held for its silence: the attempt counts, unsent (a request
  // would wait fetch.timeoutMs).
  const section = sectionOf(task.url);
  const silence = ctx.turns.silentHost(host, section);
  if (silence && silence !== 'probe')
    return onError(ctx, task, host, unsent(ctx, silence), new Date(ctx.deps.now()).toISOString());
  if (silence !== 'probe') return fetchTask(ctx, task, host, section, false);
  // The request that tries a silent host after its hold: whatever it comes to, the next may be one.
  try {
    return await fetchTask(ctx, task, host, section, true);
  } finally {
    ctx.turns.probeDone(host, section);
  }
}

async function fetchTask(
  ctx: FetchContext,
  task: UrlTask,
  host: string,
  /** the part of the host whose silence the task's request counts in (`sectionOf`) */
  section: string,
  probe: boolean,
): Promise<TaskResult> {
  const { config, deps } = ctx;
  const fetchedAt = () => new Date(deps.now()).toISOString();
  const notNow = await ctx.turns.notDue(host, task.queue);
  if (notNow) return { type: 'requeue', task, ...notNow };
  let robots: CachedRobots | null = null;
  if (config.fetch.respectRobotsTxt) {
    // Groups match the product token ("trawl"), not the whole User-Agent string (RFC 9309 §2.2.1).
    const agent = userAgentToken(config.fetch.userAgent);
    robots = await ctx.robots.get(task.url);
    // Its robots.txt could not be asked yet (the host's turn did not come): back until it can.
    if (robots.notDueSeconds !== undefined)
      return { type: 'requeue', task, delaySeconds: Math.max(1, robots.notDueSeconds), reason: 'politeness' };
    if (robots.unavailable) {
      // Not the site's wish but its robots.txt failing: a temporary error, retried, then recorded as
      // such; the proxy's error when the proxy kept robots.txt from being read (robots-cache.ts).
      const code = robots.errorCode ?? 'robots-unavailable';
      const errorKind = robots.errorKind ?? 'temporary';
      // Retried once robots.txt is asked again, when the server said it would answer.
      const notBeforeMs =
        robots.retryAt === undefined ? {} : { notBeforeMs: Math.max(0, robots.retryAt - deps.now()) };
      return onError(
        ctx,
        task,
        host,
        { errorKind, code, message: robotsFailure(robots), ...notBeforeMs },
        fetchedAt(),
      );
    }
    const rule = disallowedBy(robots, agent, task.url);
    // The rule named: "why was my page not crawled?" answered by the URL's note (helper-46).
    if (rule !== null) return page(task, fetchedAt(), { skipped: 'robots.txt', robotsRule: rule });
  }
  const { delayMs, capped } = ctx.turns.delayFor(host, robots, userAgentToken(config.fetch.userAgent));
  // When the last request went out (its turn given): a silence counts only after the host's hold.
  const sent = { at: Number.POSITIVE_INFINITY };
  const fetchAs = (url: string) =>
    fetchWithAuth(ctx.auth, url, (headers, onSetCookie) =>
      politeFetch(ctx, { ...task, url }, host, delayMs, sent, headers, onSetCookie),
    );
  const soft404 = config.scope.traps.soft404 ? await hostSoft404(ctx, task.url, fetchAs) : null;
  const res = typeof soft404 === 'number' ? soft404 : await fetchAs(task.fetchAs ?? task.url);
  if (res === null) return { type: 'requeue', task, delaySeconds: 1, reason: 'politeness' };
  // 0: the invocation is stopping (its deadline, a stop signal) while the task waited for its turn.
  if (res === 0) return { type: 'requeue', task, delaySeconds: 0, reason: 'deadline' };
  if (typeof res === 'number') {
    // Held meanwhile for its silence (another of its requests timed out while this one waited);
    // not the probe, which goes back as it would.
    const silence = probe ? null : ctx.turns.silentHost(host, section, false);
    if (silence && silence !== 'probe') return onError(ctx, task, host, unsent(ctx, silence), fetchedAt());
    ctx.turns.defer(host, deps.now() + res * 1000);
    return { type: 'requeue', task, delaySeconds: res, reason: 'politeness' };
  }
  if (res.kind === 'error' && res.silent) await ctx.turns.unanswered(host, section, sent.at);
  else if (res.kind !== 'late' && res.kind !== 'not-due') await ctx.turns.answered(host, section);
  const session = await sessionRedirect(ctx, task, res);
  if (session) return session;
  const result = await fetchedResult(ctx, task, host, res, fetchedAt(), soft404);
  if (capped && result.type === 'page') return { ...result, page: { ...result.page, capped: [capped] } };
  return result;
}

/**
 * A redirect to the URL itself as the crawl writes it: `/app/catalog` → `/app/catalog;jsessionid=…`
 * (a Java app's first answer to a client without its cookie), a fragment or a dropped parameter
 * added. Judged as a redirect, it was a loop, and the page and all behind it were lost (helper-48).
 * The task goes back to ask for the Location as sent, still known by its own URL; once: a second
 * such answer is the loop it looks like.
 */
async function sessionRedirect(
  ctx: FetchContext,
  task: UrlTask,
  res: Awaited<ReturnType<typeof fetchUrl>>,
): Promise<TaskResult | null> {
  if (res.kind !== 'redirect' || !res.location || task.fetchAs !== undefined) return null;
  if (res.location === task.url || (await normalizedAs(ctx, task, res.location)) !== task.url) return null;
  return {
    type: 'requeue',
    task: { ...task, fetchAs: res.location },
    delaySeconds: 0,
    reason: 'session-redirect',
  };
}

/** The page (or the retry) a fetch's response makes. */
function fetchedResult(
  ctx: FetchContext,
  task: UrlTask,
  host: string,
  res: Awaited<ReturnType<typeof fetchUrl>>,
  at: string,
  soft404: string | number | null,
): TaskResult | Promise<TaskResult> {
  switch (res.kind) {
    case 'ok':
      if (res.spooled) return spooledPage(ctx, task, at, res, soft404);
      return page(task, at, {
        status: res.status,
        headers: res.headers,
        body: Buffer.from(res.body.buffer, res.body.byteOffset, res.body.byteLength).toString('base64'),
        truncated: res.truncated,
        ...(typeof soft404 === 'string' ? { soft404 } : {}),
      });
    case 'not-modified':
      return page(task, at, { status: 304, headers: res.headers, notModified: true });
    case 'skipped':
      return page(task, at, { status: 200, headers: res.headers, skipped: `mime-type ${res.mimeType}` });
    case 'redirect':
      return page(task, at, {
        status: res.status,
        headers: res.headers,
        redirectTo: res.location ?? undefined,
        ...(res.location
          ? {}
          : {
              error: {
                kind: 'permanent',
                code: 'malformed-redirect',
                message:
                  res.headers.location === undefined
                    ? `HTTP ${res.status} without a Location header`
                    : 'Location is not a valid URL',
              },
            }),
      });
    case 'error':
      return onError(ctx, task, host, res, at);
    case 'late':
      return { type: 'requeue', task, delaySeconds: 1, reason: 'politeness' };
    case 'not-due':
      return { type: 'requeue', task, delaySeconds: res.requeueSeconds, reason: 'politeness' };
  }
}

/**
 * A page whose body went to a file (past the spool size): the file goes to S3 as an object of its
 * own, streamed, and the page names it. The file is removed whatever happens; a failed write fails
 * the task (an AWS failure: its message comes back).
 */
async function spooledPage(
  ctx: FetchContext,
  task: UrlTask,
  at: string,
  res: Extract<FetchOutcome, { kind: 'ok' }>,
  soft404: string | number | null,
): Promise<TaskResult> {
  const { path, bytes } = res.spooled as NonNullable<typeof res.spooled>;
  try {
    // The body holds no memory now: the request's place goes to the next request during the write.
    ctx.requests.release?.();
    const key = KEYS.pageBody(ctx.deps.now(), randomUUID());
    await ctx.deps.store.putFile(key, path, bytes);
    return page(task, at, {
      status: res.status,
      headers: res.headers,
      bodyKey: key,
      bodyBytes: bytes,
      truncated: res.truncated,
      ...(typeof soft404 === 'string' ? { soft404 } : {}),
    });
  } finally {
    await unlink(path).catch(() => {});
  }
}

/** The error a URL of a host held for its silence gets without a request, retried after the hold. */
function unsent(ctx: FetchContext, silent: SilentHold): Parameters<typeof onError>[3] {
  const { timeoutMs } = ctx.config.fetch;
  const under = silent.section === undefined ? '' : ` under ${silent.section}`;
  return {
    errorKind: 'temporary',
    code: 'host-not-answering',
    message: `not sent: the host sent nothing back to its last ${silent.requests} requests${under} within fetch.timeoutMs (${timeoutMs} ms)`,
    notBeforeMs: silent.forMs,
  };
}

function onError(
  ctx: FetchContext,
  task: UrlTask,
  host: string,
  res: {
    errorKind: 'permanent' | 'temporary';
    code: string;
    status?: number;
    retryAfterMs?: number;
    retryAfterDefault?: true;
    message: string;
    /** the host is held this long yet (its silence): the retry comes after it */
    notBeforeMs?: number;
  },
  at: string,
): TaskResult | Promise<TaskResult> {
  const error = { kind: res.errorKind, code: res.code, message: res.message };
  if (res.errorKind === 'permanent') return page(task, at, { status: res.status ?? 0, error });
  const attempt = (task.attempt ?? 0) + 1;
  const ceiling = ctx.config.limits.retryAfterMs;
  if (res.retryAfterMs !== undefined && res.retryAfterMs > ceiling) {
    // a site cannot park the crawl for days: the wait is capped and the cap is said in the URL's error
    const asked = res.retryAfterDefault
      ? `no readable Retry-After: the default ${Math.round(res.retryAfterMs / 1000)} s`
      : `Retry-After ${Math.round(res.retryAfterMs / 1000)} s`;
    error.message += ` (${asked} capped at limits.retryAfterMs, ${ceiling} ms)`;
    res = { ...res, retryAfterMs: ceiling };
  }
  const retry = async (): Promise<TaskResult> => {
    // The whole host waits, not only this URL: other workers see it in the host item.
    if (res.retryAfterMs) await ctx.turns.backOff(host, res.retryAfterMs);
    const delayMs = res.retryAfterMs ?? (res.notBeforeMs ?? 0) + backoffMs(attempt, ctx.deps.random);
    return { type: 'requeue', task: { ...task, attempt }, delaySeconds: delayMs / 1000, reason: 'retry' };
  };
  // Seed 001: temporary errors are retried (exponential back-off with jitter, or Retry-After) up to
  // refresh.maxTemporaryErrors; past that the page goes on as a temporary error ("too many").
  if (attempt <= ctx.config.refresh.maxTemporaryErrors) return retry();
  return page(task, at, { status: res.status ?? 0, error });
}

/** Why a page was not fetched when its host's robots.txt could not be read. */
function robotsFailure(robots: CachedRobots): string {
  const why = robots.unavailable;
  if (robots.errorKind === 'permanent')
    return `the host refused a secure connection when robots.txt was read (${why}): every page of the host fails the same way`;
  if (robots.errorCode) return `robots.txt not read: ${why}; the site counts as disallowed until it is`;
  return `robots.txt unavailable (${why}): the site counts as disallowed for now (RFC 9309 §2.3.1.4)`;
}
