/**
 * An extract batch and its Lambda timeout. A batch of 10 full messages (2,000 pages of a fast
 * crawl's backlog) outlived the 60 s timeout; middy answered with an AbortError, the handler went
 * on in the background (locally, and on Lambda in the container's next invocation) and sent its
 * claims' tasks, and so did each retry: a 30,000-page crawl fetched pages twice, a 50,000-URL
 * sitemap three times (helper-54). The real extract handler (middy, its early timeout) on real
 * extract messages that the real fetch stage wrote from a loopback site, on the emulator.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSBatchResponse } from 'aws-lambda';
import { lambdaContext, sqsEvent } from '../../cli/runner.ts';
import { openSession } from '../../cli/session.ts';
import { handler } from '../../functions/extract/handler.ts';
import { parseConfig } from '../../shared/config.ts';
import { containerDeps, depsFromEnv, type StageDeps } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { DEADLINE_MARGIN_MS } from '../../shared/stages/handler-kit.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import { useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';
import { urlTask } from '../helpers/tasks.ts';

const LINKS = 2_000;

describe('an extract batch and its timeout', () => {
  const env = useEmulatorAndSite({ routes: { '/robots.txt': { status: 404, body: '' } } });

  before(() => {
    const links = Array.from({ length: LINKS }, (_, i) => `<a href="/p/${i}">page ${i}</a>`).join(' ');
    env.site.route('/many', {
      body: `<html><head><title>Many</title></head><body><p>${links}</p></body></html>`,
    });
    for (let i = 0; i < 700; i++)
      env.site.route(`/bulk/${i}`, {
        body: `<html><head><title>Bulk ${i}</title></head><body><p>Bulk page ${i}.</p></body></html>`,
      });
    for (const name of ['a', 'b', 'c'])
      env.site.route(`/${name}`, {
        body: `<html><head><title>${name}</title></head><body><p>Page ${name}. <a href="/${name}/next">next</a></p></body></html>`,
      });
  });

  /** A crawl whose extract queue holds one message for each of `paths`, written by the fetch stage. */
  async function fetched(paths: string[]): Promise<StageDeps> {
    await openSession(
      parseConfig({
        name: uniqueCrawlName('extract-deadline'),
        startUrls: [`${env.site.url}/`],
        fetch: { allowPrivateNetworks: true },
      }),
    );
    const deps = depsFromEnv();
    // One fetch invocation a page: each ends with its own extract message.
    for (const path of paths) {
      await sendTasks(deps, [urlTask(`${env.site.url}${path}`)]);
      await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    }
    return deps;
  }

  async function received(deps: StageDeps, n: number) {
    const messages = await deps.queues.receive<unknown>(deps.queueUrls.extract, n, 1);
    assert.equal(messages.length, n, 'the extract messages the fetch stage wrote');
    return sqsEvent(deps.queueUrls.extract, messages);
  }

  async function queued(deps: StageDeps, url: string): Promise<number> {
    const d = await deps.queues.depth(url);
    return d.visible + d.delayed + d.inFlight;
  }

  /** Messages in every frontier source (links go to `discovered`, start URLs to `user`). */
  async function inFrontier(deps: StageDeps): Promise<number> {
    let n = 0;
    for (const url of Object.values(deps.queueUrls.frontier)) n += await queued(deps, url);
    return n;
  }

  it('starts no record past its deadline: the others go back to the queue at once, as they were', async () => {
    const deps = await fetched(['/a', '/b', '/c']);
    const event = await received(deps, 3);
    // 1 ms of the invocation left before the deadline the stage keeps (DEADLINE_MARGIN_MS).
    const end = Date.now() + DEADLINE_MARGIN_MS + 1;
    const context = {
      ...lambdaContext('extract'),
      getRemainingTimeInMillis: () => Math.max(0, end - Date.now()),
    };
    await sleep(5);
    const res = (await handler(event, context)) as SQSBatchResponse;
    assert.deepEqual(res.batchItemFailures, [], 'none failed: the two not started were put back');
    const back = await deps.queues.depth(deps.queueUrls.extract);
    assert.equal(back.visible + back.delayed, 2, 'two records back in the extract queue');
    assert.equal(await queued(deps, deps.queueUrls.index), 1, "the first record's outcomes");
    assert.equal(await inFrontier(deps), 1, "the first page's link");
    // The two put back are whole: a later invocation with time extracts them.
    const rest = await received(deps, 2);
    const again = (await handler(rest, lambdaContext('extract'))) as SQSBatchResponse;
    assert.deepEqual(again.batchItemFailures, []);
    assert.equal(await inFrontier(deps), 3, "every page's link queued once");
  });

  it('sends outcomes as the batch goes: a send that fails late fails only the records since the last one', async () => {
    const deps = await fetched([]);
    await sendTasks(
      deps,
      Array.from({ length: 700 }, (_, i) => urlTask(`${env.site.url}/bulk/${i}`)),
    );
    await runFetchStage(deps, { deadline: Date.now() + 60_000 });
    const d = await deps.queues.depth(deps.queueUrls.extract);
    const event = await received(deps, Math.min(10, d.visible));
    assert.ok(event.Records.length >= 4, `the fetch round's extract messages: ${event.Records.length}`);
    // SQS refuses the batch's second send to the index queue (a fault the emulator cannot be made
    // to give: a mock of that one call).
    let sends = 0;
    containerDeps('extract').clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { QueueUrl?: string };
        const name = (context as { commandName?: string }).commandName ?? '';
        if (name.startsWith('SendMessage') && input.QueueUrl === deps.queueUrls.index && ++sends === 2)
          throw new Error('SQS unavailable (injected)');
        return next(args);
      },
      { step: 'initialize', name: 'failSecondIndexSend' },
    );
    const res = (await handler(event, lambdaContext('extract'))) as SQSBatchResponse;
    const failed = res.batchItemFailures.map((f) => f.itemIdentifier);
    const ids = event.Records.map((r) => r.messageId);
    assert.ok(failed.length > 0 && failed.length < ids.length, `failed ${failed.length} of ${ids.length}`);
    assert.deepEqual(failed, ids.slice(ids.length - failed.length), 'the records after the last send');
    const outcomes = await indexOutcomes(deps);
    assert.ok(outcomes >= 400, `the outcomes sent before: ${outcomes}`);
  });

  it('a handler past its timeout sends none of its claims on (the retry does, once)', async () => {
    const deps = await fetched(['/many']);
    const event = await received(deps, 1);
    // The Lambda timeout 300 ms away: middy's early timeout fires while the 2,000 links are claimed
    // (the emulator takes a few hundred conditional writes a second).
    const end = Date.now() + 300;
    const context = {
      ...lambdaContext('extract'),
      getRemainingTimeInMillis: () => Math.max(0, end - Date.now()),
    };
    const started = Date.now();
    await assert.rejects(handler(event, context), /AbortError/);
    // The handler goes on in the background; it must send nothing once it is done.
    for (let quiet = 0; quiet < 10; ) {
      await sleep(500);
      quiet = (await deps.urls.getMany([`${env.site.url}/p/${LINKS - 1}`])).size > 0 ? quiet + 1 : 0;
      if (Date.now() - started > 120_000) break;
    }
    assert.equal(await inFrontier(deps), 0, 'the timed-out handler sent no task');
    assert.equal(await queued(deps, deps.queueUrls.index), 0, 'nor any outcome');
    // Its retry (the same message again) sends each claimed link once.
    const retry = await deps.queues.receive<unknown>(deps.queueUrls.extract, 1, 0);
    assert.equal(retry.length, 0, 'the message is still leased (it comes back after its visibility timeout)');
    const res = (await handler(event, lambdaContext('extract'))) as SQSBatchResponse;
    assert.deepEqual(res.batchItemFailures, []);
    const tasks = (
      await Promise.all(Object.values(deps.queueUrls.frontier).map((u) => frontierTasks(deps, u)))
    ).flat();
    assert.equal(tasks.length, LINKS, 'every link once');
    assert.equal(new Set(tasks).size, LINKS);
  });
});

/** The bodies of every message in the queue (received and left leased). */
async function allBodies<T>(deps: StageDeps, url: string): Promise<T[]> {
  const bodies: T[] = [];
  for (;;) {
    const batch = await deps.queues.receive<T>(url, 10, 0, 120);
    if (batch.length === 0) return bodies;
    for (const m of batch) if (m.body !== null) bodies.push(m.body);
  }
}

/** The URLs of every task in the queue. */
async function frontierTasks(deps: StageDeps, url: string): Promise<string[]> {
  const bodies = await allBodies<{ tasks?: { url: string }[] }>(deps, url);
  return bodies.flatMap((b) => (b.tasks ?? []).map((t) => t.url));
}

/** How many outcomes the index queue's messages carry. */
async function indexOutcomes(deps: StageDeps): Promise<number> {
  const bodies = await allBodies<{ outcomes?: unknown[] }>(deps, deps.queueUrls.index);
  return bodies.reduce((n, b) => n + (b.outcomes?.length ?? 0), 0);
}
