import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { normalizeUrl } from '../../shared/crawl/url/normalize-url.ts';
import { createScopeFilters, runFilters, type ScopeReason } from '../../shared/crawl/url/scope.ts';

/** Runs every chain (hard limits, depth, scope) as decide() does for a URL no rule accepted. */
export function judgeScope(
  scope: CrawlConfigInput['scope'],
  url: string,
  startUrls: string[],
  depth = 1,
): ScopeReason | null {
  const config = parseConfig({ name: 't', startUrls, scope });
  const filters = createScopeFilters(config.scope, config.startUrls);
  const normalized = normalizeUrl(url)!;
  const candidate = { url: normalized, parsed: new URL(normalized), depth };
  return runFilters([...filters.hardLimits, filters.depth, ...filters.scope], candidate);
}
