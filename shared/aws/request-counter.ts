/**
 * Counts every AWS API call a crawl makes, by service and operation, through an SDK
 * middleware: the benchmark prices a run from these counts (docs/design-facts.md prices).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pluggable } from '@smithy/types';

export interface RequestCounts {
  /** "SQS.SendMessageBatch" → calls */
  calls: Record<string, number>;
  /** SQS requests as billed: each 64 KB of payload is one request */
  sqsBilledRequests: number;
  /**
   * DynamoDB capacity units estimated from the requests (items under 1 KB, as Trawl's URL items
   * are): a write item = 1 unit, an eventually consistent key read = ½ unit. `trawl report`
   * prices local runs from these; the benchmark models item sizes exactly (bench/ddb-units.ts).
   */
  dynamoWriteUnits: number;
  dynamoReadUnits: number;
}

export function emptyCounts(): RequestCounts {
  return { calls: {}, sqsBilledRequests: 0, dynamoWriteUnits: 0, dynamoReadUnits: 0 };
}

/** Process-wide counter (one Lambda container, or the whole local runner). */
export const requestCounts: RequestCounts = emptyCounts();

/** Resets the process-wide counter (benchmarks, tests). */
export function resetRequestCounts(): void {
  Object.assign(requestCounts, emptyCounts());
}

/** One AWS request as the code built it: the stage that sent it, its operation and its input. */
export interface AwsCall {
  /** the stage whose handler was running (`inStage`), undefined outside any handler */
  stage: string | undefined;
  service: string;
  /** the SDK command without its suffix: `PutItem`, `SendMessageBatch` */
  operation: string;
  input: Record<string, unknown>;
}

// The local runner runs every stage in one process, so the stage is carried by the async context.
const stageScope = new AsyncLocalStorage<string>();
const watchers = new Set<(call: AwsCall) => void>();

// One handler invocation's own requests (the deployed usage record, shared/stages/usage.ts): the
// local runner runs invocations side by side, so the process-wide counter cannot tell them apart.
const invocationScope = new AsyncLocalStorage<RequestCounts>();

/** Runs `fn` with its AWS requests also counted into `counts`. */
export function countedInto<T>(counts: RequestCounts, fn: () => T): T {
  return invocationScope.run(counts, fn);
}

/** Runs `fn` with every AWS request it makes attributed to `stage`. */
export function inStage<T>(stage: string, fn: () => T): T {
  return stageScope.run(stage, fn);
}

/**
 * Runs `fn` outside any stage and invocation, as a Lambda invocation starts in a sandbox of its
 * own. The local runner starts a handler from inside another's work (a kick from the extract
 * stage): without this, the new invocation's requests outside its own count (its usage record)
 * went to the caller's count as well, and a usage record counted them twice.
 */
export function asNewInvocation<T>(fn: () => T): T {
  return stageScope.exit(() => invocationScope.exit(fn));
}

/** Calls `watcher` with every request the counting clients send; returns the unsubscribe. */
export function watchAwsCalls(watcher: (call: AwsCall) => void): () => void {
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

const SQS_BILLING_CHUNK = 64 * 1024;

function sqsPayloadBytes(input: Record<string, unknown>): number {
  if (typeof input.MessageBody === 'string') return Buffer.byteLength(input.MessageBody);
  if (Array.isArray(input.Entries)) {
    return input.Entries.reduce(
      (sum: number, e: { MessageBody?: string }) => sum + Buffer.byteLength(e.MessageBody ?? ''),
      0,
    );
  }
  return 0;
}

const DDB_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const DDB_READS = new Set(['GetItem', 'Query', 'Scan']);

/** Estimated units of one DynamoDB call: [write, read]. */
export function dynamoUnits(op: string, input: Record<string, unknown>): [number, number] {
  if (DDB_WRITES.has(op)) return [1, 0];
  if (DDB_READS.has(op)) return [0, input.ConsistentRead ? 1 : 0.5];
  const items = (m: unknown, field: 'Keys' | null) =>
    Object.values((m ?? {}) as Record<string, unknown>).reduce<number>((n, v) => {
      const list = field ? (v as Record<string, unknown[]>)[field] : v;
      return n + (Array.isArray(list) ? list.length : 0);
    }, 0);
  if (op === 'BatchWriteItem') return [items(input.RequestItems, null), 0];
  if (op === 'BatchGetItem') return [0, items(input.RequestItems, 'Keys') / 2];
  return [0, 0];
}

function receivedBytes(output: { Messages?: { Body?: string }[] } | undefined): number {
  return (output?.Messages ?? []).reduce((sum, m) => sum + Buffer.byteLength(m.Body ?? ''), 0);
}

/** Adds what one answered request costs to `counts` (its call was counted when it was sent). */
function tally(
  counts: RequestCounts,
  service: string,
  op: string,
  input: Record<string, unknown>,
  output: unknown,
): void {
  if (service === 'DynamoDB') {
    const [w, r] = dynamoUnits(op, input);
    counts.dynamoWriteUnits += w;
    counts.dynamoReadUnits += r;
  }
  if (service === 'SQS') {
    // Billed per 64 KB of payload, what is sent and what a receive returns.
    const sent = sqsPayloadBytes(input);
    const received = receivedBytes(output as { Messages?: { Body?: string }[] });
    counts.sqsBilledRequests += Math.max(1, Math.ceil(Math.max(sent, received) / SQS_BILLING_CHUNK));
  }
}

/** The middleware: counts after the call is built, so retries by the SDK count once per attempt. */
// biome-ignore lint/suspicious/noExplicitAny: one middleware fits every client's input/output types
export function countingMiddleware(service: string): Pluggable<any, any> {
  return {
    applyToStack(stack) {
      stack.add(
        (next, context) => async (args) => {
          const op = String((context as { commandName?: string }).commandName ?? 'Unknown').replace(
            /Command$/,
            '',
          );
          const key = `${service}.${op}`;
          const own = invocationScope.getStore();
          const targets = own ? [requestCounts, own] : [requestCounts];
          for (const counts of targets) counts.calls[key] = (counts.calls[key] ?? 0) + 1;
          if (watchers.size > 0) {
            const call = { stage: stageScope.getStore(), service, operation: op, input: args.input };
            for (const w of watchers) w(call);
          }
          const result = await next(args);
          for (const counts of targets) {
            tally(counts, service, op, args.input as Record<string, unknown>, result.output);
          }
          return result;
        },
        { step: 'initialize', name: `trawlCount${service}`, override: true },
      );
    },
  };
}
