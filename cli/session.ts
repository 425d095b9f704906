/**
 * A crawl's local session: resources from the topology, the config in S3, the stage
 * environment set, the real handlers loaded, and the runner that drives them.
 */
import { type AwsClients, createAwsClients } from '../shared/aws/clients.ts';
import { createHostTable, type HostTable } from '../shared/aws/host-table.ts';
import { createPageStore, type PageStore } from '../shared/aws/page-store.ts';
import { type ProvisionedResources, type ProvisionOptions, provision } from '../shared/aws/provision.ts';
import { linesUnder } from '../shared/aws/refresh-manifest.ts';
import { createUrlTable, type UrlTable } from '../shared/aws/url-table.ts';
import { createWorkQueues } from '../shared/aws/work-queues.ts';
import { type CrawlConfig, configFormat, storedConfig } from '../shared/config.ts';
import { applyMapping } from '../shared/crawl/extract/build-document.ts';
import { byCodeUnits, groupSorted } from '../shared/crawl/state/sorted-runs.ts';
import { recordUrl, resolveRecords, type StateRecord } from '../shared/crawl/state/url-state.ts';
import { CONFIG_KEY } from '../shared/layout.ts';
import { containerDeps, resetContainerDeps } from '../shared/stages/deps.ts';
import { fetchMemoryMb } from '../shared/stages/fetch-memory.ts';
import { setLogLevel } from '../shared/stages/logger.ts';
import { RUN_SLOTS } from '../shared/stages/politeness/host-turns.ts';
import { ROBOTS_TTL_MS } from '../shared/stages/politeness/robots-cache.ts';
import { type PlannedAction, planRefreshCycle } from '../shared/stages/refresh-stage.ts';
import { namedQueues, resourceNames, type StageName } from '../shared/topology.ts';
import type { CrawlDocument, UrlItem, UrlTask } from '../shared/types.ts';
import { type ExternalSortOptions, externalSort } from './external-sort.ts';
import { sendFrontierTasks, taskOf } from './frontier.ts';
import { type AnyHandler, LocalRunner, type RunnerOptions, scheduledEvent } from './runner.ts';

export interface CrawlSession {
  config: CrawlConfig;
  resources: ProvisionedResources;
  clients: AwsClients;
  monitor: AwsClients;
  urls: UrlTable;
  /** the crawl's hosts table (politeness slots, the robots.txt cache, policies, usage hours) */
  hosts: HostTable;
  store: PageStore;
  runner: LocalRunner;
  /** the crawl's clock (epoch ms): the real one, or where `refresh --now` moved a local crawl */
  now: () => number;
}

export interface SessionOptions extends ProvisionOptions {
  onTick?: RunnerOptions['onTick'];
  fetchConcurrency?: number;
  /** `trawl refresh --now`: every stage's clock is shifted to this time */
  now?: Date;
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** run the discovery and refresh schedules as timers while draining (`trawl crawl --watch`) */
  schedules?: RunnerOptions['schedules'];
  /** a deployed stack's resources (from its outputs): nothing is created */
  resources?: ProvisionedResources;
  /**
   * `resources` are a crawl run here, not a stack's (`trawl status` locates them itself): the
   * crawl's own clock, which a `refresh --now` moved, not the real one
   */
  localCrawl?: true;
  /** a look, not a run (`--dry-run`, the listings): the crawl's clock is read, not moved, nothing cleared */
  readOnly?: boolean;
}

async function loadHandlers(): Promise<Record<StageName, AnyHandler>> {
  const [seed, fetch, extract, index, refresh] = await Promise.all([
    import('../functions/seed/handler.ts'),
    import('../functions/fetch/handler.ts'),
    import('../functions/extract/handler.ts'),
    import('../functions/index/handler.ts'),
    import('../functions/refresh/handler.ts'),
  ]);
  return {
    seed: seed.handler as AnyHandler,
    fetch: fetch.handler as AnyHandler,
    extract: extract.handler as AnyHandler,
    index: index.handler as AnyHandler,
    refresh: refresh.handler as AnyHandler,
  };
}

/** Opens (and creates if missing) the resources of `config.name` and prepares the handlers. */
export async function openSession(config: CrawlConfig, opts: SessionOptions = {}): Promise<CrawlSession> {
  const clients = createAwsClients();
  const monitor = createAwsClients({ count: false });
  const names = resourceNames(config.name);
  const resources = opts.resources ?? (await provision(monitor, names, opts));
  const store = createPageStore({ client: monitor.s3, bucket: resources.bucket });
  // A deployed crawl's config is the one `trawl deploy` uploaded (demo URLs swapped): not overwritten.
  if (!opts.resources) await store.putJson(CONFIG_KEY, storedConfig(config));
  const hosts = createHostTable({ client: monitor.ddb, tableName: resources.hostsTable });
  // A deployed crawl's functions run on the real clock: `--now` only shifts this process
  // (`refresh --dry-run --now`), and is not kept.
  const offset =
    opts.resources && !opts.localCrawl
      ? opts.now
        ? opts.now.getTime() - Date.now()
        : 0
      : await crawlClockOffset(hosts, config.name, opts.now, !opts.readOnly);
  // The same variables the CDK stack gives each function (infra/), so the handlers run unchanged.
  Object.assign(process.env, {
    TRAWL_CRAWL: config.name,
    TRAWL_BUCKET: resources.bucket,
    TRAWL_URLS_TABLE: resources.urlsTable,
    TRAWL_HOSTS_TABLE: resources.hostsTable,
    TRAWL_QUEUES: JSON.stringify(resources.queueUrls),
    TRAWL_CONFIG_KEY: CONFIG_KEY,
    TRAWL_CONFIG_FORMAT: configFormat(),
    TRAWL_CLOCK_OFFSET_MS: String(offset),
  });
  delete process.env.TRAWL_FETCH_FUNCTION;
  resetContainerDeps();
  setLogLevel(opts.logLevel ?? 'WARN');
  const runner = new LocalRunner({
    handlers: await loadHandlers(),
    queueUrls: resources.queueUrls,
    monitor,
    pollers: clients,
    onTick: opts.onTick,
    fetchConcurrency: opts.fetchConcurrency ?? config.fetch.maxInvocations,
    memoryMb: { fetch: fetchMemoryMb(config.fetch) },
    schedules: opts.schedules,
  });
  const urls = createUrlTable({ client: monitor.ddb, tableName: resources.urlsTable });
  if (!opts.resources && !opts.readOnly) await clearClockTravel(hosts, config, Date.now() + offset, offset);
  return { config, resources, clients, monitor, urls, hosts, store, runner, now: () => Date.now() + offset };
}

/** The hosts-table value that holds a local crawl's clock offset (ms ahead of the real clock). */
const CLOCK_KEY = 'clock-offset';
/** The hosts-table value set once a crawl on the real clock was cleared of what lay ahead of it. */
const CLEARED_KEY = 'clock-cleared';

/**
 * A local crawl's clock never goes back. `trawl refresh --now T` runs the stages at T; every run
 * after it (a plain `trawl crawl` too) goes on from there, T plus the time since. Going back put
 * the fetches of a later run behind the states recorded at T: the index stage dropped them as
 * stale (a changed page kept its old document), pages fetched then were due before the refresh
 * cursor and never refreshed, and the hosts' slots were booked until T. An earlier `--now` is
 * taken as the crawl's own time, with a warning.
 */
async function crawlClockOffset(
  hosts: HostTable,
  crawl: string,
  at: Date | undefined,
  keep: boolean,
): Promise<number> {
  const stored = Number((await hosts.getValue(CLOCK_KEY)) ?? 0) || 0;
  const asked = at ? at.getTime() - Date.now() : 0;
  // (A --now repeated a little later, as a resumed `refresh --now T` is, is no news.)
  if (at && stored - asked > 60_000) {
    const clock = new Date(Date.now() + stored).toISOString();
    const why = stored > 0 ? ' (an earlier --now moved it there)' : ' (the real time: no --now has moved it)';
    process.stderr.write(
      `trawl: warning: crawl "${crawl}" is at ${clock} on its own clock${why}; it does not go back, so this run goes on from there, not from ${at.toISOString()}\n`,
    );
  }
  if (keep && asked > stored) await hosts.putValue(CLOCK_KEY, String(asked));
  return Math.max(asked, stored);
}

/**
 * A run with its clock moved ahead (`trawl refresh --now 2030-…`) books the hosts' politeness
 * slots and caches their robots.txt at that time. A later run on the real clock found every host
 * busy until then and fetched nothing (a `trawl crawl` after the README's own `refresh --now`
 * example waited without end). Before a local run, what lies further ahead of its clock than any
 * booking can (the Retry-After cap or a run of capped Crawl-delays, a robots.txt's 24 h) goes.
 */
async function clearClockTravel(hosts: HostTable, config: CrawlConfig, now: number, offset: number) {
  // What lies ahead was left by a moved clock: a crawl whose clock never moved is scanned once
  // (a crawl from before the offset was kept may hold such leftovers), then no more (the scan
  // reads every item of the hosts table, duplicate digests included: one a document).
  if (offset === 0 && (await hosts.getValue(CLEARED_KEY)) !== null) return;
  const slack = 60_000;
  const { retryAfterMs, crawlDelayMs } = config.limits;
  await hosts.clearAhead({
    slot: now + Math.max(retryAfterMs, RUN_SLOTS * crawlDelayMs) + slack,
    lease: now + slack,
    robots: now + ROBOTS_TTL_MS + slack,
  });
  if (offset === 0) await hosts.putValue(CLEARED_KEY, new Date(now).toISOString());
}

/**
 * Seeds and drains: one crawl (or discovery cycle). Returns what the seed left out (start URLs
 * the config rejects, robots.txt `Sitemap:` lines out of scope or over limits.sitemapsPerSite).
 */
export async function crawl(session: CrawlSession): Promise<{ rejected: string[] }> {
  const seeded = (await session.runner.invoke('seed', scheduledEvent('Start Crawl'))) as
    | { rejected?: unknown }
    | undefined;
  await session.runner.drain();
  const rejected = Array.isArray(seeded?.rejected) ? seeded.rejected.map(String) : [];
  return { rejected };
}

/** One refresh cycle as the schedule runs it, then drains. */
export async function refresh(session: CrawlSession): Promise<unknown> {
  const result = await session.runner.invoke('refresh', scheduledEvent());
  await session.runner.drain();
  return result;
}

/** `trawl refresh --dry-run`: what one cycle would refresh and delete, changing nothing. */
export async function planRefresh(_session: CrawlSession): Promise<PlannedAction[]> {
  return planRefreshCycle(containerDeps());
}

/** Every table item and manifest line, tagged: the input of the state resolution. */
async function* stateRecords(session: Pick<CrawlSession, 'urls' | 'store'>): AsyncGenerator<StateRecord> {
  for await (const line of linesUnder(session.store)) yield { line };
  for await (const item of session.urls.scan()) yield { item };
}

const byRecordUrl = (a: StateRecord, b: StateRecord) => byCodeUnits(recordUrl(a), recordUrl(b));
// The listings' order (as it always was): the default locale's collation of the URLs.
const collator = new Intl.Collator();
const byUrl = (a: { url: string }, b: { url: string }) => collator.compare(a.url, b.url);

/**
 * Every known URL's current state (its table item and its newest manifest line, resolved by
 * url-state.ts), forgotten URLs left out, in code-unit order of URL. Bounded memory: the records
 * are sorted by URL on disk (cli/external-sort.ts), so one URL's records are held at a time.
 */
export async function* eachState(
  session: Pick<CrawlSession, 'urls' | 'store'>,
  opts?: ExternalSortOptions,
): AsyncGenerator<UrlItem> {
  const sorted = externalSort(stateRecords(session), byRecordUrl, opts);
  for await (const records of groupSorted(sorted, recordUrl)) {
    const state = resolveRecords(records);
    if (state) yield state;
  }
}

/** Every known URL's current state, sorted by URL as the listings print it; bounded memory. */
export function currentStates(
  session: Pick<CrawlSession, 'urls' | 'store'>,
  opts?: ExternalSortOptions,
): AsyncGenerator<UrlItem> {
  return externalSort(eachState(session, opts), byUrl, opts);
}

interface DocPointer {
  bulk: string;
  line: number;
}

/** The documents the pointers name, reading each bulk once (the pointers come sorted by bulk). */
async function* readDocs(
  store: PageStore,
  pointers: AsyncIterable<DocPointer>,
): AsyncGenerator<CrawlDocument> {
  let bulk: string | undefined;
  let lines: CrawlDocument[] = [];
  for await (const p of pointers) {
    if (p.bulk !== bulk) [bulk, lines] = [p.bulk, await store.getLines<CrawlDocument>(p.bulk)];
    const doc = lines[p.line];
    if (doc) yield doc;
  }
}

async function* docPointers(states: AsyncIterable<UrlItem>): AsyncGenerator<DocPointer> {
  for await (const s of states) {
    if (s.docBulk && s.docLine !== undefined && s.docLine !== null)
      yield { bulk: s.docBulk, line: s.docLine };
  }
}

const byPointer = (a: DocPointer, b: DocPointer) => byCodeUnits(a.bulk, b.bulk) || a.line - b.line;

/** The current index, sorted by URL: every URL with a document, read through its bulk pointer. */
export async function* documents(
  session: CrawlSession,
  opts?: ExternalSortOptions,
): AsyncGenerator<Record<string, unknown>> {
  const pointers = externalSort(docPointers(eachState(session, opts)), byPointer, opts);
  for await (const doc of externalSort(readDocs(session.store, pointers), byUrl, opts)) {
    yield applyMapping(doc, session.config.index.mapping);
  }
}

/** Every known URL in the `trawl urls` shape (docs/documents.md). */
export async function* urlStates(session: CrawlSession): AsyncGenerator<Record<string, unknown>> {
  for await (const i of currentStates(session)) yield urlLine(i);
}

/**
 * One URL's current state (`trawl explain --state`), or undefined when the crawl does not know
 * it: its table item and its manifest lines, read in one pass that keeps only that URL's records.
 * It read and sorted every URL's (the whole listing of `trawl urls`) to answer for one: 13.9 s and
 * 594 MB at 44,000 URLs against 0.35 s without `--state` (an audit).
 */
export async function stateOf(
  session: Pick<CrawlSession, 'urls' | 'store'>,
  url: string,
): Promise<Record<string, unknown> | undefined> {
  const records: StateRecord[] = [];
  const item = (await session.urls.getMany([url])).get(url);
  if (item) records.push({ item });
  for await (const line of linesUnder(session.store)) if (line.url === url) records.push({ line });
  const state = resolveRecords(records);
  return state ? urlLine(state) : undefined;
}

/** A URL's line of `trawl urls`. */
function urlLine(i: UrlItem): Record<string, unknown> {
  return {
    url: i.url,
    state: i.state,
    errorKind: i.errorKind ?? null,
    httpStatus: i.httpStatus ?? null,
    depth: i.depth ?? null,
    queue: i.queue ?? null,
    lastFetched: i.lastFetched ?? null,
    temporaryErrors: i.temporaryErrors ?? 0,
    ...(i.errorCode ? { errorCode: i.errorCode } : {}),
    ...(i.note ? { note: i.note } : {}),
    // A sitemap or feed (read for its entries, never indexed): named, as it is judged as one.
    ...(i.kind === 'sitemap' ? { kind: 'sitemap' } : {}),
    ...(i.duplicateOf ? { duplicateOf: i.duplicateOf } : {}),
    // Where it was found (a link's page, a sitemap, a redirecting URL): why it is in the crawl.
    ...(i.foundOn ? { foundOn: i.foundOn } : {}),
    ...(i.nextRefreshAt ? { nextRefreshAt: i.nextRefreshAt } : {}),
    // Adaptive refresh (refresh.adaptive or a rule's refresh bounds): the interval in ms.
    ...(i.refreshInterval ? { refreshInterval: i.refreshInterval } : {}),
  };
}

/**
 * Moves every dead-lettered message back to the queue it failed in (what `aws sqs
 * start-message-move-task` does, on any endpoint; `WorkQueues.moveAll`). Returns how many moved,
 * by queue (`frontier/<source>`, `extract`, `index`).
 */
export async function redriveDeadLetters(session: CrawlSession): Promise<Record<string, number>> {
  const { queueUrls, dlqUrls } = session.resources;
  const queues = createWorkQueues({ client: session.monitor.sqs });
  const mains = new Map(namedQueues(queueUrls));
  const moved: Record<string, number> = {};
  for (const [name, dlq] of namedQueues(dlqUrls)) {
    const main = mains.get(name);
    const n = main ? await queues.moveAll(dlq, main) : 0;
    if (n > 0) moved[name] = n;
  }
  return moved;
}

/**
 * Seed 002 "Clear Error Cache": forgets every URL in error state and queues it again, so the next
 * crawl fetches it (a deployed crawl's functions at once). Forgotten only, it was never found
 * again while the pages linking to it answered 304: a 304 carries no links.
 */
export async function clearErrors(session: CrawlSession): Promise<number> {
  const errors: UrlItem[] = [];
  for await (const item of session.urls.scan()) if (item.state === 'error') errors.push(item);
  // A URL that kept its document through temporary errors keeps it: forgotten, its document left
  // the index with no deletion in the change feed (a search index following the feed kept it for
  // good). Its error is cleared and it is fetched again, conditionally, with its state, as a
  // known start URL is: a 404 then deletes the document through the feed, a 200 updates it.
  const withDoc = errors.filter((i) => i.docBulk);
  const cleared: UrlItem[] = withDoc.map((i) => ({
    ...i,
    state: 'pending',
    errorKind: null,
    errorCode: null,
    temporaryErrors: 0,
    note: null,
    httpStatus: null,
  }));
  if (cleared.length > 0) await session.urls.putStates(cleared);
  const again: UrlTask[] = cleared.map((i) => ({
    ...taskOf(i),
    prev: { ...i, stored: 'table' },
    conditional: { etag: i.etag ?? undefined, lastModified: i.lastModified ?? undefined },
  }));
  const forgotten = errors.filter((i) => !i.docBulk);
  for (const item of forgotten) await session.urls.forget(item.url);
  // A fresh pending claim each (what the extract stage writes for a new link), then the work. On
  // the crawl's clock: a claim older than the URL's state lines (a crawl `refresh --now` moved
  // ahead) left the URL showing its old error.
  const now = new Date(session.now()).toISOString();
  const claimed = await session.urls.claim(forgotten.map(taskOf), `clear-errors#${now}`, now);
  await sendFrontierTasks(session.monitor, session.resources.queueUrls, [...claimed, ...again]);
  // The stages' warm caches must not remember the forgotten URLs as known.
  resetContainerDeps();
  return errors.length;
}
