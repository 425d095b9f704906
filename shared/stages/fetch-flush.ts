/**
 * Writes a fetch round page by page: pages are written together (one extract message) once
 * FLUSH_PAGES pages, FLUSH_BYTES of bodies or FLUSH_MS have gathered, whichever message they came
 * from, so what the invocation holds is bounded by bytes whatever a message's pages weigh (50 URLs
 * of 10 MB pages are not held until the last is read). A frontier message is deleted once its URLs
 * are all done and every page of it written, so a crash loses at most the pages not yet written,
 * never a message. The pages ride in the extract message when they pack small (a polite crawl's
 * few pages a pass: no S3 object per pass), else in one page bundle in S3.
 */
import { randomUUID } from 'node:crypto';
import { packLines } from '../aws/page-store.ts';
import { addToGroup } from '../groups.ts';
import { KEYS } from '../layout.ts';
import type { ExtractMessage, FetchedPage, SourceName, UrlTask, WakeMessage } from '../types.ts';
import type { StageDeps } from './deps.ts';
import { hostOf, type PageResult, type Requeued, type TaskResult } from './fetch-context.ts';
import type { Leases } from './fetch-leases.ts';
import { sendDelayedTasks } from './send-tasks.ts';

const FLUSH_PAGES = 200;
/** A task put back is sent this long before it is due (its SQS delay then covers the rest). */
const REQUEUE_LEAD_MS = 300;
const FLUSH_MS = 3_000;
/**
 * …or once their bodies (base64) reach `flushBytes` (200 pages of 10 MB would take the fetch function
 * past its memory; a flush of this size is one page bundle). Fetches wait while `holdBytes` are
 * queued for writing (`room()`). Both come from the function's memory (fetch-memory.ts).
 */
export interface FlushSizes {
  flushBytes: number;
  holdBytes: number;
}
/**
 * Packed pages up to this size go inline: SQS bills 64 KB chunks sent and received ($0.40/M each),
 * so 4 chunks twice cost less than a bundle's PUT and GET ($5.40/M); SQS caps a message at 1 MiB.
 */
const INLINE_BYTES = 256 * 1024;

/** A frontier message whose tasks are all done: what goes back to the queue, and whether any page came of it. */
export interface DoneMessage {
  queueUrl: string;
  receiptHandle: string;
  /** the tasks put back (politeness, retries, a stop); its pages went to `page()` */
  requeued: Requeued[];
  pages: number;
}

export class RoundFlusher {
  private pendingPages: PageResult[] = [];
  private pendingRequeued: Requeued[] = [];
  private pendingDone: DoneMessage[] = [];
  private pendingBytes = 0;
  /** body bytes handed over and not yet written (pending and in the write chain) */
  private heldBytes = 0;
  private chain: Promise<void> = Promise.resolve();
  /** `room()` callers waiting for the next write to end */
  private waiting: (() => void)[] = [];
  private failure: unknown = null;
  /** flushes the tasks put back by the time the first of them is due */
  private requeueTimer: NodeJS.Timeout | null = null;
  private requeueAt = 0;
  /** flushes what is pending FLUSH_MS after the first of it, whether or not anything follows */
  private flushTimer: NodeJS.Timeout | null = null;
  /** when a page, a task put back or a done message last came (epoch ms, the process clock) */
  lastActivity = Date.now();
  /**
   * Set when the fetcher has stepped aside (a round held by slow requests: its next round is far
   * off): tasks put back for their hosts' turns get a wake-up call too (wakeFor), not only
   * retries, unless their host is one of these (the slow ones, left to this fetcher).
   */
  wakeExcept: Set<string> | null = null;

  constructor(
    private readonly deps: StageDeps,
    private readonly leases: Leases,
    private readonly onFlushed: (results: TaskResult[]) => void,
    private readonly sizes: FlushSizes,
  ) {}

  /** A page is fetched: written with the next flush, before its message is deleted. */
  page(result: PageResult): void {
    this.startClock();
    this.pendingPages.push(result);
    this.pendingBytes += result.page.body.length;
    this.heldBytes += result.page.body.length;
    this.maybeSchedule();
  }

  /**
   * A task put back for its host (a turn, a back-off, a retry): sent with the next flush, whichever
   * message it came from, with a wake-up call for when it is due. Until 2026-11-28 it went back
   * only when all of its message's tasks were done (a round can last tens of seconds), its delay
   * counted from then: a host idled 29.8 s after an 8 s Retry-After.
   */
  requeue(result: Requeued): void {
    this.startClock();
    this.pendingRequeued.push(result);
    this.maybeSchedule();
    // Sent by the time it is due (less what the send takes), if no flush comes sooner.
    const inMs = Math.max(0, (result.dueAt ?? this.deps.now()) - this.deps.now() - REQUEUE_LEAD_MS);
    if (this.requeueTimer && this.requeueAt <= Date.now() + inMs) return;
    if (this.requeueTimer) clearTimeout(this.requeueTimer);
    this.requeueAt = Date.now() + inMs;
    this.requeueTimer = setTimeout(() => {
      this.requeueTimer = null;
      if (this.pendingRequeued.length > 0) this.schedule();
    }, inMs).unref();
  }

  /** A message's tasks are all done (its pages given to `page()` before): deleted with the next flush. */
  complete(done: DoneMessage): void {
    this.startClock();
    this.pendingDone.push(done);
    this.maybeSchedule();
  }

  /**
   * Resolves once the bodies held for writing are under `holdBytes`: a fetch awaits it before it
   * starts, so a slow bucket slows the fetching instead of filling the memory.
   */
  async room(): Promise<void> {
    while (this.heldBytes > this.sizes.holdBytes && !this.failure)
      await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Waits for the writes under way and starts none (the invocation is failing); never throws. */
  async settle(): Promise<void> {
    // No timer starts a write behind the failing invocation.
    for (const timer of [this.flushTimer, this.requeueTimer]) if (timer) clearTimeout(timer);
    this.flushTimer = null;
    this.requeueTimer = null;
    await this.chain;
  }

  /** Writes whatever is pending and waits for every write; throws the first write failure. */
  async flush(): Promise<void> {
    this.schedule();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private startClock(): void {
    this.lastActivity = Date.now();
    if (this.pendingPages.length > 0 || this.pendingDone.length > 0 || this.pendingRequeued.length > 0)
      return;
    // Written FLUSH_MS on even when nothing else comes: the pages fetched before a request that
    // hangs waited for it (a host's start page's links fetched 20 s late, behind another host's
    // 20 s page), and with them their links and the frontier messages they came from.
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.schedule();
    }, FLUSH_MS).unref();
  }

  private maybeSchedule(): void {
    if (this.pendingPages.length >= FLUSH_PAGES || this.pendingBytes >= this.sizes.flushBytes)
      this.schedule();
  }

  private schedule(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const pages = this.pendingPages;
    const requeued = this.pendingRequeued;
    const done = this.pendingDone;
    const bytes = this.pendingBytes;
    this.pendingPages = [];
    this.pendingRequeued = [];
    this.pendingDone = [];
    this.pendingBytes = 0;
    if (pages.length === 0 && done.length === 0 && requeued.length === 0) return;
    this.chain = this.chain.then(async () => {
      try {
        if (!this.failure) await this.write(pages, requeued, done);
      } catch (err) {
        this.failure = err;
      } finally {
        this.heldBytes -= bytes;
        for (const wake of this.waiting.splice(0)) wake();
      }
    });
  }

  private async write(pages: PageResult[], early: Requeued[], batch: DoneMessage[]): Promise<void> {
    // A message of which nothing was started (a clean stop) goes back as it is: no resend.
    const untouched = batch.filter((m) => m.pages === 0 && m.requeued.every((r) => r.reason === 'deadline'));
    const done = batch.filter((m) => !untouched.includes(m));
    const results = [...pages, ...early, ...done.flatMap((m) => m.requeued)];
    // Side by side, each a round trip of its own: a polite pass is mostly these.
    await Promise.all([
      untouched.length > 0 ? this.leases.giveBack(untouched.map((m) => m.receiptHandle)) : null,
      writePages(this.deps, results),
      wakeFor(this.deps, early, this.wakeExcept),
    ]);
    const byQueue = new Map<string, string[]>();
    for (const m of done) addToGroup(byQueue, m.queueUrl, m.receiptHandle);
    await Promise.all(
      [...byQueue].map(async ([queueUrl, handles]) => {
        await this.deps.queues.delete(queueUrl, handles);
        this.leases.release(handles);
      }),
    );
    this.onFlushed(results);
  }
}

/** Sends the pages in one extract message (inline or as a bundle), puts requeued tasks back. */
async function writePages(deps: StageDeps, results: TaskResult[]): Promise<void> {
  const pages: FetchedPage[] = [];
  const requeue: { task: UrlTask; delaySeconds: number }[] = [];
  for (const r of results) {
    if (r.type === 'page') pages.push(r.page);
    else requeue.push({ task: r.task, delaySeconds: delayLeft(deps, r) });
  }
  // The pages and the tasks put back are independent writes: a failure of either fails the flush
  // and its messages come back (both are idempotent downstream).
  await Promise.all([pages.length > 0 ? sendPages(deps, pages) : null, sendDelayedTasks(deps, requeue)]);
}

/** What is left of a task's delay when it is sent: counted from when it was decided. */
function delayLeft(deps: StageDeps, r: Requeued): number {
  if (r.dueAt === undefined || r.delaySeconds <= 0) return r.delaySeconds;
  return Math.max(0, (r.dueAt - deps.now()) / 1000);
}

/**
 * A fetcher for the tasks put back as they go (the one that put them back may be in a long round):
 * a kick for those due already, else one wake-up call for the earliest, whose event source mapping
 * starts a fetcher when it is due. Each task is marked, so the invocation's end leaves none for it.
 */
async function wakeFor(deps: StageDeps, early: Requeued[], except: Set<string> | null): Promise<void> {
  // Only the site's back-offs (Retry-After, temporary errors): a host not due goes back for a turn
  // its fetcher's next round takes with its other hosts; a fetcher started for it alone found few
  // hosts due and put them back again (64 polite hosts: 34 fetch invocations instead of 4-11).
  // All of them once the fetcher has stepped aside (its next round waits for slow requests), but
  // the slow hosts' own.
  const retries = early.filter(
    (r) => r.reason === 'retry' || (except !== null && !except.has(hostOf(r.task.url))),
  );
  if (retries.length === 0) return;
  const delayed = retries.filter((r) => delayLeft(deps, r) > 0);
  if (delayed.length < retries.length) await deps.kickFetch();
  if (delayed.length === 0 || !deps.queueUrls.wake) return;
  const due = Math.min(...delayed.map((r) => r.dueAt ?? deps.now() + r.delaySeconds * 1000));
  const sources = [...new Set(delayed.map((r) => r.task.queue))];
  if (await wakeLater(deps, due, sources)) for (const r of delayed) r.woken = true;
}

/**
 * One delayed message on the wake queue, whose event source mapping starts a fetcher when it
 * arrives (AWS has no delayed invoke). A failure to send is logged (false): the one-minute tick
 * remains.
 */
export async function wakeLater(deps: StageDeps, at: number, sources: SourceName[]): Promise<boolean> {
  if (!deps.queueUrls.wake) return false; // a stack deployed before wake-up calls existed: the tick remains
  const delaySeconds = Math.max(1, Math.ceil((at - deps.now()) / 1000));
  try {
    await deps.queues.send(deps.queueUrls.wake, [
      { body: { due: new Date(at).toISOString(), sources } satisfies WakeMessage, delaySeconds },
    ]);
    return true;
  } catch (err) {
    deps.log.warn('could not leave a wake-up call; the next tick starts the fetcher', { err });
    return false;
  }
}

async function sendPages(deps: StageDeps, pages: FetchedPage[]): Promise<void> {
  // Packed only when it may fit inline: text gzips ~10×, so more than this never does.
  const raw = pages.reduce((n, p) => n + p.body.length, 0);
  const packed = raw <= INLINE_BYTES * 16 ? packLines(pages) : null;
  let body: ExtractMessage;
  if (packed !== null && packed.length <= INLINE_BYTES)
    body = { inline: packed, id: randomUUID(), count: pages.length };
  else {
    const key = KEYS.pageBundle(deps.now(), randomUUID());
    await deps.store.putLines(key, pages);
    body = { bundle: key, count: pages.length };
  }
  await deps.queues.send(deps.queueUrls.extract, [{ body }]);
}
