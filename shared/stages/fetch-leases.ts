/**
 * Frontier messages the fetch function holds are leased, not taken: received with a short
 * visibility (LEASE_SECONDS) and extended by a heartbeat while their URLs are really being
 * fetched. Work held by a dead invocation or process comes back within about LEASE_SECONDS
 * (the queue's own visibility, 6 × the fetch timeout, only applies to receives that ask for none),
 * and a clean stop hands what is still held back at once (visibility 0).
 */
import type { WorkQueues } from '../aws/work-queues.ts';
import { addToGroup } from '../groups.ts';

/** How long a received message stays invisible without a heartbeat. */
export const LEASE_SECONDS = 30;

/**
 * The lease in force: LEASE_SECONDS, or TRAWL_LEASE_SECONDS (1–300) where a test must see many
 * redeliveries in seconds (test/integration/fault-injection.test.ts) instead of half-minutes.
 */
export function leaseSeconds(): number {
  const v = Math.floor(Number(process.env.TRAWL_LEASE_SECONDS));
  return v >= 1 && v <= 300 ? v : LEASE_SECONDS;
}

/** A third of the lease: two heartbeats can be late before a lease runs out. */
export const heartbeatMs = (): number => (leaseSeconds() * 1000) / 3;

export class Leases {
  /** receipt handle → queue URL */
  private readonly held = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private beat: Promise<void> = Promise.resolve();

  constructor(
    private readonly queues: WorkQueues,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.beat = this.change(this.held.keys(), leaseSeconds()).catch(this.onError);
    }, heartbeatMs());
    // The heartbeat alone never keeps a process (or a test) alive.
    this.timer.unref();
  }

  hold(queueUrl: string, receiptHandles: string[]): void {
    for (const h of receiptHandles) this.held.set(h, queueUrl);
  }

  /** The messages are done (deleted): no more heartbeats for them. */
  release(receiptHandles: string[]): void {
    for (const h of receiptHandles) this.held.delete(h);
  }

  /** Makes the messages visible again now and forgets them (all held ones when none are named). */
  async giveBack(receiptHandles: Iterable<string> = [...this.held.keys()]): Promise<void> {
    const handles = [...receiptHandles];
    await this.change(handles, 0);
    this.release(handles);
  }

  /** Stops the heartbeat (waiting for one in progress). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beat;
  }

  private async change(receiptHandles: Iterable<string>, seconds: number): Promise<void> {
    const byQueue = new Map<string, { receiptHandle: string; seconds: number }[]>();
    for (const receiptHandle of receiptHandles) {
      const queueUrl = this.held.get(receiptHandle);
      if (!queueUrl) continue;
      addToGroup(byQueue, queueUrl, { receiptHandle, seconds });
    }
    for (const [queueUrl, entries] of byQueue) await this.queues.changeVisibility(queueUrl, entries);
  }
}
