/**
 * `trawl status -c FILE [--wait] [--timeout S]`: a crawl's state, deployed (its stack's outputs) or
 * run by `trawl crawl` here (the embedded emulator, or the SDK's endpoint); and `trawl crawl|refresh`
 * on a deployed crawl (they invoke its functions instead of running the stages in this process).
 */

import { InvokeCommand } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients.ts';
import { createHostTable } from '../../shared/aws/host-table.ts';
import { type ProvisionedResources, provision } from '../../shared/aws/provision.ts';
import { lastRunRecords } from '../../shared/aws/run-records.ts';
import { laterTime } from '../../shared/crawl/state/url-state.ts';
import { ConfigError } from '../../shared/errors.ts';
import { lastRunKey, scheduleRunKey, seedRunKey } from '../../shared/stages/handler-kit.ts';
import { namedQueues, type QueueUrls, resourceNames } from '../../shared/topology.ts';
import { loadConfigFile } from '../config-file.ts';
import { deployedResources, functionNames, loadDeployment, useDeployment } from '../deployment.ts';
import { commandRunning, resolveAwsEndpoint } from '../emulator.ts';
import { heldStatus } from '../held-hosts.ts';
import { eachState, openSession } from '../session.ts';
import { CommandFailed } from './deploy.ts';
import { listingSession, NoStateError, requireState } from './listing.ts';
import { warnStartUrls } from './start-urls.ts';

interface Depth {
  visible: number;
  inFlight: number;
}

export interface CrawlStatus {
  crawl: string;
  /** the CloudFormation stack; null for a crawl run by `trawl crawl` (no stack) */
  stack: string | null;
  endpoint: string | null;
  queues: Record<string, Depth>;
  deadLetters: Record<string, number>;
  urls: Record<string, number>;
  documents: number;
  /** when each EventBridge schedule last started its function (ISO), null before its first run */
  lastScheduleRuns: Record<'discovery' | 'fetchTick' | 'refresh', string | null>;
  /** the frontier and stage queues are empty and nothing is in flight */
  idle: boolean;
  /**
   * The hosts whose next request waits more than 10 s yet (Retry-After, silence, Crawl-delay
   * slots booked ahead), soonest first, at most 20 (`count`: all of them): why delayed work waits.
   */
  heldHosts: Awaited<ReturnType<typeof heldStatus>>;
}

/** Messages waiting in the crawl's dead-letter queues (frontier and stage), all told. */
export async function deadLetterCount(clients: AwsClients, dlqUrls: QueueUrls): Promise<number> {
  let n = 0;
  for (const [, url] of namedQueues(dlqUrls)) n += (await depth(clients, url)).visible;
  return n;
}

async function depth(clients: AwsClients, url: string): Promise<Depth> {
  const r = await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  const a = r.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Where the crawl's queues, tables and bucket are, as `readStatus` reports them. */
interface Located {
  crawl: string;
  stack: string | null;
  endpoint: string | null;
  resources: ProvisionedResources;
  clients: AwsClients;
}

/**
 * The deployed stack's resources when `trawl deploy` recorded one; else those `trawl crawl` made
 * where this folder's commands run (the embedded emulator, started if needed, or the SDK's
 * endpoint). A crawl with neither is a ConfigError (exit 2): nothing is created for it.
 */
async function locate(file: string): Promise<Located> {
  const config = loadConfigFile(file);
  const d = loadDeployment(config.name);
  if (d) {
    await useDeployment(d, file, config);
    const clients = createAwsClients({ count: false });
    return {
      crawl: d.crawl,
      stack: d.stackName,
      endpoint: d.endpoint,
      resources: deployedResources(d.outputs),
      clients,
    };
  }
  const endpoint = await resolveAwsEndpoint();
  const clients = createAwsClients({ count: false });
  const names = resourceNames(config.name);
  await requireState(clients, config.name, file);
  // The queues are not saved with the emulator's state: made again (empty) if it restarted.
  return { crawl: config.name, stack: null, endpoint, resources: await provision(clients, names), clients };
}

/**
 * One reading of a crawl's queues, URL states and documents. `states: false` leaves the URL
 * states and documents out (`urls` empty, `documents` 0) once the crawl has been seeded: counting
 * them reads every URL's item and manifest line, which `--wait` need not do every 2 s.
 */
export async function readStatus(file: string, opts: { states?: boolean } = {}): Promise<CrawlStatus> {
  const { crawl, stack, endpoint, resources, clients } = await locate(file);
  const queues: Record<string, Depth> = {};
  for (const [name, url] of namedQueues(resources.queueUrls)) queues[name] = await depth(clients, url);
  // The wake-up calls for URLs put back for politeness: a delayed one is work still to come.
  if (resources.queueUrls.wake) queues.wake = await depth(clients, resources.queueUrls.wake);
  const deadLetters: Record<string, number> = {};
  for (const [name, url] of namedQueues(resources.dlqUrls))
    deadLetters[name] = (await depth(clients, url)).visible;
  // Dead wake-up calls lose no URL (they wait in their queues for the fetch tick), but they say
  // the fetch function failed: shown, not redriven.
  if (resources.dlqUrls.wake) deadLetters.wake = (await depth(clients, resources.dlqUrls.wake)).visible;
  // A crawl run here reads its hosts' slots on its own clock: after a `refresh --now` a real-clock
  // session listed every host held by politeness until the moved time (helper-61).
  const session = await openSession(loadConfigFile(file), {
    resources,
    readOnly: true,
    ...(stack === null ? { localCrawl: true as const } : {}),
  });
  const hosts = createHostTable({ client: clients.ddb, tableName: resources.hostsTable });
  const heldHosts = await heldStatus(hosts, session.now());
  const lastRun = (stage: string) => hosts.getValue(scheduleRunKey(stage));
  let [discovery, fetchTick, refresh] = [
    await lastRun('seed'),
    await lastRun('fetch'),
    await lastRun('refresh'),
  ];
  const lastSeed = await hosts.getValue(seedRunKey);
  // A cycle a command started (`trawl deploy` and `trawl crawl` invoke the seed function, `trawl
  // refresh` the refresh function) is the last one too: status showed null after them, and
  // during a local `crawl --watch` until it ended (its run record is written then, helper-64).
  discovery = laterTime(discovery, lastSeed);
  refresh = laterTime(refresh, await hosts.getValue(lastRunKey('refresh')));
  if (stack === null) {
    // No schedules here: `trawl crawl` is the discovery cycle and `trawl refresh` the refresh cycle.
    const runs = await lastRunRecords(session.store);
    discovery ??= runs.findLast((r) => r.kind === 'crawl')?.startedAt ?? null;
    refresh ??= runs.findLast((r) => r.kind === 'refresh')?.startedAt ?? null;
  }
  // No URL known and no discovery cycle yet: the seed function has not run (an asynchronous
  // invoke), so not idle. A crawl whose URLs were all forgotten (clear-errors) has had one.
  const seeded = discovery !== null || lastSeed !== null;
  const urls: Record<string, number> = {};
  let documents = 0;
  if (opts.states !== false || !seeded) {
    for await (const item of eachState(session)) {
      const kind = item.state === 'error' && item.errorKind ? `error/${item.errorKind}` : item.state;
      urls[kind] = (urls[kind] ?? 0) + 1;
      if (item.docBulk && item.docLine !== undefined && item.docLine !== null) documents++;
    }
  }
  const idle =
    (documents + Object.keys(urls).length > 0 || seeded) &&
    Object.values(queues).every((q) => q.visible === 0 && q.inFlight === 0);
  return {
    crawl,
    stack,
    endpoint,
    queues,
    deadLetters,
    urls,
    documents,
    lastScheduleRuns: { discovery, fetchTick, refresh },
    idle,
    heldHosts,
  };
}

/**
 * Prints the status as one JSON line. --wait: until the queues are empty and nothing is in flight in
 * three readings in a row (a function may be between receiving and sending), else exit 1 at --timeout.
 * The readings in between count no URL states (a million-URL crawl's states take minutes to read);
 * the one printed does.
 */
export async function statusCommand(opts: {
  config: string;
  wait?: boolean;
  timeout?: string;
}): Promise<void> {
  const timeoutS = opts.timeout === undefined ? 600 : Number(opts.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new ConfigError(`--timeout ${opts.timeout}: not a positive number of seconds`);
  const deadline = Date.now() + timeoutS * 1000;
  let s = await firstStatus(
    opts.config,
    opts.wait === true ? Math.min(deadline, Date.now() + START_GRACE_MS) : 0,
    opts.wait !== true,
  );
  const print = async () =>
    process.stdout.write(`${JSON.stringify(opts.wait ? await readStatus(opts.config) : s)}\n`);
  let quiet = s.idle ? 1 : 0;
  let unattendedSince: number | null = null;
  while (opts.wait && quiet < 3) {
    if (Date.now() > deadline) {
      await print();
      throw new CommandFailed(`status --wait: crawl "${s.crawl}" still busy after ${timeoutS} s`);
    }
    // A crawl run here moves only while a `trawl crawl` (or refresh) runs it: with work queued and
    // none running, waiting is for nothing (an interrupted crawl waited the whole --timeout, then
    // said "still busy").
    if (s.stack === null && !s.idle && (await commandRunning(s.crawl)) === false) {
      unattendedSince ??= Date.now();
      if (Date.now() - unattendedSince >= UNATTENDED_MS) {
        await print();
        throw new CommandFailed(
          `status --wait: crawl "${s.crawl}" has work queued but no trawl command is running it here; "trawl crawl -c ${opts.config}" resumes it`,
        );
      }
    } else unattendedSince = null;
    await new Promise((r) => setTimeout(r, 2000));
    s = await readStatus(opts.config, { states: false });
    quiet = s.idle ? quiet + 1 : 0;
  }
  await print();
  if (opts.wait) await warnStartUrls(await listingSession(opts.config));
}

/**
 * How long `--wait` waits for a crawl started a moment ago in another terminal to create its
 * resources (its first reading found none and exited 2 while the crawl went on).
 */
const START_GRACE_MS = 60_000;
/**
 * How long `--wait` watches a crawl run here with work queued and no command running it before it
 * says so (a command starting in another terminal marks the crawl before it queues anything).
 */
const UNATTENDED_MS = 10_000;

async function firstStatus(file: string, waitUntil: number, states: boolean): Promise<CrawlStatus> {
  let said = false;
  for (;;) {
    try {
      return await readStatus(file, { states });
    } catch (err) {
      if (!(err instanceof NoStateError) || Date.now() > waitUntil) throw err;
      if (!said)
        process.stderr.write('trawl: status --wait: no state yet, waiting for the crawl to start…\n');
      said = true;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** `trawl crawl|refresh` on a deployed crawl: invokes its seed or refresh function. False if not deployed. */
export async function runDeployed(file: string, kind: 'crawl' | 'refresh'): Promise<boolean> {
  const config = loadConfigFile(file);
  const d = loadDeployment(config.name);
  if (!d) return false;
  await useDeployment(d, file, config);
  const fn = functionNames(d.outputs)[kind === 'crawl' ? 'seed' : 'refresh'];
  const r = await createAwsClients({ count: false }).lambda.send(
    new InvokeCommand({ FunctionName: fn, InvocationType: 'RequestResponse' }),
  );
  if (r.FunctionError) {
    throw new CommandFailed(`${fn} failed: ${Buffer.from(r.Payload ?? new Uint8Array()).toString('utf8')}`);
  }
  process.stdout.write(`invoked ${fn} on ${d.stackName}; follow with: trawl status -c ${file} --wait\n`);
  return true;
}
