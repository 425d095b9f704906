/**
 * The benchmark's meter on the crawl's own SDK clients: DynamoDB capacity units (ddb-units.ts),
 * SQS requests as billed (each 64 KB of payload, sent or received, is one request), and the time
 * each stage's invocations spend waiting on AWS (here: on the emulator), attributed through
 * AsyncLocalStorage. Call counts by operation come from shared/aws/request-counter.ts.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import type { AnyHandler } from '../cli/runner.ts';
import type { CrawlSession } from '../cli/session.ts';
import type { AwsClients } from '../shared/aws/clients.ts';
import { containerDeps } from '../shared/stages/deps.ts';
import type { StageName } from '../shared/topology.ts';
import { DynamoUnitModel } from './ddb-units.ts';

const SQS_CHUNK = 64 * 1024;

interface Invocation {
  stage: string;
  inflight: number;
  since: number;
  busyMs: number;
}

export interface MeterReport {
  /** "SQS.ReceiveMessage" → billed requests (payload chunks in and out) */
  sqsBilled: Record<string, number>;
  /** "ReceiveMessage@frontier-user" → billed requests */
  sqsByQueue: Record<string, number>;
  /** stage → ms its invocations had at least one AWS call in flight */
  awsWaitMs: Record<string, number>;
  dynamo: DynamoUnitModel['tally'];
}

function sqsBytes(
  op: string,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): number {
  const body = (m: { MessageBody?: string; Body?: string }) =>
    Buffer.byteLength(m.MessageBody ?? m.Body ?? '');
  if (op === 'SendMessageBatch')
    return ((input.Entries as { MessageBody?: string }[]) ?? []).reduce((n, e) => n + body(e), 0);
  if (op === 'SendMessage') return body(input as { MessageBody?: string });
  if (op === 'ReceiveMessage')
    return ((output?.Messages as { Body?: string }[]) ?? []).reduce((n, m) => n + body(m), 0);
  return 0;
}

/** Meters every AWS call the handlers and the event-source pollers make in one session. */
export class AwsMeter {
  private readonly als = new AsyncLocalStorage<Invocation>();
  private readonly dynamo = new DynamoUnitModel();
  private readonly sqsBilled: Record<string, number> = {};
  private readonly sqsByQueue: Record<string, number> = {};
  private readonly awsWaitMs: Record<string, number> = {};
  readonly errors: string[] = [];

  /** Installs on the container deps the handlers use and on the runner's pollers; wraps the handlers. */
  install(session: CrawlSession): void {
    this.instrument(session.clients);
    // The runner keeps its handlers in a private field: wrapping them attributes AWS time per stage.
    const handlers = (session.runner as unknown as { opts: { handlers: Record<StageName, AnyHandler> } }).opts
      .handlers;
    for (const stage of Object.keys(handlers) as StageName[]) {
      // Each stage has its own container deps (deps.ts), as each function has on Lambda.
      this.instrument(containerDeps(stage).clients);
      const inner = handlers[stage];
      handlers[stage] = (event, context) => {
        const inv: Invocation = { stage, inflight: 0, since: 0, busyMs: 0 };
        return this.als
          .run(inv, () => inner(event, context))
          .finally(() => {
            this.awsWaitMs[stage] = (this.awsWaitMs[stage] ?? 0) + inv.busyMs;
          });
      };
    }
  }

  report(): MeterReport {
    return {
      sqsBilled: { ...this.sqsBilled },
      sqsByQueue: { ...this.sqsByQueue },
      awsWaitMs: { ...this.awsWaitMs },
      dynamo: this.dynamo.tally,
    };
  }

  private instrument(clients: AwsClients): void {
    clients.sqs.middlewareStack.use(this.middleware('SQS'));
    clients.ddbRaw.middlewareStack.use(this.middleware('DynamoDB'));
    clients.s3.middlewareStack.use(this.middleware('S3'));
  }

  // biome-ignore lint/suspicious/noExplicitAny: one middleware fits every client's input/output types
  private middleware(service: string): any {
    return {
      applyToStack: (stack: { add: (mw: unknown, opts: unknown) => void }) => {
        stack.add(
          // biome-ignore lint/suspicious/noExplicitAny: see above
          (next: any, context: any) => async (args: any) => {
            const op = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
            const inv = this.als.getStore();
            this.enter(inv);
            let output: Record<string, unknown> | undefined;
            let failed = false;
            try {
              const res = await next(args);
              output = res.output as Record<string, unknown>;
              return res;
            } catch (err) {
              failed = (err as { name?: string }).name === 'ConditionalCheckFailedException';
              throw err;
            } finally {
              this.leave(inv);
              this.safeAccount(service, op, args.input as Record<string, unknown>, output, failed);
            }
          },
          { step: 'build', name: `trawlBenchMeter${service}`, override: true },
        );
      },
    };
  }

  /** The meter never breaks the crawl it measures: a figure it cannot read is noted, not thrown. */
  private safeAccount(...args: Parameters<AwsMeter['account']>): void {
    try {
      this.account(...args);
    } catch (err) {
      this.errors.push(`${args[0]}.${args[1]}: ${(err as Error).message}`);
    }
  }

  private account(
    service: string,
    op: string,
    input: Record<string, unknown>,
    output: Record<string, unknown> | undefined,
    failed: boolean,
  ): void {
    if (service === 'DynamoDB') this.dynamo.record(op, input, output, failed);
    if (service === 'SQS') {
      const billed = Math.max(1, Math.ceil(sqsBytes(op, input, output) / SQS_CHUNK));
      this.sqsBilled[`SQS.${op}`] = (this.sqsBilled[`SQS.${op}`] ?? 0) + billed;
      const queue = String(input.QueueUrl ?? '').replace(/^.*\/trawl-[^/]*?-(?=[a-z_]+(-dlq)?$)/, '');
      const key = `${op}@${queue}`;
      this.sqsByQueue[key] = (this.sqsByQueue[key] ?? 0) + billed;
    }
  }

  private enter(inv: Invocation | undefined): void {
    if (!inv) return;
    if (inv.inflight++ === 0) inv.since = performance.now();
  }

  private leave(inv: Invocation | undefined): void {
    if (!inv) return;
    if (--inv.inflight === 0) inv.busyMs += performance.now() - inv.since;
  }
}
