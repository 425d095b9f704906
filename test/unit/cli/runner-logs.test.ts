/**
 * The local runner invokes every stage in one process, as Lambda would invoke separate functions.
 * With one logger for the process, a stage that logged after another stage had been invoked went
 * out named after that other stage (a fetch warning as `trawl-local-index`). Each stage now logs
 * through a logger of its own (shared/stages/logger.ts `stageLogger`). The real runner, the real
 * loggers, middy and Powertools' context middleware as the handlers use them
 * (shared/stages/handler-kit.ts); the handlers only log.
 */
import assert from 'node:assert/strict';
import { Console } from 'node:console';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { LocalRunner } from '../../../cli/runner.ts';
import { createAwsClients } from '../../../shared/aws/clients.ts';
import { resetContainerDeps } from '../../../shared/stages/deps.ts';
import { scheduledHandler } from '../../../shared/stages/handler-kit.ts';
import { logToStderr, stageLogger } from '../../../shared/stages/logger.ts';
import type { StageName } from '../../../shared/topology.ts';

const STAGES: StageName[] = ['seed', 'fetch', 'extract', 'index', 'refresh'];

describe('local runner: log lines name the stage that wrote them', () => {
  it('a stage that logs after another stage was invoked keeps its own function name and request id', async () => {
    const lines: Record<string, unknown>[] = [];
    const out = new PassThrough();
    out.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    // A container's environment (no AWS request is made: the handlers only log).
    Object.assign(process.env, {
      TRAWL_BUCKET: 'logs-test',
      TRAWL_CRAWL: 'logs-test',
      TRAWL_QUEUES: JSON.stringify({ frontier: {} }),
      TRAWL_URLS_TABLE: 'logs-test-urls',
      TRAWL_HOSTS_TABLE: 'logs-test-hosts',
    });
    resetContainerDeps();
    // the console the CLI gives the loggers (stderr), pointed at this stream
    logToStderr();
    const capture = new Console({ stdout: out, stderr: out });
    for (const stage of STAGES) (stageLogger(stage) as unknown as { console: Console }).console = capture;

    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => {
      release = r;
    });
    // The stages' own wrapper (middy, Powertools' context middleware, the stage's deps); the
    // fetch invocation logs before and after an index invocation.
    const run = (stage: StageName) =>
      scheduledHandler(stage, async (deps) => {
        deps.log.error(`${stage} starts`);
        if (stage === 'fetch') await released;
        deps.log.error(`${stage} ends`);
        return {};
      });
    const handlers = Object.fromEntries(STAGES.map((s) => [s, run(s)])) as Record<
      StageName,
      ReturnType<typeof run>
    >;
    const clients = createAwsClients({ endpoint: 'http://127.0.0.1:9', count: false });
    const queueUrls = { frontier: {}, extract: '', index: '' } as unknown as ConstructorParameters<
      typeof LocalRunner
    >[0]['queueUrls'];
    const runner = new LocalRunner({ handlers, queueUrls, monitor: clients, pollers: clients });

    const fetch = runner.invoke('fetch', {});
    // the index stage is invoked (and logs) while the fetch invocation is under way
    while (!lines.some((l) => l.message === 'fetch starts')) await new Promise((r) => setTimeout(r, 5));
    await runner.invoke('index', {});
    release();
    await fetch;
    await new Promise((r) => setImmediate(r));

    const named = Object.fromEntries(lines.map((l) => [l.message, [l.function_name, l.function_request_id]]));
    assert.equal(named['fetch starts']?.[0], 'trawl-local-fetch');
    assert.equal(named['index ends']?.[0], 'trawl-local-index');
    assert.deepEqual(named['fetch ends'], named['fetch starts'], 'the fetch line after the index invocation');
    assert.notEqual(named['fetch ends']?.[1], named['index ends']?.[1]);
  });
});
