/**
 * Fault injection for the fault-injection and redelivery tests. What is simulated and why:
 * - an AWS call that fails before reaching the emulator (throttling, a network error that the
 *   SDK's own retries did not absorb), and one that fails AFTER the emulator applied it (the
 *   response was lost: a message sent, an object written, a delete done, yet the caller sees an
 *   error). moto cannot be made to fail on demand, so this is an SDK middleware: the one mock
 *   here, for faults the emulator cannot produce;
 * - an AWS call answered with a transient server error (HTTP 500) that the SDK's own retries
 *   (maxAttempts 5) absorb: injected inside the SDK's retry loop, so the stage never sees it
 *   unless it repeats;
 * - a handler that throws before its work, or after it (a crash between the writes and the
 *   delete of its messages): the real handler runs, then the runner sees a failure, so the real
 *   queue redelivers the batch.
 * Every decision comes from a seeded PRNG, so `TRAWL_FAULT_SEED` replays the same fault schedule
 * per (stage, operation, n-th call); concurrent timing may still order calls differently.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pluggable } from '@smithy/types';
import type { AnyHandler } from '../../cli/runner.ts';
import type { AwsClients } from '../../shared/aws/clients.ts';

export type FaultPoint = 'before' | 'after';

export interface FaultRates {
  /** chance an AWS call fails (half before the request, half after it was applied) */
  aws: number;
  /** chance a stage handler invocation throws (half before its work, half after it) */
  handler: number;
  /** chance one attempt of an AWS call gets a transient HTTP 500, retried by the SDK */
  transient: number;
}

/** mulberry32: a small, seedable PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class InjectedFault extends Error {
  override name = 'InjectedFault';
}

/** Decides and counts faults; `stage` is the handler a call was made from ('runner' outside them). */
export class FaultInjector {
  readonly counts = new Map<string, number>();
  enabled = true;
  private readonly calls = new Map<string, number>();
  private readonly where = new AsyncLocalStorage<string>();

  /**
   * @param forced faults that happen whatever the PRNG says, by `<stage> <op>#<n>` (the n-th call),
   * e.g. `{ 'seed invoke#1': 'after' }`: a stage called once or twice a crawl gets its fault on
   * every run, not only on the seeds whose draws hit it.
   */
  constructor(
    readonly seed: number,
    private readonly rates: FaultRates,
    private readonly forced: Record<string, FaultPoint> = {},
  ) {}

  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  /** Faults the stages and the runner saw (the rest were transient errors the SDK's retries absorbed). */
  get surfacing(): number {
    let n = 0;
    for (const [k, v] of this.counts) if (!k.includes('#attempt')) n += v;
    return n;
  }

  /** Faults per stage, e.g. { fetch: 80, extract: 40, … }. */
  byStage(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of this.counts) {
      const stage = k.split(' ')[0] as string;
      out[stage] = (out[stage] ?? 0) + v;
    }
    return out;
  }

  /** The fault (if any) for the n-th call of `op` in `stage`: a PRNG per (seed, stage, op, n). */
  decide(stage: string, op: string, rate: number): FaultPoint | null {
    if (!this.enabled || rate <= 0) return null;
    const key = `${stage} ${op}`;
    const n = (this.calls.get(key) ?? 0) + 1;
    this.calls.set(key, n);
    const r = prng(this.seed ^ hash(`${key}#${n}`))();
    const point: FaultPoint | null =
      this.forced[`${key}#${n}`] ?? (r >= rate ? null : r < rate / 2 ? 'before' : 'after');
    if (point === null) return null;
    const counted = `${key} ${point}`;
    this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
    return point;
  }

  /** Every AWS call of these clients may fail, before or after the emulator applied it. */
  wrapClients(clients: AwsClients): void {
    for (const client of [clients.sqs, clients.ddbRaw, clients.s3, clients.events]) {
      client.middlewareStack.use(this.middleware());
    }
  }

  // biome-ignore lint/suspicious/noExplicitAny: one middleware fits every client's input/output types
  private middleware(): Pluggable<any, any> {
    return {
      applyToStack: (stack) => {
        // Inside the SDK's retry middleware (finalizeRequest, after it): one failed attempt.
        stack.add(
          (next, context) => async (args) => {
            const name = (context as { commandName?: string }).commandName ?? 'call';
            const op = `${name.replace(/Command$/, '')}#attempt`;
            if (this.decide(this.where.getStore() ?? 'runner', op, this.rates.transient) !== null) {
              throw Object.assign(new InjectedFault(`injected: ${op} HTTP 500`), {
                name: 'InternalError',
                $fault: 'server',
                $metadata: { httpStatusCode: 500 },
              });
            }
            return next(args);
          },
          { step: 'finalizeRequest', priority: 'low', name: 'trawlTransientFault', override: true },
        );
        stack.add(
          (next, context) => async (args) => {
            const name = (context as { commandName?: string }).commandName ?? 'call';
            const op = name.replace(/Command$/, '');
            const point = this.decide(this.where.getStore() ?? 'runner', op, this.rates.aws);
            if (point === 'before') throw new InjectedFault(`injected: ${op} failed`);
            const out = await next(args);
            if (point === 'after') throw new InjectedFault(`injected: ${op} applied, response lost`);
            return out;
          },
          { step: 'initialize', name: 'trawlFaultInjection', override: true },
        );
      },
    };
  }

  /** The real handler, run in its stage's context, throwing before or after it with the handler rate. */
  wrapHandler(stage: string, handler: AnyHandler): AnyHandler {
    return (event, context) =>
      this.where.run(stage, async () => {
        const point = this.decide(stage, 'invoke', this.rates.handler);
        if (point === 'before') throw new InjectedFault(`injected: ${stage} crashed before its work`);
        const out = await handler(event, context);
        if (point === 'after') throw new InjectedFault(`injected: ${stage} crashed after its work`);
        return out;
      });
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
