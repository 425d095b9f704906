/**
 * Fetches one URL task as a good citizen: robots.txt, per-host politeness across workers,
 * conditional GET, metadata first, and seed 001's error classes with retries.
 */
import { crawlDelayMs, isAllowed, userAgentToken } from '../crawl/robots/robots.ts';
import { backoffMs } from '../crawl/state/classify.ts';
import { fetchUrl, type HeaderRecord } from '../net/fetcher.ts';
import type { FetchedPage, UrlTask } from '../types.ts';
import { fetchWithAuth } from './fetch-auth.ts';
import type { FetchContext, TaskResult } from './fetch-context.ts';
import { hostSoft404 } from './soft-404.ts';

/** A politeness slot: go, sending by `sendBy` (none without a delay), or put the URL back with a delay. */
type Slot = { requeueSeconds: number } | { sendBy?: number };
/** Slots missed because connecting took too long, before the URL goes back to its queue. */
const MAX_LATE_SLOTS = 5;

/**
 * A host slot this close is waited for inside the invocation; a later one puts the URL (and every
 * other task of that host in the round) back with a delay: Lambda bills waiting like work.
 */
const MAX_IN_PROCESS_WAIT_MS = 50;
/**
 * Unless the wait is shared: while at least this many hosts of the round still have work, a host's
 * turn (up to MAX_OVERLAP_WAIT_MS) is waited for in the invocation, because the other hosts'
 * requests fill the time. Eight polite hosts are then fetched at their pace by one invocation
 * instead of a receive, a resend and a wake-up call per page; a few hosts go back to the queue.
 * Chosen by `npm run bench` (README, realistic networks).
 */
export const OVERLAP_HOSTS = 4;
const MAX_OVERLAP_WAIT_MS = 5_000;
/**
 * A slot is booked for a start time a little ahead (the lead) and used only if the request starts by
 * start + jitter. It is held for delay + margin: the margin beyond the jitter absorbs a stall between
 * that check and the request leaving, so requests stay ≥ delay apart whoever holds the next slot.
 */
const SLOT_JITTER_MS = 50;
const SLOT_MARGIN_MS = 2 * SLOT_JITTER_MS;
/** The lead grows (to this cap) when a slot write or timer came back too late to start on time. */
const MAX_SLOT_LEAD_MS = 2_000;
/** Without a per-host delay, another worker's back-off (429/503) is re-read this often per host. */
const BACKOFF_READ_MS = 10_000;

function page(task: UrlTask, fetchedAt: string, extra: Partial<FetchedPage>): TaskResult {
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether a wait for a host's turn is done in the invocation: a short one, or one other hosts' requests overlap. */
function mayWait(ctx: FetchContext, now: number, waitMs: number): boolean {
  if (now + waitMs > ctx.deadline || ctx.signal?.aborted) return false;
  if (waitMs <= MAX_IN_PROCESS_WAIT_MS) return true;
  return waitMs <= MAX_OVERLAP_WAIT_MS && (ctx.activeHosts?.() ?? 0) >= OVERLAP_HOSTS;
}

/** Sleeps `ms`, or less when the invocation is told to stop; false when it was. */
function pause(ctx: FetchContext, ms: number): Promise<boolean> {
  const signal = ctx.signal;
  if (!signal) return sleep(ms).then(() => true);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve(!signal.aborted);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Null when the wait is done in process; else the delay in seconds for putting the URL back. */
async function waitOrRequeue(ctx: FetchContext, now: number, waitMs: number): Promise<number | null> {
  if (!mayWait(ctx, now, waitMs)) return Math.ceil(waitMs / 1000);
  return (await pause(ctx, waitMs)) ? null : 0;
}

/**
 * Waits for the host's politeness slot; returns a delay in seconds when the URL must go back to its
 * queue. The slot is booked for a start time ahead of the write, so the write's latency never moves
 * a request closer to another worker's; a slot that cannot be used on time is left unused.
 */
async function politeSlot(ctx: FetchContext, host: string, delayMs: number): Promise<Slot> {
  if (delayMs <= 0) {
    const wait = await backedOff(ctx, host);
    return wait === null ? {} : { requeueSeconds: wait };
  }
  for (;;) {
    const lead = ctx.slotLeadMs ?? SLOT_JITTER_MS;
    const start = ctx.deps.now() + lead;
    const slot = await ctx.deps.hosts.acquireSlot(host, start, delayMs + SLOT_MARGIN_MS);
    if (slot.ok) {
      const early = start - ctx.deps.now();
      if (early > 0) await sleep(early);
      if (ctx.deps.now() <= start + SLOT_JITTER_MS) return { sendBy: start + SLOT_JITTER_MS };
      ctx.slotLeadMs = Math.min(MAX_SLOT_LEAD_MS, lead * 2);
      continue;
    }
    const requeue = await waitOrRequeue(ctx, ctx.deps.now(), slot.waitMs);
    if (requeue !== null) return { requeueSeconds: requeue };
  }
}

/**
 * No per-host delay, so no slot write per fetch: only a back-off after 429/503 (RFC 9110 §10.2.3
 * Retry-After) holds the host, known from this invocation or read from the host item now and then.
 */
async function backedOff(ctx: FetchContext, host: string): Promise<number | null> {
  ctx.backoffs ??= new Map();
  const now = ctx.deps.now();
  let known = ctx.backoffs.get(host);
  if (!known || now - known.readAt > BACKOFF_READ_MS) {
    known = { until: Math.max(known?.until ?? 0, await ctx.deps.hosts.slotFreeAt(host)), readAt: now };
    ctx.backoffs.set(host, known);
  }
  return known.until > now ? waitOrRequeue(ctx, now, known.until - now) : null;
}

/**
 * The host is not due before `until`: this invocation's other tasks for it go back to the queue with
 * one delay (one message) without another slot write, which would only fail.
 */
function deferHost(ctx: FetchContext, host: string, until: number): void {
  ctx.deferred ??= new Map();
  ctx.deferred.set(host, { until, delaySeconds: Math.max(1, Math.round((until - ctx.deps.now()) / 1000)) });
}

/** Fetches in a politeness slot: the outcome, seconds to put the URL back, or null after missed slots. */
async function politeFetch(
  ctx: FetchContext,
  task: UrlTask,
  host: string,
  delayMs: number,
  headers: HeaderRecord | undefined,
) {
  const { config, deps } = ctx;
  for (let missed = 0; missed < MAX_LATE_SLOTS; missed++) {
    const slot = await politeSlot(ctx, host, delayMs);
    if ('requeueSeconds' in slot) return slot.requeueSeconds;
    if (slot.sendBy !== undefined)
      deferHost(ctx, host, slot.sendBy - SLOT_JITTER_MS + delayMs + SLOT_MARGIN_MS);
    const res = await fetchUrl(task.url, {
      userAgent: config.fetch.userAgent,
      timeoutMs: config.fetch.timeoutMs,
      maxBytes: config.fetch.maxBytes,
      maxHeaderBytes: config.limits.headerBytes,
      allowPrivateNetworks: config.fetch.allowPrivateNetworks,
      resolve: config.fetch.resolve,
      proxy: config.fetch.proxy,
      conditional: task.conditional,
      ignoredMimeTypes: config.scope.ignoredMimeTypes,
      metadataFirst: true,
      now: deps.now,
      sendBy: slot.sendBy,
      headers,
    });
    if (res.kind !== 'late') return res;
    // Connecting outlasted the slot: book further ahead next time.
    ctx.slotLeadMs = Math.min(MAX_SLOT_LEAD_MS, (ctx.slotLeadMs ?? SLOT_JITTER_MS) * 2);
  }
  return null;
}

/**
 * robots.txt Crawl-delay, capped at limits.crawlDelayMs (a site can ask for a day); the cap is
 * logged once per host and noted with every page fetched under it.
 */
function cappedCrawlDelay(
  ctx: FetchContext,
  host: string,
  askedMs: number,
): { delayMs: number; capped?: { limit: string; note: string } } {
  const ceiling = ctx.config.limits.crawlDelayMs;
  if (askedMs <= ceiling) return { delayMs: askedMs };
  if (ctx.hostDelays?.get(host) !== ceiling)
    ctx.deps.log.warn('Crawl-delay capped at limits.crawlDelayMs', { host, askedMs, ceiling });
  const note = `Crawl-delay ${askedMs / 1000} s capped at limits.crawlDelayMs (${ceiling} ms)`;
  return { delayMs: ceiling, capped: { limit: 'limit-crawl-delay', note } };
}

/** Fetches one task; never throws for a site's misbehaviour (only for AWS failures). */
export async function fetchOne(ctx: FetchContext, task: UrlTask): Promise<TaskResult> {
  const { config, deps } = ctx;
  const fetchedAt = () => new Date(deps.now()).toISOString();
  if (deps.now() > ctx.deadline || ctx.signal?.aborted)
    return { type: 'requeue', task, delaySeconds: 0, reason: 'deadline' };
  const host = new URL(task.url).host;
  const deferred = ctx.deferred?.get(host);
  if (deferred && deferred.until > deps.now()) {
    const wait = deferred.until - deps.now();
    if (!mayWait(ctx, deps.now(), wait))
      return { type: 'requeue', task, delaySeconds: deferred.delaySeconds, reason: 'politeness' };
    if (!(await pause(ctx, wait))) return { type: 'requeue', task, delaySeconds: 0, reason: 'deadline' };
  }
  let delayMs = config.fetch.waitBetweenRequestsMs;
  let capped: FetchedPage['capped'];
  if (config.fetch.respectRobotsTxt) {
    // Groups match the product token ("trawl"), not the whole User-Agent string (RFC 9309 §2.2.1).
    const agent = userAgentToken(config.fetch.userAgent);
    const robots = await ctx.robots.get(task.url);
    if (robots.unavailable) {
      // Not the site's wish but its robots.txt failing: a temporary error, retried, then recorded as such.
      const message = `robots.txt unavailable (${robots.unavailable}): the site counts as disallowed for now (RFC 9309 §2.3.1.4)`;
      return onError(
        ctx,
        task,
        host,
        { errorKind: 'temporary', code: 'robots-unavailable', message },
        fetchedAt(),
      );
    }
    if (!isAllowed(robots, agent, task.url)) return page(task, fetchedAt(), { skipped: 'robots.txt' });
    const crawlDelay = cappedCrawlDelay(ctx, host, crawlDelayMs(robots, agent) ?? 0);
    delayMs = Math.max(delayMs, crawlDelay.delayMs);
    if (crawlDelay.capped) capped = [crawlDelay.capped];
  }
  ctx.hostDelays ??= new Map();
  ctx.hostDelays.set(host, delayMs);
  const fetchAs = (url: string) =>
    fetchWithAuth(ctx.auth, url, (headers) => politeFetch(ctx, { ...task, url }, host, delayMs, headers));
  const soft404 = config.scope.traps.soft404 ? await hostSoft404(ctx, task.url, fetchAs) : null;
  const res = typeof soft404 === 'number' ? soft404 : await fetchAs(task.url);
  if (res === null) return { type: 'requeue', task, delaySeconds: 1, reason: 'politeness' };
  if (typeof res === 'number') {
    deferHost(ctx, host, deps.now() + res * 1000);
    return { type: 'requeue', task, delaySeconds: res, reason: 'politeness' };
  }
  const result = await fetchedResult(ctx, task, host, res, fetchedAt(), soft404);
  if (capped && result.type === 'page') return { ...result, page: { ...result.page, capped } };
  return result;
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
      return page(task, at, {
        status: res.status,
        headers: res.headers,
        body: Buffer.from(res.body).toString('base64'),
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
                message: 'Location is not a valid URL',
              },
            }),
      });
    case 'error':
      return onError(ctx, task, host, res, at);
    case 'late':
      return { type: 'requeue', task, delaySeconds: 1, reason: 'politeness' };
  }
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
    message: string;
  },
  at: string,
): TaskResult | Promise<TaskResult> {
  const error = { kind: res.errorKind, code: res.code, message: res.message };
  if (res.errorKind === 'permanent') return page(task, at, { status: res.status ?? 0, error });
  const attempt = (task.attempt ?? 0) + 1;
  const ceiling = ctx.config.limits.retryAfterMs;
  if (res.retryAfterMs !== undefined && res.retryAfterMs > ceiling) {
    // a site cannot park the crawl for days: the wait is capped and the cap is said in the URL's error
    error.message += ` (Retry-After ${Math.round(res.retryAfterMs / 1000)} s capped at limits.retryAfterMs, ${ceiling} ms)`;
    res = { ...res, retryAfterMs: ceiling };
  }
  const retry = async (): Promise<TaskResult> => {
    if (res.retryAfterMs) {
      // The whole host waits, not only this URL: other workers see it in the host item.
      const until = ctx.deps.now() + res.retryAfterMs;
      await ctx.deps.hosts.backOff(host, until);
      ctx.backoffs ??= new Map();
      ctx.backoffs.set(host, { until, readAt: ctx.deps.now() });
    }
    const delayMs = res.retryAfterMs ?? backoffMs(attempt, ctx.deps.random);
    return { type: 'requeue', task: { ...task, attempt }, delaySeconds: delayMs / 1000, reason: 'retry' };
  };
  // Seed 001: temporary errors are retried (exponential back-off with jitter, or Retry-After) up to
  // refresh.maxTemporaryErrors; past that the page goes on as a temporary error ("too many").
  if (attempt <= ctx.config.refresh.maxTemporaryErrors) return retry();
  return page(task, at, { status: res.status ?? 0, error });
}
