/**
 * The SQS adapter (shared/aws/work-queues.ts) called directly against the real emulator, on
 * queues made by provision(): sends sliced into batches of 10 and 1 MiB, receive / delete /
 * visibility, delays and their bounds, bodies over 256 KiB and over SQS's 1 MiB. No mocks: the
 * commands sent are counted by a pass-through wrapper.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createWorkQueues, type ReceivedMessage, type WorkQueues } from '../../../shared/aws/work-queues.ts';
import { type AdapterEnv, sharedAdapterEnv } from '../../helpers/adapter-env.ts';

/** A queue adapter that counts the commands it sends (all of them reach the emulator). */
function observed(client: SQSClient) {
  const sent: string[] = [];
  const proxy = {
    send: (cmd: { constructor: { name: string } }) => {
      sent.push(cmd.constructor.name);
      return client.send(cmd as never);
    },
  } as unknown as SQSClient;
  return { queues: createWorkQueues({ client: proxy }), sent };
}

/** Receives until `n` messages came or the deadline passed (SQS may answer with fewer than asked). */
async function receiveAll<T>(queues: WorkQueues, url: string, n: number, visibility = 60) {
  const got: ReceivedMessage<T>[] = [];
  const deadline = Date.now() + 15_000;
  while (got.length < n && Date.now() < deadline) {
    const batch = await queues.receive<T>(url, 10, 1, visibility);
    assert.ok(batch.length <= 10, 'at most 10 a receive');
    got.push(...batch);
  }
  return got;
}

describe('work queues adapter', () => {
  let env: AdapterEnv;
  let queues: WorkQueues;
  /** A queue of its own for each test: depths and receives are then the test's alone. */
  let queueNo = 0;
  const queue = () => {
    const { frontier, ...stages } = env.res.queueUrls;
    const all = [...Object.values(frontier), ...Object.values(stages)] as string[];
    const url = all[queueNo++];
    assert.ok(url, 'more tests than queues');
    return url;
  };
  before(async () => {
    env = await sharedAdapterEnv();
    queues = createWorkQueues({ client: env.clients.sqs });
  });

  it('send slices 25 messages into batches of 10; every body arrives once; delete empties the queue', async () => {
    const url = queue();
    const { queues: counted, sent } = observed(env.clients.sqs);
    await counted.send(
      url,
      Array.from({ length: 25 }, (_, i) => ({ body: { n: i, text: `é${i}` } })),
    );
    assert.deepEqual(sent, Array(3).fill('SendMessageBatchCommand'));
    const got = await receiveAll<{ n: number; text: string }>(queues, url, 25);
    assert.deepEqual(
      got.map((m) => m.body?.n).sort((a = 0, b = 0) => a - b),
      Array.from({ length: 25 }, (_, i) => i),
    );
    assert.ok(got.every((m) => m.body?.text === `é${m.body?.n}` && m.receiveCount === 1));
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 25, delayed: 0 });
    await queues.delete(
      url,
      got.map((m) => m.receiptHandle),
    );
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 0, delayed: 0 });
  });

  it('a lease ends early with visibility 0: the message is received again, counted twice', async () => {
    const url = queue();
    await queues.send(url, [{ body: { a: 1 } }, { body: { a: 2 } }]);
    const first = await receiveAll<{ a: number }>(queues, url, 2, 300);
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 2, delayed: 0 });
    await queues.changeVisibility(url, [{ receiptHandle: first[0]?.receiptHandle ?? '', seconds: 0 }]);
    const again = await receiveAll<{ a: number }>(queues, url, 1, 300);
    assert.deepEqual(again[0]?.body, first[0]?.body);
    assert.equal(again[0]?.receiveCount, 2);
    await queues.delete(url, [again[0]?.receiptHandle ?? '']);
    // A lease change on a deleted message is no error: the lease is over either way.
    await queues.changeVisibility(url, [{ receiptHandle: again[0]?.receiptHandle ?? '', seconds: 0 }]);
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 1, delayed: 0 });
  });

  it('delays: over 15 minutes is capped (not refused), negative is none, a part second rounds up', async () => {
    const url = queue();
    await queues.send(url, [
      { body: 'capped', delaySeconds: 5_000 },
      { body: 'now', delaySeconds: -3 },
    ]);
    assert.deepEqual(await queues.depth(url), { visible: 1, inFlight: 0, delayed: 1 });
    const now = await queues.receive<string>(url, 10, 0, 300);
    assert.deepEqual(
      now.map((m) => m.body),
      ['now'],
    );
    const sentAt = Date.now();
    await queues.send(url, [{ body: 'soon', delaySeconds: 0.2 }]);
    const soon = await receiveAll<string>(queues, url, 1, 300);
    assert.deepEqual(
      soon.map((m) => m.body),
      ['soon'],
    );
    // 0.2 s became 1 s: SQS takes whole seconds (a lower bound, with room for the emulator's clock).
    assert.ok(Date.now() - sentAt >= 950, `delayed ${Date.now() - sentAt} ms`);
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 2, delayed: 1 });
  });

  it('bodies over 256 KiB go through whole; batches stay under 1 MiB of payload', async () => {
    const url = queue();
    const big = (i: number) => ({ body: { i, pad: 'p'.repeat(300 * 1024) } });
    const { queues: counted, sent } = observed(env.clients.sqs);
    await counted.send(url, [big(0), big(1), big(2), big(3), big(4)]);
    assert.equal(sent.length, 2, 'three of ~300 KiB fit in one batch, then two');
    const got = await receiveAll<{ i: number; pad: string }>(queues, url, 5);
    assert.deepEqual(got.map((m) => m.body?.i).sort(), [0, 1, 2, 3, 4]);
    assert.ok(got.every((m) => m.body?.pad.length === 300 * 1024));
  });

  it('a body over 1 MiB is refused with a clear error before anything of the call is sent', async () => {
    const url = queue();
    const small = Array.from({ length: 12 }, (_, i) => ({ body: { i } }));
    const huge = { body: { pad: 'h'.repeat(1024 * 1024) } };
    await assert.rejects(queues.send(url, [...small, huge]), {
      name: 'CrawlError',
      message: /message 12 is 1048\d{3} bytes, over SQS's 1048576-byte limit/,
    });
    assert.deepEqual(await queues.depth(url), { visible: 0, inFlight: 0, delayed: 0 }, 'nothing sent');
  });

  it('moveAll (a DLQ redrive): every body as it was, non-JSON too, in batches under 1 MiB; the source emptied', async () => {
    // `trawl redrive` sent a DLQ's messages 10 to a batch: large extract messages broke the 1 MiB limit.
    const [from, to] = [queue(), queue()];
    await queues.send(
      from,
      [0, 1, 2, 3].map((i) => ({ body: { i, pad: 'p'.repeat(300 * 1024) } })),
    );
    await env.clients.sqs.send(new SendMessageCommand({ QueueUrl: from, MessageBody: 'not json {' }));
    const { queues: counted, sent } = observed(env.clients.sqs);
    assert.equal(await counted.moveAll(from, to), 5);
    assert.ok(sent.filter((c) => c === 'SendMessageBatchCommand').length >= 2, sent.join(' '));
    assert.deepEqual(await queues.depth(from), { visible: 0, inFlight: 0, delayed: 0 });
    const bodies: string[] = [];
    for (let i = 0; i < 20 && bodies.length < 5; i++) {
      const r = await env.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: to, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      bodies.push(...(r.Messages ?? []).map((m) => m.Body ?? ''));
    }
    assert.equal(bodies.filter((b) => b === 'not json {').length, 1);
    assert.deepEqual(
      bodies
        .filter((b) => b !== 'not json {')
        .map((b) => JSON.parse(b).i)
        .sort(),
      [0, 1, 2, 3],
    );
    assert.equal(await queues.moveAll(from, to), 0);
  });

  it('a body that is not JSON is received as null, not thrown', async () => {
    const url = queue();
    await env.clients.sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'not json {' }));
    const [m] = await receiveAll<unknown>(queues, url, 1);
    assert.equal(m?.body, null);
    assert.ok(m?.receiptHandle);
  });
});
