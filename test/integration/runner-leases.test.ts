/**
 * The local runner's stage leases on the real emulator: a batch whose handler is still running
 * is held (in flight, its lease renewed by the heartbeat), and `stop()` gives it back at once
 * (visible again, receivable by the next run) instead of after the queue's 360 s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LEASE_SECONDS, LocalRunner } from '../../cli/runner.ts';
import { openSession } from '../../cli/session.ts';
import { createWorkQueues } from '../../shared/aws/work-queues.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';

describe('runner leases', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  it('holds a running batch and gives it back at once on stop()', async () => {
    const session = await openSession(
      parseConfig({ name: uniqueCrawlName('lease'), startUrls: ['https://example.com/'] }),
    );
    const queues = createWorkQueues({ client: session.monitor.sqs });
    const url = session.resources.queueUrls.extract;
    await queues.send(url, [{ body: { bundle: 'pages/none.jsonl.gz', count: 0 } }]);
    let started = () => {};
    const handlerStarted = new Promise<void>((r) => {
      started = r;
    });
    let release = () => {};
    const never = () => {
      started();
      return new Promise<void>((r) => {
        release = r;
      });
    };
    const idle = async () => ({});
    const runner = new LocalRunner({
      handlers: { seed: idle, fetch: idle, extract: never, index: idle, refresh: idle },
      queueUrls: session.resources.queueUrls,
      monitor: session.monitor,
      pollers: session.clients,
    });
    const drained = runner.drain();
    await handlerStarted;
    const held = await queues.depth(url);
    assert.deepEqual([held.visible, held.inFlight], [0, 1], 'the batch is held while its handler runs');
    await runner.stop();
    const back = await queues.depth(url);
    assert.deepEqual([back.visible, back.inFlight], [1, 0], 'given back at once');
    const again = await queues.receive(url, 10, 0, LEASE_SECONDS);
    assert.equal(again.length, 1);
    assert.equal(again[0]?.receiveCount, 2);
    release();
    await drained;
  });
});
