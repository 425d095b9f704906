import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseConfig, parseDuration } from '../shared/config.ts';
import { refreshCycleMs } from '../shared/crawl/state/scheduling.ts';
import { secretArns } from '../shared/net/auth.ts';
import { fetchMemoryMb, spoolDiskMb } from '../shared/stages/fetch-memory.ts';
import { searchTarget } from './constructs/search.ts';
import { capacityFromContext } from './constructs/table-capacity.ts';
import type { CrawlerStackProps } from './crawler-stack.ts';

/** The crawl name when neither `-c crawl=` nor `-c config=` is given. */
export const DEFAULT_CRAWL = 'demo';

/**
 * Stack props from CDK context: `-c crawl=NAME` and/or `-c config=PATH` (JSON or YAML crawl config).
 * A config supplies the name, the discovery interval (whole minutes, at least 1: EventBridge rates)
 * and the refresh cycle's rate (`refreshCycleMs`).
 */
export function crawlerPropsFromContext(context: (key: string) => unknown): CrawlerStackProps {
  const crawl = context('crawl');
  const configPath = context('config');
  if (crawl !== undefined && typeof crawl !== 'string') throw new Error('context crawl must be a string');
  // Only a provisioned choice adds a prop: an on-demand stack's props stay as they were.
  const capacity = capacityFromContext(context('dynamoCapacity'), context('dynamoMaxWriteUnits'));
  const extra = capacity.mode === 'provisioned' ? { dynamoCapacity: capacity } : {};
  if (configPath === undefined) return { crawlName: crawl ?? DEFAULT_CRAWL, ...extra };
  if (typeof configPath !== 'string') throw new Error('context config must be a file path');
  const text = readFileSync(configPath, 'utf8');
  const raw: unknown = /\.json$/i.test(configPath) ? JSON.parse(text) : parseYaml(text);
  const config = parseConfig(raw, configPath);
  if (crawl !== undefined && crawl !== config.name) {
    throw new Error(`context crawl=${crawl} differs from ${configPath}'s name ${config.name}`);
  }
  const arns = secretArns(config.fetch);
  // Rounded up: the schedule never runs more often than the config asks.
  const minutes = Math.max(1, Math.ceil(parseDuration(config.refresh.discoveryInterval) / 60_000));
  const search = searchTarget(config, context('searchEndpoint'), context('searchOperators'));
  return {
    ...(search ? { search } : {}),
    crawlName: config.name,
    discoveryIntervalMinutes: minutes,
    refreshIntervalMinutes: refreshCycleMs(config) / 60_000,
    fetchReservedConcurrency: config.fetch.maxInvocations,
    fetchMemoryMb: fetchMemoryMb(config.fetch),
    fetchEphemeralMb: spoolDiskMb(config.fetch),
    ...(arns.auth.length ? { authSecretArns: arns.auth } : {}),
    ...(arns.proxy.length ? { proxySecretArns: arns.proxy } : {}),
    ...extra,
  };
}
