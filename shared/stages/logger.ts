/** One structured logger per container (Powertools: JSON lines with the Lambda context). */
import { Console } from 'node:console';
import { Logger } from '@aws-lambda-powertools/logger';
import { mergeExamples } from '../crawl/page/page-kit.ts';
import { maskingReplacer } from '../crawl/url/mask-url.ts';

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT', 'CRITICAL', 'TRACE'] as const;
type Level = (typeof LEVELS)[number];
const fromEnv = process.env.POWERTOOLS_LOG_LEVEL?.toUpperCase() as Level | undefined;

/** The level comes from POWERTOOLS_LOG_LEVEL when the container starts (the CLI sets WARN). */
const initialLevel: Level = fromEnv && LEVELS.includes(fromEnv) ? fromEnv : 'INFO';
export const logger = new Logger({
  serviceName: 'trawl',
  logLevel: initialLevel,
  // URLs in any string of a log line lose their user info (a start URL may carry credentials)
  jsonReplacerFn: maskingReplacer,
});

const stageLoggers = new Map<string, Logger>();
/** the console `logToStderr` gave the loggers, for the stage loggers made after it */
let stderrConsole: Console | null = null;

/**
 * The logger of one stage: a child of `logger` with a Lambda context of its own. On Lambda a
 * container runs one function and it is the same as `logger`; the local runner runs every stage
 * in one process, and with one logger a stage's line went out named after whichever stage was
 * invoked last (a fetch warning as `trawl-local-index`).
 */
export function stageLogger(stage: string): Logger {
  let child = stageLoggers.get(stage);
  if (!child) {
    // The container's level, as `logger`'s: Powertools' context middleware sets a logger back to
    // the level it was made with at each warm invocation (a child is made with its parent's
    // level of the moment).
    child = logger.createChild({ logLevel: initialLevel });
    if (stderrConsole) useConsole(child, stderrConsole);
    stageLoggers.set(stage, child);
  }
  return child;
}

/** Powertools writes through a console of its own that it offers no option for: replaced here. */
function useConsole(target: Logger, console: Console): void {
  (target as unknown as { console: Console }).console = console;
}

/** Sets the level of `logger` and of every stage logger. */
export function setLogLevel(level: Level): void {
  logger.setLogLevel(level);
  for (const child of stageLoggers.values()) child.setLogLevel(level);
}

/**
 * The handlers' log lines go to stderr, every level: in `trawl`'s own process (a local run) they
 * are diagnostics, and stdout carries the command's output (a summary, JSON lines to pipe).
 * Powertools writes DEBUG and INFO with console.debug/info, to stdout, through a console of its
 * own that it offers no option for: it is replaced here.
 */
export function logToStderr(): void {
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  toStderr.trace = (message: unknown, ...rest: unknown[]) => toStderr.log(message, ...rest);
  // At the CLI's own level (WARN: bin/trawl.mjs sets it when none is asked for), a warning or an
  // error is a line in words, as the CLI's other warnings are: raw JSON lines were mixed into
  // `trawl crawl`'s output (helper-47). Asked for another level, every line stays JSON, for tools.
  const level = process.env.POWERTOOLS_LOG_LEVEL?.toUpperCase();
  if (level === undefined || level === 'WARN') {
    for (const level of ['warn', 'error'] as const) {
      const json = toStderr[level].bind(toStderr);
      toStderr[level] = (line: unknown, ...rest: unknown[]) => {
        const words = typeof line === 'string' ? inWords(line) : null;
        if (words === null) json(line, ...rest);
        else process.stderr.write(`${words}\n`);
      };
    }
  }
  stderrConsole = toStderr;
  for (const each of [logger, ...stageLoggers.values()]) useConsole(each, toStderr);
}

/** The Lambda context's fields and the line's own: not the news of a warning. */
const CONTEXT_FIELDS = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
]);

/** A Powertools JSON line as `trawl: warning: MESSAGE (key: value, …)`; null when it is not one. */
export function inWords(line: string): string | null {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof entry.message !== 'string') return null;
  const kind = entry.level === 'WARN' ? 'warning' : 'error';
  const details = Object.entries(entry)
    .filter(([k]) => !CONTEXT_FIELDS.has(k))
    .map(([k, v]) => `${k}: ${shortValue(v)}`);
  return `trawl: ${kind}: ${entry.message}${details.length ? ` (${details.join(', ')})` : ''}`;
}

/** A detail's value in a few words: an error's message, a value's JSON cut at 200 characters. */
function shortValue(value: unknown): string {
  if (typeof value === 'string') return value;
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
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
  mergeExamples(stageExamples, examples);
}
