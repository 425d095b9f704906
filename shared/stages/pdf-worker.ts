/**
 * PDF text extraction in a worker thread, so that limits.pdfTimeMs and limits.pdfMemoryMb hold
 * within a page: pdf.js parses a page's content stream without yielding to the event loop (10
 * million text operators in a 100 KB PDF took 16 s on one page), so a check between pages cannot
 * stop it; terminating the thread can. The worker streams each page's text back, so a stopped
 * extraction keeps the pages read. One worker is kept between PDFs (its start-up, loading pdf.js,
 * is paid once per container) and replaced when it was stopped.
 *
 * The worker runs this same module, told by workerData to serve PDF jobs: under tsx its .ts file;
 * in a Lambda bundle pdf-worker.mjs, this module bundled on its own beside the handler's bundle
 * (infra/constructs/stage-function.ts), else the handler's bundle itself (import.meta.url).
 */
import { existsSync } from 'node:fs';
import { isMainThread, type MessagePort, parentPort, Worker, workerData } from 'node:worker_threads';
import {
  collapse,
  type PdfLimitKey,
  type PdfReader,
  type PdfReadLimits,
  type PdfText,
  pdfToText,
} from '../crawl/extract/pdf-text.ts';
import { CrawlError } from '../errors.ts';

const ROLE = 'trawl-pdf-worker';

interface PdfJob {
  bytes: Uint8Array;
  maxPages: number;
}

type PdfReply =
  | { kind: 'ready' }
  | { kind: 'opened'; pages: number }
  | { kind: 'page'; text: string }
  | { kind: 'done'; result: PdfText }
  | { kind: 'failed'; message: string };

/** A PDF reader backed by a worker thread; `close` ends the idle worker. */
export interface PdfWorkerReader {
  read: PdfReader;
  close(): Promise<void>;
}

/** What the worker has told so far: the page count and each page's text. */
interface Progress {
  total: number;
  pages: string[];
}

interface Held {
  worker: Worker;
  heapMb: number;
  /** the worker has loaded pdf.js and said so: its start-up is not counted in limits.pdfTimeMs */
  ready: boolean;
}

/** Creates a reader that runs each PDF in a (reused) worker thread, stopped at the limits. */
export function createPdfWorkerReader(entry: URL = workerEntry()): PdfWorkerReader {
  let idle: Held | null = null;
  const take = (heapMb: number): Held => {
    const held = idle?.heapMb === heapMb ? idle : null;
    if (idle && !held) void idle.worker.terminate();
    idle = null;
    if (held) {
      held.worker.ref();
      return held;
    }
    const execArgv = workerExecArgv(entry);
    const worker = new Worker(entry, {
      workerData: { role: ROLE },
      ...(execArgv ? { execArgv } : {}),
      // the heap of pdf.js and the document; exceeding it ends the thread, not the invocation
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    });
    const fresh: Held = { worker, heapMb, ready: false };
    // a kept worker that died while idle is not handed the next PDF
    worker.once('exit', () => {
      if (idle === fresh) idle = null;
    });
    return fresh;
  };
  const giveBack = (held: Held) => {
    held.worker.unref(); // an idle worker must not keep a CLI or test process alive
    if (idle) void held.worker.terminate();
    else idle = held;
  };
  return {
    read: async (bytes, limits) => {
      // nothing left of the invocation's time: not started (nor the kept worker stopped)
      if (limits.leftMs !== undefined && limits.leftMs <= 0)
        return partial(
          { total: 0, pages: [] },
          'limit-pdf-time',
          timeReason({ total: 0, pages: [] }, limits),
        );
      return runJob(take(limits.maxHeapMb), bytes, limits, giveBack);
    },
    async close() {
      const held = idle;
      idle = null;
      if (held) await held.worker.terminate();
    },
  };
}

/** This module's own bundle when one lies beside the handler's (half the start-up), else this module. */
function workerEntry(): URL {
  const self = new URL(import.meta.url);
  if (self.pathname.endsWith('.ts')) return self;
  const own = new URL('./pdf-worker.mjs', self);
  return existsSync(own) ? own : self;
}

/**
 * A .ts entry needs tsx in the worker too: `node --import tsx` passes it on in execArgv, but the
 * `trawl` command registers tsx in its main thread only (bin/trawl.mjs), which workers do not inherit.
 */
function workerExecArgv(entry: URL): string[] | undefined {
  const inherited = process.execArgv; // undefined: the worker inherits them (passing them is refused)
  if (!entry.pathname.endsWith('.ts') || inherited.some((a) => a.includes('tsx'))) return undefined;
  return [...inherited, '--import', import.meta.resolve('tsx')];
}

/** Posts one PDF to the worker and settles on its answer, the time limit or the worker's death. */
function runJob(
  held: Held,
  bytes: Uint8Array,
  limits: PdfReadLimits,
  giveBack: (held: Held) => void,
): Promise<PdfText> {
  const { worker } = held;
  const read: Progress = { total: 0, pages: [] };
  return new Promise<PdfText>((resolve, reject) => {
    const settle = (end: () => void) => {
      clearTimeout(timer);
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      end();
    };
    const stop = (limit: PdfLimitKey, reason: string) =>
      settle(() => {
        void worker.terminate();
        resolve(partial(read, limit, reason));
      });
    let timer: NodeJS.Timeout | undefined;
    const startClock = () => {
      held.ready = true;
      const ms = Math.min(limits.maxMs, limits.leftMs ?? limits.maxMs);
      timer = setTimeout(() => stop('limit-pdf-time', timeReason(read, limits)), ms);
    };
    const onMessage = (reply: PdfReply) => {
      if (reply.kind === 'ready') startClock();
      else if (reply.kind === 'opened') read.total = reply.pages;
      else if (reply.kind === 'page') read.pages.push(reply.text);
      else
        settle(() => {
          giveBack(held);
          if (reply.kind === 'done') resolve(reply.result);
          else reject(new CrawlError(reply.message));
        });
    };
    const onError = (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY')
        return stop('limit-pdf-memory', memoryReason(read, limits.maxHeapMb));
      settle(() => reject(new CrawlError(`PDF worker failed: ${error.message}`, { cause: error })));
    };
    const onExit = (code: number) =>
      settle(() => reject(new CrawlError(`PDF worker exited (code ${code}) before answering`)));
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
    if (held.ready) startClock();
    const copy = new Uint8Array(bytes); // transferred: the caller's bytes stay usable
    worker.postMessage({ bytes: copy, maxPages: limits.maxPages } satisfies PdfJob, [copy.buffer]);
  });
}

function partial(read: Progress, limit: PdfLimitKey, reason: string): PdfText {
  return { text: collapse(read.pages.join(' ')), title: null, pages: read.total, cut: { limit, reason } };
}

function timeReason(read: Progress, limits: PdfReadLimits): string {
  const done = read.total ? `${read.pages.length} of ${read.total} pages read` : 'the PDF not opened';
  const left = limits.leftMs ?? limits.maxMs;
  if (left < limits.maxMs)
    return `${done} within the time left of the extract invocation (${Math.max(0, Math.round(left))} ms, under limits.pdfTimeMs): the extraction was stopped`;
  return `${done} within limits.pdfTimeMs (${limits.maxMs} ms): the extraction was stopped mid-page`;
}

function memoryReason(read: Progress, heapMb: number): string {
  const done = read.total ? `${read.pages.length} of ${read.total} pages read` : 'the PDF not opened';
  return `${done} before the extraction ran out of limits.pdfMemoryMb (${heapMb} MB) and was stopped`;
}

/** The worker's side: one job at a time, each page's text sent as soon as it is read. */
function servePdfJobs(port: MessagePort): void {
  port.on('message', async (job: PdfJob) => {
    const progress = {
      opened: (pages: number) => port.postMessage({ kind: 'opened', pages } satisfies PdfReply),
      page: (text: string) => port.postMessage({ kind: 'page', text } satisfies PdfReply),
    };
    // no clock here: the owner stops the thread at limits.pdfTimeMs
    const limits = { maxPages: job.maxPages, maxMs: Number.POSITIVE_INFINITY, clock: () => 0 };
    try {
      const result = await pdfToText(job.bytes, limits, progress);
      port.postMessage({ kind: 'done', result } satisfies PdfReply);
    } catch (error) {
      port.postMessage({ kind: 'failed', message: (error as Error).message } satisfies PdfReply);
    }
  });
  port.postMessage({ kind: 'ready' } satisfies PdfReply);
}

if (!isMainThread && parentPort && (workerData as { role?: string } | null)?.role === ROLE) {
  servePdfJobs(parentPort);
}
