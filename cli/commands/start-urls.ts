/** Start URLs that led nowhere: said by `trawl crawl` when it ends and by `trawl status --wait`. */

import type { CrawlConfig } from '../../shared/config.ts';
import { createUrlDecider, startUrlsOf } from '../../shared/crawl/rules/decide.ts';
import type { UrlItem } from '../../shared/types.ts';
import type { CrawlSession } from '../session.ts';

/**
 * A start URL that led nowhere — an error, a redirect whose target the scope rejects (http → https,
 * apex → www on another host), robots.txt — is said on stderr: the crawl otherwise ends "finished",
 * exit 0, with nothing in it and no word why. A deployed crawl is only seeded by `trawl deploy`:
 * `trawl status --wait` says it once the crawl has drained.
 */
export async function warnStartUrls(session: CrawlSession): Promise<void> {
  const lookup = async (url: string) => (await session.urls.getMany([url])).get(url);
  for (const warning of await startUrlWarnings(session.config, lookup)) process.stderr.write(`${warning}\n`);
}

/**
 * The warnings, one a start URL that led nowhere. One the config itself rejects (an `ignore`
 * rule, an exclude pattern) is never fetched and has no state: it went unsaid.
 */
export async function startUrlWarnings(
  config: CrawlConfig,
  lookup: (url: string) => Promise<UrlItem | undefined>,
): Promise<string[]> {
  const decider = createUrlDecider(config);
  const out: string[] = [];
  for (const url of startUrlsOf(config, decider)) {
    const d = decider.decide(url, { depth: 0, isStart: true });
    const problem = d.accepted ? await startUrlProblem(url, lookup) : `the config rejects it: ${d.reason}`;
    if (!problem) continue;
    // The commonest first crawl's trap: http://site/ answers 301 to https://site/ (or the apex to
    // www), which the scope rejects; the warning named the cause but not the fix (an audit).
    const moved = OFFSITE_TARGET.exec(problem)?.[1];
    const fix = moved ? `; to crawl the site where it moved, start at ${moved}` : '';
    out.push(`trawl: warning: start URL ${url} led nowhere (${problem})${fix}`);
  }
  return out;
}

/**
 * Why a start URL led nowhere, or null: its state, or that of the URL its redirects in scope end
 * at (a start URL redirected to https is `ignored: redirected to …`, and its target is the page).
 */
export async function startUrlProblem(
  url: string,
  lookup: (url: string) => Promise<UrlItem | undefined>,
): Promise<string | null> {
  let at = url;
  let item = await lookup(at);
  for (let hop = 0; hop < 20 && item?.state === 'ignored' && item.note?.startsWith(REDIRECTED); hop++) {
    at = item.note.slice(REDIRECTED.length);
    item = await lookup(at);
  }
  if (item?.state !== 'error' && item?.state !== 'ignored') return null;
  const why = [item.errorCode, item.note].filter(Boolean).join(': ') || item.state;
  return `${at === url ? '' : `redirected to ${at}, `}${item.state}: ${why}`;
}

const REDIRECTED = 'redirected to ';
const OFFSITE_TARGET = /redirect target rejected \(offsite\): (\S+)$/;

/**
 * A crawl that followed no link at all though its start pages had some — every one rejected by the
 * scope (`scope.schemes`, an include no link matches, a pattern matching the host) — is said on
 * stderr with the reasons: it otherwise ended "finished", exit 0, one document, and only the
 * summary's `rejected` counts hinted why. Said when this run claimed no URL and the crawl knows no
 * URL but its start URLs and sitemaps (the table is read only that far).
 */
export async function warnNothingFollowed(
  session: CrawlSession,
  stats: Record<string, number>,
  file: string,
): Promise<void> {
  const { config } = session;
  if (!config.discovery || config.scope.maxDepth === 0 || (stats.discovered ?? 0) > 0) return;
  const rejected = Object.entries(stats)
    .filter(([k, n]) => k.startsWith('rejected:') && n > 0)
    .map(([k, n]) => [k.slice('rejected:'.length), n] as const)
    .sort((a, b) => b[1] - a[1]);
  const total = rejected.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return;
  const starts = new Set(startUrlsOf(config, createUrlDecider(config)));
  for await (const item of session.urls.scan()) if (!starts.has(item.url) && item.kind !== 'sitemap') return; // something beyond was found
  const reasons = rejected.map(([reason, n]) => `${reason} ${n}`).join(', ');
  process.stderr.write(
    `trawl: warning: no link was followed: the ${total} found were all rejected (${reasons}); the scope may be narrower than meant ("trawl explain -c ${file} URL" says why for one)\n`,
  );
}
