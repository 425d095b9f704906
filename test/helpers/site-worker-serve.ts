/** The server in the worker of site-worker.ts: serves its routes and answers `requests` and `close`. */
import { parentPort, workerData } from 'node:worker_threads';
import { startSiteServer } from './site-server.ts';

const site = await startSiteServer({ routes: workerData.routes });
parentPort?.postMessage({ type: 'ready', value: site.url });
parentPort?.on('message', async (type: string) => {
  if (type === 'requests') parentPort?.postMessage({ type, value: site.requests });
  if (type === 'close') {
    await site.close();
    parentPort?.postMessage({ type: 'closed', value: null });
  }
});
