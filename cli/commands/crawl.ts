/** `trawl crawl` and `trawl refresh`: run the local pipeline with live progress and a summary. */

import { requestCounts, resetRequestCounts } from '../../shared/aws/request-counter.ts';
import type { CrawlConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { loadConfigFile } from '../config-file.ts';
import { startDemoSite } from '../demo-site.ts';
import { persistEmbeddedState, resolveAwsEndpoint } from '../emulator.ts';
import { createProgress } from '../progress.ts';
import { scheduleIntervals } from '../runner.ts';
import { crawl, openSession, refresh } from '../session.ts';
import { printSummary } from '../summary.ts';
import { demoSearch, prepareSearchSink } from './search.ts';

interface RunOptions {
  config: string;
  demo?: boolean;
  progress?: boolean;
  now?: string;
  watch?: boolean;
}

async function prepare(opts: RunOptions): Promise<{ config: CrawlConfig; close: () => Promise<void> }> {
  let config = loadConfigFile(opts.config);
  let close = async () => {};
  if (opts.demo) {
    const demo = await startDemoSite(config);
    config = demo.config;
    close = demo.close;
    process.stderr.write(`trawl: serving the demo site (${demo.pages} pages) at ${demo.url}\n`);
  }
  await resolveAwsEndpoint();
  config = await prepareSearchSink(config, { demo: opts.demo });
  return { config, close };
}

async function run(opts: RunOptions, kind: 'crawl' | 'refresh'): Promise<void> {
  let now: Date | undefined;
  if (opts.now !== undefined) {
    now = new Date(opts.now);
    if (Number.isNaN(now.getTime())) throw new ConfigError(`--now: not an ISO time: ${opts.now}`);
  }
  const { config, close } = await prepare(opts);
  const progress = createProgress(opts.progress !== false && Boolean(process.stderr.isTTY));
  const started = Date.now();
  try {
    resetRequestCounts();
    for (const k of Object.keys(stageStats)) delete stageStats[k];
    const schedules = opts.watch ? scheduleIntervals(config) : undefined;
    const session = await openSession(config, { onTick: progress.tick, now, schedules });
    if (kind === 'crawl') await crawl(session);
    else await refresh(session);
    if (opts.watch) {
      // As the deployed stack does: discovery and refresh cycles on their schedules, until Ctrl-C.
      let stop = false;
      process.once('SIGINT', () => {
        stop = true;
      });
      process.stderr.write('trawl: watching (discovery and refresh schedules running); Ctrl-C to stop\n');
      await session.runner.watch(() => stop);
    }
    progress.stop();
    printSummary({
      kind,
      config,
      session,
      seconds: (Date.now() - started) / 1000,
      stats: stageStats,
      counts: requestCounts,
    });
    await persistEmbeddedState();
    if (opts.demo && kind === 'crawl') await demoSearch(config, opts.config);
  } finally {
    progress.stop();
    await close();
  }
}

/** `trawl crawl -c FILE [--demo]` */
export async function crawlCommand(opts: RunOptions): Promise<void> {
  await run(opts, 'crawl');
}

/** `trawl refresh -c FILE [--now ISO]` */
export async function refreshCommand(opts: RunOptions): Promise<void> {
  await run(opts, 'refresh');
}
