/**
 * The version of what decides a URL's scope: a short digest of the config keys the URL decider
 * (decide.ts) reads — `startUrls`, `scope`, `rules`, `limits.ruleCount`, `domains`. A frontier task
 * carries the version it was decided under (`UrlTask.decidedUnder`): under the same version the
 * decision is by construction the same, so the fetch stage decides again only the tasks queued
 * under another config (or under none it knows: a task from before the version was carried).
 */
import { createHash } from 'node:crypto';
import type { CrawlConfig } from '../../config.ts';

const versions = new WeakMap<CrawlConfig, string>();

/** The scope version of `config` (12 characters, base64url of a sha256), computed once per config object. */
export function scopeVersion(config: CrawlConfig): string {
  let version = versions.get(config);
  if (version === undefined) {
    const { startUrls, scope, rules, domains, limits } = config;
    const parts = { startUrls, scope, rules, ruleCount: limits.ruleCount, domains };
    version = createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 12);
    versions.set(config, version);
  }
  return version;
}
