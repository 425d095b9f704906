/**
 * A loopback site served from a worker thread: its own event loop, so a request is logged when
 * it arrives even while the test's process is busy (the crawler runs in that process). Timing
 * assertions on requests (politeness gaps) need this; the in-process server logged a request late
 * when the crawler's thread was busy, and a gap looked shorter than it was on the wire. Routes
 * are data only (no handlers: functions do not cross threads).
 */
import { Worker } from 'node:worker_threads';
import type { RequestLog, Route } from './site-server.ts';

export type StaticRoute = Omit<Route, 'handler'>;

export interface WorkerSite {
  url: string;
  /** the requests so far, as the worker logged them */
  requests(): Promise<RequestLog[]>;
  close(): Promise<void>;
}

export async function startWorkerSite(routes: Record<string, StaticRoute>): Promise<WorkerSite> {
  const worker = new Worker(new URL('./site-worker-main.mjs', import.meta.url), { workerData: { routes } });
  /** The worker's next message of `type`, after sending it `request` when there is one. */
  const ask = <T>(type: string, request?: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: { type: string; value: T }) => {
        if (m.type !== type) return;
        worker.off('message', onMessage);
        worker.off('error', reject);
        resolve(m.value);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      if (request) worker.postMessage(request);
    });
  const url = await ask<string>('ready');
  return {
    url,
    requests: () => ask<RequestLog[]>('requests', 'requests'),
    close: async () => {
      await ask('closed', 'close');
      await worker.terminate();
    },
  };
}
