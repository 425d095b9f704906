/**
 * Writes a fetch round message by message: a frontier message is deleted as soon as its URLs are
 * done and their pages written, so a crash loses at most the pages in flight and the few not yet
 * flushed, never a whole round. Completed messages are written together (one extract message) once
 * FLUSH_PAGES pages, FLUSH_BYTES of bodies or FLUSH_MS have gathered. The pages ride in that message when they pack small
 * (a polite crawl's few pages a pass: no S3 object per pass), else in one page bundle in S3.
 */
import { randomUUID } from 'node:crypto';
import { packLines } from '../aws/page-store.ts';
import { KEYS } from '../layout.ts';
import type { ExtractMessage, FetchedPage, UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';
import type { TaskResult } from './fetch-context.ts';
import type { Leases } from './fetch-leases.ts';
import { sendDelayedTasks } from './send-tasks.ts';

const FLUSH_PAGES = 200;
const FLUSH_MS = 3_000;
/**
 * …or once their bodies (base64) reach this many bytes: sixteen concurrent 10 MB bodies held for
 * 200 pages would take the fetch function past its memory. A flush of this size is one page bundle.
 */
export const FLUSH_BYTES = 32 * 1024 * 1024;
/**
 * Packed pages up to this size go inline: SQS bills 64 KB chunks sent and received ($0.40/M each),
 * so 4 chunks twice cost less than a bundle's PUT and GET ($5.40/M); SQS caps a message at 1 MiB.
 */
const INLINE_BYTES = 256 * 1024;

export interface DoneMessage {
  queueUrl: string;
  receiptHandle: string;
  results: TaskResult[];
}

export class RoundFlusher {
  private pending: DoneMessage[] = [];
  private pendingPages = 0;
  private pendingBytes = 0;
  private since = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;

  constructor(
    private readonly deps: StageDeps,
    private readonly leases: Leases,
    private readonly onFlushed: (results: TaskResult[]) => void,
  ) {}

  /** A message's tasks are all done: written with the next flush. */
  complete(done: DoneMessage): void {
    if (this.pending.length === 0) this.since = Date.now();
    this.pending.push(done);
    for (const r of done.results) {
      if (r.type !== 'page') continue;
      this.pendingPages++;
      this.pendingBytes += r.page.body.length;
    }
    if (
      this.pendingPages >= FLUSH_PAGES ||
      this.pendingBytes >= FLUSH_BYTES ||
      Date.now() - this.since >= FLUSH_MS
    )
      this.schedule();
  }

  /** Writes whatever is pending and waits for every write; throws the first write failure. */
  async flush(): Promise<void> {
    this.schedule();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private schedule(): void {
    const batch = this.pending;
    this.pending = [];
    this.pendingPages = 0;
    this.pendingBytes = 0;
    if (batch.length === 0) return;
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await this.write(batch);
      } catch (err) {
        this.failure = err;
      }
    });
  }

  private async write(batch: DoneMessage[]): Promise<void> {
    // A message of which nothing was started (a clean stop) goes back as it is: no resend.
    const untouched = batch.filter((m) =>
      m.results.every((r) => r.type === 'requeue' && r.reason === 'deadline'),
    );
    const done = batch.filter((m) => !untouched.includes(m));
    if (untouched.length > 0) await this.leases.giveBack(untouched.map((m) => m.receiptHandle));
    const results = done.flatMap((m) => m.results);
    await writePages(this.deps, results);
    const byQueue = new Map<string, string[]>();
    for (const m of done) byQueue.set(m.queueUrl, [...(byQueue.get(m.queueUrl) ?? []), m.receiptHandle]);
    for (const [queueUrl, handles] of byQueue) {
      await this.deps.queues.delete(queueUrl, handles);
      this.leases.release(handles);
    }
    this.onFlushed(results);
  }
}

/** Sends the pages in one extract message (inline or as a bundle), puts requeued tasks back. */
async function writePages(deps: StageDeps, results: TaskResult[]): Promise<void> {
  const pages: FetchedPage[] = [];
  const requeue: { task: UrlTask; delaySeconds: number }[] = [];
  for (const r of results) {
    if (r.type === 'page') pages.push(r.page);
    else requeue.push(r);
  }
  if (pages.length > 0) {
    const packed = packLines(pages);
    let body: ExtractMessage = { inline: packed, id: randomUUID(), count: pages.length };
    if (packed.length > INLINE_BYTES) {
      const key = KEYS.pageBundle(deps.now(), randomUUID());
      await deps.store.putLines(key, pages);
      body = { bundle: key, count: pages.length };
    }
    await deps.queues.send(deps.queueUrls.extract, [{ body }]);
  }
  await sendDelayedTasks(deps, requeue);
}
