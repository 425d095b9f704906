/**
 * Counts every AWS API call a crawl makes, by service and operation, through an SDK
 * middleware: the benchmark prices a run from these counts (docs/design-facts.md prices).
 */
import type { Pluggable } from '@smithy/types';

export interface RequestCounts {
  /** "SQS.SendMessageBatch" → calls */
  calls: Record<string, number>;
  /** SQS requests as billed: each 64 KB of payload is one request */
  sqsBilledRequests: number;
}

export function emptyCounts(): RequestCounts {
  return { calls: {}, sqsBilledRequests: 0 };
}

/** Process-wide counter (one Lambda container, or the whole local runner). */
export const requestCounts: RequestCounts = emptyCounts();

/** Resets the process-wide counter (benchmarks, tests). */
export function resetRequestCounts(): void {
  Object.assign(requestCounts, emptyCounts());
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

function receivedBytes(output: { Messages?: { Body?: string }[] } | undefined): number {
  return (output?.Messages ?? []).reduce((sum, m) => sum + Buffer.byteLength(m.Body ?? ''), 0);
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
          requestCounts.calls[key] = (requestCounts.calls[key] ?? 0) + 1;
          const result = await next(args);
          if (service === 'SQS') {
            // Billed per 64 KB of payload, what is sent and what a receive returns.
            const sent = sqsPayloadBytes(args.input as Record<string, unknown>);
            const received = receivedBytes(result.output as { Messages?: { Body?: string }[] });
            requestCounts.sqsBilledRequests += Math.max(
              1,
              Math.ceil(Math.max(sent, received) / SQS_BILLING_CHUNK),
            );
          }
          return result;
        },
        { step: 'initialize', name: `trawlCount${service}`, override: true },
      );
    },
  };
}
