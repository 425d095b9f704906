/** `trawl crawl` and `trawl refresh`: run the local pipeline with live progress and a summary. */
import { loadConfigFile } from '../config-file.ts';
import { persistEmbeddedState, resolveAwsEndpoint } from '../emulator.ts';
import { crawl, openSession, refresh } from '../session.ts';
import { createProgress } from '../progress.ts';
import { printSummary } from '../summary.ts';
import { startDemoSite } from '../demo-site.ts';
import { ConfigError } from '../../shared/errors.ts';
import { requestCounts, resetRequestCounts } from '../../shared/aws/request-counter.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import type { CrawlConfig } from '../../shared/config.ts';

interface RunOptions {
  config: string;
  demo?: boolean;
  progress?: boolean;
  now?: string;
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
    const session = await openSession(config, { onTick: progress.tick, now });
    if (kind === 'crawl') await crawl(session);
    else await refresh(session);
    progress.stop();
    printSummary({ kind, config, session, seconds: (Date.now() - started) / 1000, stats: stageStats, counts: requestCounts });
    await persistEmbeddedState();
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
