/** `trawl search`, `trawl reindex`, `trawl search-engine`: the search index behind index.sink "opensearch". */

import type { Client } from '@opensearch-project/opensearch';
import type { CrawlConfig } from '../../shared/config.ts';
import { ConfigError } from '../../shared/errors.ts';
import { addToGroup } from '../../shared/groups.ts';
import {
  boundedQuery,
  indexName,
  MAX_QUERY_TERMS,
  otherCrawlsDocuments,
  parseQuery,
  search,
  searchClient,
  searchEndpoint,
  writeBulk,
} from '../../shared/search/opensearch-sink.ts';
import { copyTombstones, freshIndex, physicalIndices, swapIn } from '../../shared/search/reindex.ts';
import type { CrawlDocument, UrlItem } from '../../shared/types.ts';
import { loadConfigFile } from '../config-file.ts';
import { loadDeployment, useDeployment } from '../deployment.ts';
import {
  ENGINE_HELP,
  engineInstalled,
  ensureSearchEngine,
  javaHome,
  searchEngineStatus,
  stopSearchEngine,
} from '../search-engine.ts';
import { type CrawlSession, eachState } from '../session.ts';
import { listingSession as session } from './listing.ts';

/**
 * Before a crawl: with the opensearch sink and no endpoint, the embedded engine is started.
 * A demo crawl uses the engine when it is installed, else stays on the feed and says why.
 */
export async function prepareSearchSink(
  config: CrawlConfig,
  opts: { demo?: boolean; file?: string } = {},
): Promise<CrawlConfig> {
  if (opts.demo && config.index.sink === 'feed') {
    if (!engineInstalled() && !searchEndpoint(config)) {
      process.stderr.write(`trawl: no search index for this demo: ${ENGINE_HELP}\n`);
      return config;
    }
    const withSearch = { ...config, index: { ...config.index, sink: 'opensearch' as const } };
    if (searchEndpoint(config)) return withSearch;
    try {
      await startEmbedded();
      return withSearch;
    } catch (err) {
      // The demo's point is the crawl: without a working engine it stays on the feed.
      process.stderr.write(`trawl: no search index for this demo: ${(err as Error).message}\n`);
      return config;
    }
  }
  if (config.index.sink !== 'opensearch') return config;
  let endpoint = searchEndpoint(config);
  if (endpoint) await reachable(endpoint);
  else {
    if (!engineInstalled()) throw new ConfigError(`index.sink "opensearch": ${ENGINE_HELP}`);
    endpoint = await startEmbedded();
  }
  await refuseSharedIndex(config, endpoint, opts.file);
  return config;
}

/**
 * A configured `indexName` that holds another crawl's documents is refused before the crawl: the
 * crawls' refresh cycles and reindexes would delete each other's pages (reindex refused it, but
 * only after both crawls had written there). The default name is the crawl's own.
 */
async function refuseSharedIndex(config: CrawlConfig, endpoint: string, file = 'config'): Promise<void> {
  if (!config.index.opensearch.indexName) return;
  const client = searchClient(endpoint);
  const name = indexName(config);
  let others: number;
  try {
    others = await otherCrawlsDocuments(client, await physicalIndices(client, name), config.name);
  } catch (err) {
    // An engine that refuses the count (a role allowed to write only) cannot be checked here.
    if ((err as { meta?: { statusCode?: number } }).meta?.statusCode) return;
    throw err;
  }
  if (others > 0)
    throw new ConfigError(
      `${file}: index.opensearch.indexName: ${name} holds ${others} document(s) of another crawl: give each crawl an index of its own`,
    );
}

/** A configured search endpoint answers (a deploy checks it before anything starts). */
export async function requireSearchEndpoint(config: CrawlConfig): Promise<void> {
  const endpoint = config.index.sink === 'opensearch' ? config.index.opensearch.endpoint : null;
  if (endpoint) await reachable(endpoint);
}

/**
 * The configured engine answers before a crawl starts: a crawl into an engine that is down fails
 * every index batch until its retries run out, and those pages wait in the dead-letter queue.
 */
async function reachable(endpoint: string): Promise<void> {
  try {
    await searchClient(endpoint).info();
  } catch (err) {
    const e = err as Error & { meta?: { statusCode?: number } };
    // An engine that answers at all (401/403 from a signed-request domain) is there.
    if (e.meta?.statusCode) return;
    throw new ConfigError(
      `index.opensearch.endpoint ${endpoint} does not answer (${e.message}): start the engine or fix the endpoint`,
    );
  }
}

/** Starts (or finds) the embedded engine and says so; its endpoint. */
async function startEmbedded(): Promise<string> {
  const engine = await ensureSearchEngine();
  process.stderr.write(`trawl: using the embedded search engine at ${engine.endpoint}\n`);
  return engine.endpoint;
}

/** The config's endpoint, else the deployed stack's (its outputs), else the embedded engine. */
async function endpointFor(config: CrawlConfig): Promise<string> {
  const configured = searchEndpoint(config);
  if (configured) {
    await reachable(configured);
    return configured;
  }
  const deployed = loadDeployment(config.name);
  if (deployed) {
    if (!deployed.outputs.SearchEndpoint)
      throw new ConfigError(`crawl "${config.name}" was deployed without a search index (index.sink "feed")`);
    await useDeployment(deployed);
    return deployed.outputs.SearchEndpoint;
  }
  if (!engineInstalled()) throw new ConfigError(ENGINE_HELP);
  return (await ensureSearchEngine()).endpoint;
}

/**
 * The search context of `cdk deploy`. On the local cloud, with the opensearch sink and no
 * endpoint, the embedded engine is started and the index function pointed at it (its functions
 * run as local processes). On AWS, TRAWL_SEARCH_OPERATORS (role ARNs, comma-separated) names who
 * may search and reindex the Serverless collection besides the index function.
 */
export async function searchDeployContext(config: CrawlConfig, local: boolean): Promise<string[]> {
  if (config.index.sink !== 'opensearch' || config.index.opensearch.endpoint) return [];
  if (!local) {
    const operators = process.env.TRAWL_SEARCH_OPERATORS;
    return operators ? ['-c', `searchOperators=${operators}`] : [];
  }
  if (!engineInstalled()) throw new ConfigError(`index.sink "opensearch": ${ENGINE_HELP}`);
  return ['-c', `searchEndpoint=${(await ensureSearchEngine()).endpoint}`];
}

/** One JSON line per hit, best first. */
export async function searchCommand(query: string, opts: { config: string; limit?: string }): Promise<void> {
  const config = loadConfigFile(opts.config);
  const limit = opts.limit === undefined ? 10 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new ConfigError(`--limit: a whole number from 1 to 10000, not ${opts.limit}`);
  // Nothing to look for (an empty query, spaces, a lone quote) listed ten arbitrary pages.
  const parsed = parseQuery(query);
  if (!parsed.words && parsed.phrases.length === 0 && parsed.excluded.length === 0)
    throw new ConfigError(`QUERY: no word to search for in ${JSON.stringify(query)}`);
  const { dropped } = boundedQuery(parsed);
  if (dropped > 0)
    process.stderr.write(
      `trawl: warning: the query's first ${MAX_QUERY_TERMS} terms are searched (${dropped} more left out)\n`,
    );
  const client = searchClient(await endpointFor(config));
  const index = indexName(config);
  const feed = config.index.sink !== 'opensearch';
  if (!(await client.indices.exists({ index })).body)
    throw new ConfigError(
      feed
        ? `no search index ${index}: ${opts.config} has index.sink "feed" (documents go to the change feed only): set it to "opensearch", then crawl or run trawl reindex`
        : `no search index ${index}: crawl, or run trawl reindex`,
    );
  // An index a --demo run made (or a reindex before the sink was changed back): it answers, but a
  // crawl or refresh without --demo does not keep it up to date.
  if (feed)
    process.stderr.write(
      `trawl: warning: ${opts.config} has index.sink "feed": only --demo runs update index ${index}\n`,
    );
  for (const hit of await search(client, index, query, limit))
    process.stdout.write(`${JSON.stringify(hit)}\n`);
}

/** Documents per bulk request while reindexing; one S3 document bulk is read at a time. */
const REINDEX_BULK = 500;

/**
 * Rebuilds the index from the stored documents into a fresh physical index: the old index's
 * tombstones first (so a late upsert still cannot bring a deleted page back), then every
 * current document with its fetch time as version, then the crawl's index name is switched to
 * it atomically (shared/search/reindex.ts). Memory holds the URL states and one bulk at a time.
 */
export async function reindexCommand(opts: { config: string }): Promise<void> {
  const config = loadConfigFile(opts.config);
  // With the feed sink, crawls never update the index a reindex builds: its search answers went stale.
  if (config.index.sink !== 'opensearch')
    throw new ConfigError(
      `${opts.config}: index.sink is "feed", so crawls and refreshes would not keep a rebuilt index up to date: set index.sink to "opensearch" first`,
    );
  const crawl = await session(opts.config);
  const client = searchClient(await endpointFor(config));
  const name = indexName(config);
  const olds = await physicalIndices(client, name);
  // The swap drops the old index whole: another crawl's documents there would go with it.
  const others = await otherCrawlsDocuments(client, olds, config.name);
  if (others > 0)
    throw new ConfigError(
      `${opts.config}: index.opensearch.indexName ${name} also holds ${others} document(s) of another crawl, which a reindex would drop: give each crawl an index of its own`,
    );
  const fresh = await freshIndex(client, name, Date.now());
  const tombstones = await copyTombstones(client, olds, fresh);
  const { written, refused } = await writeDocuments(crawl, client, fresh);
  await swapIn(client, name, fresh, olds);
  await client.indices.refresh({ index: name });
  process.stdout.write(
    `reindexed ${written} document(s) into ${name} (${fresh}); kept ${tombstones} deletion(s)\n`,
  );
  // Said, not dropped in silence: they are still in `trawl docs` and the feed (as a crawl counts them).
  if (refused.length > 0) {
    process.stderr.write(
      `trawl: the search engine refused ${refused.length} document(s) (still in trawl docs and the feed):\n${refused
        .slice(0, 20)
        .map((r) => `  ${r.url}: ${r.status} ${r.reason.slice(0, 300)}\n`)
        .join('')}${refused.length > 20 ? `  … and ${refused.length - 20} more\n` : ''}`,
    );
  }
}

async function writeDocuments(
  crawl: CrawlSession,
  client: Client,
  index: string,
): Promise<{ written: number; refused: { url: string; status: number; reason: string }[] }> {
  const byBulk = new Map<string, UrlItem[]>();
  for await (const item of eachState(crawl)) {
    if (!item.docBulk || item.docLine === undefined || item.docLine === null) continue;
    addToGroup(byBulk, item.docBulk, item);
  }
  let written = 0;
  const refused: { url: string; status: number; reason: string }[] = [];
  for (const [bulk, items] of byBulk) {
    const lines = await crawl.store.getLines<CrawlDocument>(bulk);
    const upserts = items.flatMap((item) => {
      const doc = lines[item.docLine as number];
      return doc
        ? [{ doc: { ...doc, url: item.url }, version: Date.parse(item.lastFetched ?? doc.indexedAt) }]
        : [];
    });
    for (let i = 0; i < upserts.length; i += REINDEX_BULK) {
      const r = await writeBulk(client, index, upserts.slice(i, i + REINDEX_BULK), [], crawl.config.name);
      written += r.written;
      refused.push(...r.refused);
    }
  }
  return { written, refused };
}

/** Why `start` would fail on a machine without Java, else nothing. */
function javaNote(): string {
  try {
    javaHome();
    return '';
  } catch (err) {
    return ` (${(err as Error).message})`;
  }
}

/** `trawl search-engine start|stop|status` */
export async function searchEngineCommand(action: string): Promise<void> {
  if (action === 'start') {
    if (!engineInstalled()) throw new ConfigError(ENGINE_HELP);
    const s = await ensureSearchEngine();
    process.stdout.write(`search engine running at ${s.endpoint} (pid ${s.pid})\n`);
  } else if (action === 'stop') {
    process.stdout.write(
      (await stopSearchEngine()) ? 'search engine stopped\n' : 'search engine not running\n',
    );
  } else if (action === 'status') {
    const s = await searchEngineStatus();
    if (s)
      process.stdout.write(`search engine running at ${s.endpoint} (pid ${s.pid}, since ${s.startedAt})\n`);
    else
      process.stdout.write(
        `search engine not running${engineInstalled() ? javaNote() : `: ${ENGINE_HELP}`}\n`,
      );
  } else
    throw new ConfigError(`search-engine: unknown action ${JSON.stringify(action)} (start | stop | status)`);
}

/** The demo's last step: a search of the site it just crawled, and the command that did it. */
export async function demoSearch(config: CrawlConfig, file: string): Promise<void> {
  if (config.index.sink !== 'opensearch') return;
  const query = 'redirect timeout';
  const client = searchClient(await endpointFor(config));
  await client.indices.refresh({ index: indexName(config) });
  process.stderr.write(`\n$ npx trawl search -c ${file} '${query}' --limit 3\n`);
  for (const hit of await search(client, indexName(config), query, 3))
    process.stderr.write(`${JSON.stringify(hit)}\n`);
}
