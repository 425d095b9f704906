/** One structured logger per container (Powertools: JSON lines with the Lambda context). */
import { Console } from 'node:console';
import { Logger } from '@aws-lambda-powertools/logger';
import { addExample } from '../crawl/page/page-kit.ts';
import { maskingReplacer } from '../crawl/url/mask-url.ts';

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT', 'CRITICAL', 'TRACE'] as const;
type Level = (typeof LEVELS)[number];
const fromEnv = process.env.POWERTOOLS_LOG_LEVEL?.toUpperCase() as Level | undefined;

/** The level comes from POWERTOOLS_LOG_LEVEL when the container starts (the CLI sets WARN). */
export const logger = new Logger({
  serviceName: 'trawl',
  logLevel: fromEnv && LEVELS.includes(fromEnv) ? fromEnv : 'INFO',
  // URLs in any string of a log line lose their user info (a start URL may carry credentials)
  jsonReplacerFn: maskingReplacer,
});

/**
 * The handlers' log lines go to stderr, every level: in `trawl`'s own process (a local run) they
 * are diagnostics, and stdout carries the command's output (a summary, JSON lines to pipe).
 * Powertools writes DEBUG and INFO with console.debug/info, to stdout, through a console of its
 * own that it offers no option for: it is replaced here.
 */
export function logToStderr(): void {
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  toStderr.trace = (message: unknown, ...rest: unknown[]) => toStderr.log(message, ...rest);
  (logger as unknown as { console: Console }).console = toStderr;
}

/** Counters a stage bumps as it works; the local runner prints them in the crawl summary. */
export const stageStats: Record<string, number> = {};

/** A few rejected links by reason, as the batches logged them; the local runner prints them in the summary. */
export const stageExamples: Record<string, string[]> = {};

/** Adds `n` to a named counter. */
export function bump(name: string, n = 1): void {
  stageStats[name] = (stageStats[name] ?? 0) + n;
}

/** Keeps a batch's rejected-link examples, EXAMPLES_PER_REASON of each reason in all. */
export function noteExamples(examples: Record<string, string[]> | undefined): void {
  for (const [reason, list] of Object.entries(examples ?? {}))
    for (const example of list) addExample(stageExamples, reason, example);
}
