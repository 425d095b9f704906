/**
 * The extract stage: reads fetched pages (inline or a page bundle), decides each page's outcome, enqueues new links
 * exactly once per crawl (read before write, then a conditional put), and hands the outcomes
 * to the index stage. Each SQS record succeeds or fails on its own (ReportBatchItemFailures).
 */
import { randomUUID } from 'node:crypto';
import { unpackLines } from '../aws/page-store.ts';
import { chunkBySize } from '../aws/work-queues.ts';
import type { CrawlConfig } from '../config.ts';
import type { PdfReader } from '../crawl/extract/pdf-text.ts';
import { mergeExamples } from '../crawl/page/page-kit.ts';
import { processPage } from '../crawl/page/page-outcome.ts';
import { createUrlDecider, type UrlDecider } from '../crawl/rules/decide.ts';
import { planContext, planOutcome, previousFromTasks } from '../crawl/state/index-plan.ts';
import { orphanGraceMs } from '../crawl/state/orphans.ts';
import { KEYS, PREFIXES } from '../layout.ts';
import { FUNCTIONS } from '../topology.ts';
import type {
  BatchResult,
  ChangeHint,
  CrawlDocument,
  ExtractMessage,
  FetchedPage,
  IndexMessage,
  PageOutcome,
  StageRecord,
  UrlTask,
} from '../types.ts';
import { sitemapsAgain, writeChangeHints } from './change-hints.ts';
import type { StageDeps } from './deps.ts';
import { kickFor } from './fetch-presence.ts';
import { syncForgotten } from './forget-epoch.ts';
import { type BatchTime, DEADLINE_MARGIN_MS } from './handler-kit.ts';
import { createPdfWorkerReader } from './pdf-worker.ts';
import { decidedUnder, sendTasks } from './send-tasks.ts';
import { reopenCapped, trapGate } from './trap-gate.ts';

/** An outcome larger than this goes to S3 instead of the SQS message (SQS bills per 64 KB, caps at 1 MiB). */
const SPILL_BYTES = 200 * 1024;
const OUTCOMES_PER_MESSAGE = 100;
/**
 * The outcomes a batch holds before it writes their documents and sends them on: a backlog's
 * batch of 10 full messages (2,000 pages) reached the index only at its end, 20 s later, so a
 * large crawl's progress said `indexed 220` while 24,000 pages were fetched, and a batch that
 * failed late lost all of them. A polite crawl's small batches are still one bulk (S3 PUTs).
 */
const OUTCOMES_HELD = 400;

let deciderCache: { config: CrawlConfig; decider: UrlDecider } | null = null;
function deciderFor(config: CrawlConfig): UrlDecider {
  if (deciderCache?.config !== config) deciderCache = { config, decider: createUrlDecider(config) };
  return deciderCache.decider;
}

/** One PDF worker thread per container, started at the first PDF and kept between invocations. */
const pdfReader = createPdfWorkerReader();
/**
 * The time an invocation may spend in PDFs: its Lambda timeout less the margin the other stages
 * keep for their writes. limits.pdfTimeMs bounds one PDF; this bounds a batch of many.
 */
const PDF_TIME_MS = FUNCTIONS.extract.timeoutSeconds * 1000 - DEADLINE_MARGIN_MS;

/** The PDF reader for one invocation: each PDF also stopped when the invocation's PDF time is spent. */
function invocationPdfReader(): PdfReader {
  // the Lambda timeout is real time, whatever clock the stage's deps keep
  const end = performance.now() + PDF_TIME_MS;
  return (bytes, limits) => pdfReader.read(bytes, { ...limits, leftMs: end - performance.now() });
}

/**
 * Processes a batch of extract messages. Past `time.deadline` it starts no more of them: they go
 * back to the queue as they were, to be taken at once by another invocation. A batch of 10 full
 * messages (2,000 pages of a fast crawl's backlog) outlived the 60 s timeout; the timed-out
 * handler went on in the background and sent its claims' tasks, and so did each retry (a 30,000
 * page crawl fetched pages twice, a 50,000-URL sitemap three times: helper-54).
 */
export async function runExtractStage(
  deps: StageDeps,
  records: StageRecord<ExtractMessage>[],
  time: Partial<BatchTime> = {},
): Promise<BatchResult> {
  const config = await deps.loadConfig();
  const decider = deciderFor(config);
  const result: BatchResult = { failedMessageIds: [], stats: {}, examples: {} };
  const readPdf = invocationPdfReader();
  let held: PageOutcome[] = [];
  // Records before `sent` have their outcomes sent; `started` records were taken up.
  let sent = 0;
  let started = 0;
  const send = async () => {
    // Timed out meanwhile: the invocation has failed already, its records are retried whole.
    time.signal?.throwIfAborted();
    await bulkDocuments(deps, config, held);
    await sendOutcomes(deps, held);
    held = [];
    sent = started;
  };
  try {
    for (const record of records) {
      // One record at least, whatever the time: a batch always moves on.
      if (started > 0 && outOfTime(time)) break;
      started++;
      try {
        held.push(...(await extractRecord(deps, { config, decider, readPdf }, record, result, time.signal)));
      } catch (err) {
        if (time.signal?.aborted) throw err;
        deps.log.error('extract record failed', { messageId: record.messageId, error: err as Error });
        result.failedMessageIds.push(record.messageId);
      }
      if (held.length >= OUTCOMES_HELD) await send();
    }
    await send();
  } catch (err) {
    if (time.signal?.aborted) throw err;
    // Without their outcomes the records are not done: those since the last send are retried
    // (claims are idempotent), with the ones not started.
    deps.log.error('sending outcomes failed', { error: err as Error });
    const retried = new Set([...result.failedMessageIds, ...records.slice(sent).map((r) => r.messageId)]);
    return { ...result, failedMessageIds: [...retried] };
  }
  await putBack(deps, records.slice(started), result);
  return result;
}

/** Whether a batch is past the time it may start another record in. */
function outOfTime(time: Partial<BatchTime>): boolean {
  return time.signal?.aborted === true || (time.deadline !== undefined && Date.now() > time.deadline);
}

/**
 * The records a batch did not start go back to the queue as new messages (a failed record would
 * wait out its visibility timeout, 6 minutes on AWS); failed if that send fails.
 */
async function putBack(
  deps: StageDeps,
  records: StageRecord<ExtractMessage>[],
  result: BatchResult,
): Promise<void> {
  const kept = records.filter((r) => r.body !== null);
  if (kept.length === 0) return;
  try {
    await deps.queues.send(
      deps.queueUrls.extract,
      kept.map((r) => ({ body: r.body })),
    );
    result.stats['put-back:deadline'] = (result.stats['put-back:deadline'] ?? 0) + kept.length;
  } catch (err) {
    deps.log.warn('putting records back failed; they are retried', { error: err as Error });
    result.failedMessageIds.push(...kept.map((r) => r.messageId));
  }
}

async function extractRecord(
  deps: StageDeps,
  { config, decider, readPdf }: { config: CrawlConfig; decider: UrlDecider; readPdf: PdfReader },
  record: StageRecord<ExtractMessage>,
  { stats, examples = {} }: BatchResult,
  signal?: AbortSignal,
): Promise<PageOutcome[]> {
  const source = pagesOf(record.body);
  if (!source) {
    deps.log.warn('dropping malformed extract message', { messageId: record.messageId });
    return [];
  }
  const pages = source.inline
    ? unpackLines<FetchedPage>(source.inline)
    : await deps.store.getLines<FetchedPage>(source.claimer);
  const now = new Date(deps.now()).toISOString();
  const outcomes: PageOutcome[] = [];
  const tasks = [];
  // known URLs fetched again without a claim (a page whose canonical is no document)
  const fallbacks: UrlTask[] = [];
  const changed: ChangeHint[] = [];
  for (const page of pages) {
    const r = await processPage(await withBody(deps, page), { config, decider, now, readPdf });
    outcomes.push(...r.outcomes);
    tasks.push(...r.tasks);
    fallbacks.push(...(r.again ?? []));
    changed.push(...(r.changed ?? []));
    for (const [reason, n] of Object.entries(r.rejected))
      stats[`rejected:${reason}`] = (stats[`rejected:${reason}`] ?? 0) + n;
    for (const [reason, n] of Object.entries(r.recorded ?? {}))
      stats[`recorded:${reason}`] = (stats[`recorded:${reason}`] ?? 0) + n;
    mergeExamples(examples, r.examples);
  }
  // The claimer names the pages: a redelivery of this record re-sends what it claimed before a crash.
  const gate = trapGate(deps, config.scope.traps, config.limits.sitemapsPerSite, stats);
  if (tasks.length > 0) await syncForgotten(deps);
  signal?.throwIfAborted();
  const fresh = await deps.urls.claim(tasks, source.claimer, now, {
    ...reachStamps(config, deps.now()),
    gate,
    reopen: reopenCapped(config.scope.traps, config.limits.sitemapsPerSite),
  });
  // Received before, or holding claims it made before: these pages may have been extracted already
  // (a crash before the delete, a message sent twice), so its outcomes may be copies.
  const again = (record.receiveCount ?? 1) > 1 || fresh.some((t) => t.redelivered);
  for (const o of outcomes) if (again || o.task.redelivered) o.redelivered = true;
  const reread = await sitemapsAgain(deps, config, tasks, fresh, now);
  // A handler past its timeout sends nothing on: the retry sends its claims (claimed by the same
  // claimer, they come back to it), and both sent them before: every page fetched twice.
  signal?.throwIfAborted();
  await sendTasks(deps, decidedUnder(config, [...fresh, ...reread, ...fallbacks]));
  if (reread.length > 0) stats['sitemap-reread'] = (stats['sitemap-reread'] ?? 0) + reread.length;
  if (fallbacks.length > 0)
    stats['canonical-fallback'] = (stats['canonical-fallback'] ?? 0) + fallbacks.length;
  await writeChangeHints(deps, changed, fresh, now, stats);
  deps.urls.markKnown(fresh.map((t) => t.url));
  const sent = [...fresh, ...reread, ...fallbacks];
  if (sent.length > 0) await kickFor(deps, config, sent);
  stats.discovered = (stats.discovered ?? 0) + fresh.length;
  return outcomes;
}

/**
 * The page with its body: a body past the fetch stage's spool size is an object of its own
 * (`bodyKey`), read here one page at a time. One that is gone (its bundle outlived the pages/
 * lifecycle) makes the page a temporary error, fetched again by the refresh cycle.
 */
async function withBody(deps: StageDeps, page: FetchedPage): Promise<FetchedPage> {
  if (page.bodyKey === undefined) return page;
  const key = page.bodyKey;
  const bytes =
    typeof key === 'string' && key.startsWith(PREFIXES.pages) ? await deps.store.getBytes(key) : null;
  if (bytes)
    return {
      ...page,
      body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    };
  const message = `the page's body (${String(key)}) is not in the crawl bucket any more`;
  return { ...page, body: '', error: { kind: 'temporary', code: 'body-lost', message } };
}

/** Where a message's pages are: inline (named by the message's id) or a bundle key; null when malformed. */
function pagesOf(body: ExtractMessage | null): { claimer: string; inline?: string } | null {
  if (!body) return null;
  if ('inline' in body && typeof body.inline === 'string' && typeof body.id === 'string')
    return { claimer: `inline/${body.id}`, inline: body.inline };
  if ('bundle' in body && typeof body.bundle === 'string') return { claimer: body.bundle };
  return null;
}

/**
 * Orphans (refresh.orphanGrace): every link and sitemap entry found stamps its known target as
 * reached, at most once per quarter of the grace, so a URL costs a few write units per grace
 * period and the refresh cycle can tell an orphan by its stamp alone.
 */
function reachStamps(config: CrawlConfig, now: number): { stampBefore?: string } {
  const grace = orphanGraceMs(config);
  if (grace === null) return {};
  return { stampBefore: new Date(now - grace / 4).toISOString() };
}

/**
 * Writes the batch's documents into one bulk (gzip JSON lines) and leaves the outcomes a pointer:
 * the index queue then carries states, not page text (SQS bills each 64 KB). A document the
 * delta check finds unchanged (the task carried the previous hash) is not written at all.
 */
async function bulkDocuments(deps: StageDeps, config: CrawlConfig, outcomes: PageOutcome[]): Promise<void> {
  const ctx = planContext(config, previousFromTasks(outcomes), deps.now());
  const key = KEYS.docBulk(deps.now(), randomUUID());
  const docs: CrawlDocument[] = [];
  for (const o of outcomes) {
    if (!o.doc) continue;
    const ref: NonNullable<PageOutcome['docRef']> = { hash: o.doc.hash, indexedAt: o.doc.indexedAt };
    if (planOutcome(o, ctx).writeDoc) {
      ref.bulk = key;
      ref.line = docs.length;
      docs.push(o.doc);
    }
    o.docRef = ref;
    delete o.doc;
  }
  if (docs.length > 0) await deps.store.putLines(key, docs);
}

async function sendOutcomes(deps: StageDeps, outcomes: PageOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const small: PageOutcome[] = [];
  const large: PageOutcome[] = [];
  for (const o of outcomes) (Buffer.byteLength(JSON.stringify(o)) > SPILL_BYTES ? large : small).push(o);
  const messages: { body: IndexMessage }[] = chunkBySize(small, OUTCOMES_PER_MESSAGE).map((chunk) => ({
    body: { outcomes: chunk },
  }));
  if (large.length > 0) {
    const key = KEYS.outcomeSpill(deps.now(), randomUUID());
    await deps.store.putLines(key, large);
    messages.push({ body: { spill: key } });
  }
  await deps.queues.send(deps.queueUrls.index, messages);
}
