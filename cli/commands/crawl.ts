/** `trawl crawl` and `trawl refresh`: run the local pipeline with live progress and a summary. */

import { createAwsClients } from '../../shared/aws/clients.ts';
import { requestCounts, resetRequestCounts } from '../../shared/aws/request-counter.ts';
import { saveRunRecord } from '../../shared/aws/run-records.ts';
import { createSecretResolver } from '../../shared/aws/secrets.ts';
import type { CrawlConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { resolveAuth, unannouncedCleartext } from '../../shared/net/auth.ts';
import { resolveProxy } from '../../shared/net/proxy.ts';
import { buildRunRecord } from '../../shared/report/run-record.ts';
import { stageExamples, stageStats } from '../../shared/stages/logger.ts';
import { pendingPolicyChange } from '../../shared/stages/refresh-review.ts';
import { loadConfigFile } from '../config-file.ts';
import { startDemoSite } from '../demo-site.ts';
import { deployedResources, loadDeployment, useDeployment } from '../deployment.ts';
import { markUnsaved, persistEmbeddedState, resolveAwsEndpoint } from '../emulator.ts';
import { heldLine } from '../held-hosts.ts';
import { createProgress } from '../progress.ts';
import { scheduleIntervals } from '../runner.ts';
import { type CrawlSession, crawl, openSession, planRefresh, refresh } from '../session.ts';
import { printSummary } from '../summary.ts';
import { isoTime } from '../time-option.ts';
import { CommandFailed } from './deploy.ts';
import { onEarlySignal, onStopSignal, reportResume, type StopRequest } from './interrupt.ts';
import { requireState } from './listing.ts';
import { demoSearch, prepareSearchSink } from './search.ts';
import { warnNothingFollowed, warnStartUrls } from './start-urls.ts';
import { deadLetterCount, runDeployed } from './status.ts';

interface RunOptions {
  config: string;
  demo?: boolean;
  progress?: boolean;
  now?: string;
  watch?: boolean;
  dryRun?: boolean;
}

async function prepare(
  opts: RunOptions,
  kind: 'crawl' | 'refresh',
): Promise<{ config: CrawlConfig; close: () => Promise<void> }> {
  let config = loadConfigFile(opts.config);
  let close = async () => {};
  if (opts.demo) {
    const demo = await startDemoSite(config);
    config = demo.config;
    close = demo.close;
    process.stderr.write(`trawl: serving the demo site (${demo.pages} pages) at ${demo.url}\n`);
  }
  try {
    await resolveAwsEndpoint();
    // Before the crawl's resources are made: an unset secret leaves nothing behind (a crawl that
    // never ran, which `trawl status` then showed).
    await checkSecrets(config, opts.config);
    // A refresh of a crawl never run here (a misspelt name) made its resources and refreshed
    // nothing, exit 0: now exit 2, as the listing commands do.
    if (kind === 'refresh') await requireState(createAwsClients({ count: false }), config.name, opts.config);
    config = await prepareSearchSink(config, { demo: opts.demo, file: opts.config });
  } catch (err) {
    await close(); // the demo site must not keep the process alive after the error
    throw err;
  }
  return { config, close };
}

async function run(opts: RunOptions, kind: 'crawl' | 'refresh'): Promise<void> {
  let now: Date | undefined;
  if (opts.now !== undefined) {
    now = isoTime(opts.now);
  }
  const early = onEarlySignal(kind);
  const { config, close } = await prepare(opts, kind).catch((err) => {
    early.dispose();
    throw err;
  });
  const progress = createProgress(opts.progress !== false && Boolean(process.stderr.isTTY));
  const started = Date.now();
  try {
    resetRequestCounts();
    for (const k of Object.keys(stageStats)) delete stageStats[k];
    for (const k of Object.keys(stageExamples)) delete stageExamples[k];
    const schedules = opts.watch ? scheduleIntervals(config) : undefined;
    await markUnsaved(config.name);
    const session = await openSession(config, { onTick: progress.tick, now, schedules });
    progress.explainWaits(() => heldLine(session.hosts, session.now()));
    const deadBefore = await deadLetterCount(session.monitor, session.resources.dlqUrls);
    const signals = onStopSignal(session.runner);
    early.dispose();
    if (kind === 'crawl') await reportResume(session);
    let watching = false;
    const work = (async () => {
      if (kind === 'crawl') {
        // What the seed left out was logged only, below the CLI's log level: said, as the start
        // URLs that led nowhere are (a robots.txt Sitemap: line on a host out of scope, …).
        // (A start URL the config rejects is said with those that led nowhere, at the end.)
        const { rejected } = await crawl(session);
        for (const line of rejected.filter((l) => l.includes(': robots.txt Sitemap: ')))
          process.stderr.write(`trawl: warning: not seeded: ${line}\n`);
      } else await refresh(session);
      if (opts.watch && !session.runner.halted) {
        // As the deployed stack does: discovery and refresh cycles on their schedules, until Ctrl-C.
        process.stderr.write('trawl: watching (discovery and refresh schedules running); Ctrl-C to stop\n');
        watching = true;
        await session.runner.watch(() => session.runner.halted);
      }
    })();
    let stop = await signals.settle(work);
    if (!stop) signals.finishing();
    progress.stop();
    // Ctrl-C is how --watch stops: with the frontier empty (no cycle under way) nothing was cut
    // short, and there is nothing to resume (it said "interrupted … Resume with", exit 130).
    if (stop && watching && (await session.runner.quiet())) {
      process.stderr.write(`trawl: stopped watching (${stop.signal}); the frontier is empty\n`);
      stop = null;
    }
    // A handler that failed on the config stopped the run: the config's error, exit 2.
    const failure = session.runner.configFailure;
    if (failure)
      throw new ConfigError(`${opts.config}: ${failure.message} (the run stopped; nothing is lost)`);
    const summary = { kind, config, session, seconds: (Date.now() - started) / 1000 };
    printSummary({
      ...summary,
      stats: stageStats,
      examples: stageExamples,
      counts: requestCounts,
      stoppedBy: stop?.signal,
      file: opts.config,
    });
    // A batch that failed every retry waits in a dead-letter queue: its URLs stay pending.
    const dead = (await deadLetterCount(session.monitor, session.resources.dlqUrls)) - deadBefore;
    if (dead > 0)
      process.stdout.write(
        `  dead-lettered this run (failed every retry, their URLs left pending): ${dead}\n`,
      );
    if (!stop && kind === 'crawl') {
      await warnStartUrls(session);
      await warnNothingFollowed(session, stageStats, opts.config);
      await noticePolicyChange(session, opts.config);
    }
    await recordRun(session, kind, started, Boolean(stop));
    if (stop) await finishInterrupted(session, stop, opts, kind, signals);
    // An emulator that went away meanwhile fails the save with ECONNREFUSED: main.ts says what it means.
    await persistEmbeddedState(undefined, config.name);
    // A signal while finishing: the run was whole and is saved; the command ends (the demo's
    // searches left out), exit 0 unless messages were dead-lettered.
    const late = signals.lateSignal();
    signals.dispose();
    if (late)
      process.stderr.write(`trawl: stopped after the run (${late.signal}); it had finished and is saved\n`);
    else if (opts.demo && kind === 'crawl') await demoSearch(config, opts.config);
    if (dead > 0)
      throw new CommandFailed(
        `${dead} message(s) failed every retry and wait in the crawl's dead-letter queues; their URLs are left pending (the log above says why; after a fix, "trawl redrive -c ${opts.config}" puts them back and "trawl ${kind} -c ${opts.config}" resumes them)`,
      );
  } finally {
    early.dispose();
    progress.stop();
    await close();
  }
}

/**
 * A crawl applies a changed config to the pages it reads now; the pages read before get it from
 * the next refresh cycle (deletions, pages read again). Said, so that a user who widened the
 * scope and ran `trawl crawl` again does not take "nothing new" for the answer.
 */
async function noticePolicyChange(session: CrawlSession, file: string): Promise<void> {
  const change = await pendingPolicyChange(session, session.config);
  if (change)
    process.stderr.write(
      `trawl: the config changed since this crawl's pages were read (${change}); "trawl refresh -c ${file}" applies it to them, or the next scheduled refresh cycle\n`,
    );
}

/** Keeps the run's counters in the bucket for `trawl report` (throughput and cost of the last runs). */
async function recordRun(
  session: CrawlSession,
  kind: 'crawl' | 'refresh',
  started: number,
  interrupted: boolean,
) {
  // On the crawl's clock (`--now`), as the states, the change feed and the report's ages are: a run
  // moved days ahead showed in the report's runs at the real time, before the changes it made.
  const offset = session.now() - Date.now();
  const record = buildRunRecord({
    kind,
    crawl: session.config.name,
    startedMs: started + offset,
    finishedMs: Date.now() + offset,
    stats: stageStats,
    counts: requestCounts,
    stages: session.runner.stats,
    interrupted,
  });
  // A report without this run is better than a crawl that fails at its end.
  await saveRunRecord(session.store, record).catch((err: Error) =>
    process.stderr.write(`trawl: could not save the run record: ${err.message}\n`),
  );
}

/** After Ctrl-C: what was held is given back, the state saved, and the exit code is 130 / 143. */
async function finishInterrupted(
  session: CrawlSession,
  stop: StopRequest,
  opts: RunOptions,
  kind: 'crawl' | 'refresh',
  signals: { saving(): void },
): Promise<never> {
  await session.runner.giveBack();
  // The same command: a --watch run resumed without it drained and stopped watching; a --demo one
  // had no site to crawl.
  const demo = opts.demo ? ' --demo' : '';
  const again =
    kind === 'crawl'
      ? `trawl crawl -c ${opts.config}${demo}${opts.watch ? ' --watch' : ''}`
      : `trawl refresh -c ${opts.config}${demo}${opts.now ? ` --now ${opts.now}` : ''}`;
  process.stdout.write(`trawl: interrupted (${stop.signal}); nothing is lost. Resume with: ${again}\n`);
  // The emulator keeps the state in memory; the save under .trawl/ is for a reboot or a crash of
  // the emulator. It used to be cut short by the forced exit (4.5 s), every time on a larger crawl.
  signals.saving();
  const announce = () =>
    process.stderr.write("trawl: saving the emulator's state under .trawl/ (Ctrl-C again to skip)\n");
  await persistEmbeddedState(undefined, session.config.name, announce).catch(() => undefined);
  process.exit(stop.exitCode);
}

/** `trawl crawl -c FILE [--demo]` */
export async function crawlCommand(opts: RunOptions): Promise<void> {
  // A deployed crawl (trawl deploy): its seed function starts it; --demo always runs here.
  if (!opts.demo && (await runDeployed(opts.config, 'crawl'))) return;
  await run(opts, 'crawl');
}

/** `trawl refresh -c FILE [--now ISO]` */
export async function refreshCommand(opts: RunOptions): Promise<void> {
  if (opts.dryRun) return dryRun(opts);
  const deployed = opts.demo ? null : loadDeployment(loadConfigFile(opts.config).name);
  // --now shifts this process's clock: a deployed crawl's functions keep the real one. It used
  // to run the cycle here, on an empty embedded emulator: "0 fetched", and a moto started.
  if (deployed && opts.now)
    throw new ConfigError(
      `--now: crawl "${deployed.crawl}" is deployed, and its refresh function runs at the real time: run "trawl refresh -c ${opts.config}" without --now (or --dry-run --now to see what a cycle then would do)`,
    );
  if (deployed && (await runDeployed(opts.config, 'refresh'))) return;
  await run(opts, 'refresh');
}

/** `trawl refresh --dry-run`: one JSON line per URL the cycle would refresh or delete; no writes. */
async function dryRun(opts: RunOptions): Promise<void> {
  const now = opts.now === undefined ? undefined : isoTime(opts.now);
  // A deployed crawl's plan is read from its stack (it used to be an empty embedded emulator's).
  const file = loadConfigFile(opts.config);
  const deployed = opts.demo ? null : loadDeployment(file.name);
  if (deployed) await useDeployment(deployed, opts.config);
  const { config, close } = deployed
    ? { config: file, close: async () => {} }
    : await prepare(opts, 'refresh');
  try {
    const resources = deployed ? deployedResources(deployed.outputs) : undefined;
    const plan = await planRefresh(await openSession(config, { now, resources, readOnly: true }));
    for (const p of plan) process.stdout.write(`${JSON.stringify(p)}\n`);
    const count = (a: string) => plan.filter((p) => p.action === a).length;
    process.stderr.write(
      `trawl: dry run: ${count('refresh')} to refresh, ${count('delete')} to delete, ${count('forget')} to forget; nothing changed\n`,
    );
  } finally {
    await close();
  }
}

/**
 * Every `fetch.auth` and `fetch.proxy` secret resolves before the pipeline starts (an unset
 * variable, a Secrets Manager secret without the key): exit 2 naming the field. Found by the fetch
 * function instead, the error failed every fetch invocation and the crawl never ended.
 */
async function checkSecrets(config: CrawlConfig, file: string): Promise<void> {
  if (config.fetch.auth.length === 0 && config.fetch.proxy?.password === undefined) return;
  for (const entry of unannouncedCleartext(config.fetch.auth))
    process.stderr.write(`trawl: warning: ${file}: ${entry} sends its credentials over plain http\n`);
  try {
    const resolver = createSecretResolver();
    await resolveAuth(config.fetch.auth, resolver);
    await resolveProxy(config.fetch.proxy, resolver);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${file}: ${err.message}`);
    throw err;
  }
}
