/** One structured logger per container (Powertools: JSON lines with the Lambda context). */
import { Logger } from '@aws-lambda-powertools/logger';
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

/** Counters a stage bumps as it works; the local runner prints them in the crawl summary. */
export const stageStats: Record<string, number> = {};

/** Adds `n` to a named counter. */
export function bump(name: string, n = 1): void {
  stageStats[name] = (stageStats[name] ?? 0) + n;
}
