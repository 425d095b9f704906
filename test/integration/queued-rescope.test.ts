/**
 * A URL queued before a config change that now puts it out of scope is not fetched
 * (shared/stages/fetch-scope.ts): a crawl stopped with its frontier full, run again with an
 * exclude, sends no request under the excluded path, records each such URL `ignored`
 * (`out-of-scope: excluded`), counts it in the summary and finishes the rest; a refresh task of an
 * indexed page queued before the change loses its document without a request; the same config
 * run again decides nothing again. Real emulator, real handlers through the local runner, a real
 * site on loopback.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { scheduledEvent } from '../../cli/runner.ts';
import { type CrawlSession, crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { printSummary } from '../../cli/summary.ts';
import { emptyCounts } from '../../shared/aws/request-counter.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

const DAY = 86_400_000;
const PRIVATE = ['/private/1', '/private/2', '/private/3', '/private/4', '/private/5'];
const PUBLIC = ['/pub/1', '/pub/2', '/pub/3', '/pub/4', '/pub/5'];

describe('a URL queued before a config change that now rejects it is not fetched (fetch-scope.ts)', () => {
  const env = useEmulatorAndSite({
    routes: {
      '/': { body: linkPage('Home', ['/hub']) },
      // The private links first: the crawl is stopped as the first of them is fetched.
      '/hub': { body: linkPage('Hub', [...PRIVATE, ...PUBLIC]) },
      ...Object.fromEntries([...PRIVATE, ...PUBLIC].map((p) => [p, { body: linkPage(`Page ${p}`) }])),
      '/robots.txt': { status: 404, body: '' },
    },
  });

  /** One host, one request every 300 ms: the hub's ten links are still queued when the crawl stops. */
  const input = (name: string, extra: Partial<CrawlConfigInput> = {}): CrawlConfigInput => ({
    name,
    startUrls: [`${env.site.url}/`],
    fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 300 },
    refresh: { maxAge: '10d' },
    ...extra,
  });
  const served = (from: number, to = env.site.requests.length) =>
    env.site.requests.slice(from, to).map((r) => r.path);

  /**
   * Crawls until the first of the hub's links is requested, then stops the runner as Ctrl-C does
   * (held messages go back): the other links are in the frontier, some put back with a delay.
   */
  async function crawlAndStop(session: CrawlSession): Promise<void> {
    const mark = env.site.requests.length;
    const linkFetched = () => served(mark).some((p) => p.startsWith('/private/') || p.startsWith('/pub/'));
    await session.runner.invoke('seed', scheduledEvent('Start Crawl'));
    let stopping: Promise<void> | null = null;
    await session.runner.drain(() => {
      if (linkFetched()) stopping ??= session.runner.stop();
      return stopping !== null;
    });
    await stopping;
    const depths = await session.runner.queueDepths();
    const queued = Object.entries(depths)
      .filter(([q]) => !q.startsWith('stage:'))
      .reduce((n, [, d]) => n + (d?.visible ?? 0) + (d?.delayed ?? 0) + (d?.inFlight ?? 0), 0);
    assert.ok(queued > 0, `the crawl stopped with tasks queued: ${JSON.stringify(depths)}`);
  }

  /** The stage counters of what `run` does. */
  async function counted(run: () => Promise<void>): Promise<Record<string, number>> {
    const before = { ...stageStats };
    await run();
    return Object.fromEntries(
      Object.entries(stageStats)
        .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
        .filter(([, v]) => v !== 0),
    );
  }

  it('a crawl stopped with its frontier full, run again with an exclude: no request under it, each URL ignored with its reason, counted, the rest crawled', async () => {
    const name = uniqueCrawlName('rescope');
    const first = await openSession(parseConfig(input(name)));
    await crawlAndStop(first);
    const mark = env.site.requests.length;
    // What the stopped run recorded is done; the rest is queued (a page requested as the run stopped
    // and not written yet too: its message went back).
    const recorded = new Set(
      (await collect(urlStates(first)))
        .filter((s) => s.state === 'indexed')
        .map((s) => new URL(s.url as string).pathname),
    );
    const queuedPrivate = PRIVATE.filter((p) => !recorded.has(p));
    assert.ok(queuedPrivate.length >= 4, `private pages still queued: ${queuedPrivate.join(' ')}`);

    const narrowed = parseConfig(input(name, { scope: { exclude: ['/private/'] } }));
    const session = await openSession(narrowed);
    const stats = await counted(async () => void (await crawl(session)));

    const after = served(mark);
    assert.deepEqual(
      after.filter((p) => p.startsWith('/private/')),
      [],
      `no request under /private/ after the change: ${after.join(' ')}`,
    );
    const states = new Map(
      (await collect(urlStates(session))).map((s) => [new URL(s.url as string).pathname, s]),
    );
    // A page requested as the first run stopped may have been written, not yet recorded: the extract
    // stage judges it again (it was fetched before the change). The others were never requested.
    const requested = new Set(served(0, mark));
    const notRequested = queuedPrivate.filter((p) => !requested.has(p));
    assert.ok(notRequested.length >= 4, `never requested: ${notRequested.join(' ')}`);
    for (const p of queuedPrivate) {
      const s = states.get(p);
      assert.deepEqual([s?.state, s?.note], ['ignored', 'out-of-scope: excluded'], p);
      if (notRequested.includes(p)) assert.equal(s?.httpStatus, null, `${p}: no HTTP status, no request`);
    }
    // The rest of the crawl completes: every public page indexed.
    for (const p of PUBLIC) assert.equal(states.get(p)?.state, 'indexed', p);
    const docs = (await collect(documents(session))).map((d) => new URL(d.url as string).pathname);
    for (const p of queuedPrivate) assert.ok(!docs.includes(p), `${p} has no document`);
    // Counted as the crawl counts rejections, and said in the summary.
    const skipped = stats['skipped:out-of-scope'] ?? 0;
    assert.ok(
      skipped >= notRequested.length && skipped <= queuedPrivate.length,
      `not fetched: ${skipped} (${JSON.stringify(stats)})`,
    );
    assert.equal(stats['rejected:excluded'], queuedPrivate.length, 'each queued private URL rejected once');
    assert.ok((stats['scope:rechecked'] ?? 0) >= skipped, JSON.stringify(stats));
    assert.equal(
      stats.fetched,
      after.filter((p) => p !== '/robots.txt').length,
      'what was not requested is not "fetched"',
    );
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((s: string) => lines.push(s) > 0) as typeof process.stdout.write;
    try {
      printSummary({ kind: 'crawl', config: narrowed, session, seconds: 1, stats, counts: emptyCounts() });
    } finally {
      process.stdout.write = write;
    }
    const summary = lines.join('');
    assert.match(summary, new RegExp(`rejected: [^\\n]*excluded ${queuedPrivate.length}`));
    assert.match(summary, new RegExp(`out of scope now, not fetched: ${skipped}\\n`));
  });

  it('a refresh task of an indexed page, queued before an exclude was added: its document deleted without a request', async () => {
    const name = uniqueCrawlName('rescope-refresh');
    const t0 = Date.now();
    await crawl(await openSession(parseConfig(input(name))));
    // A refresh cycle under the old config queues every page; the config changes before they are fetched.
    const old = await openSession(parseConfig(input(name)), { now: new Date(t0 + 11 * DAY) });
    await old.runner.invoke('refresh', {
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      detail: {},
    });
    const mark = env.site.requests.length;
    const session = await openSession(parseConfig(input(name, { scope: { exclude: ['/private/'] } })));
    await session.runner.drain();

    const after = served(mark);
    assert.deepEqual(
      after.filter((p) => p.startsWith('/private/')),
      [],
      `no request under /private/: ${after.join(' ')}`,
    );
    assert.ok(after.includes('/pub/1'), `the other refresh tasks were fetched: ${after.join(' ')}`);
    const docs = (await collect(documents(session))).map((d) => new URL(d.url as string).pathname).sort();
    assert.deepEqual(docs, ['/', '/hub', ...PUBLIC].sort());
    // The deletion the refresh cycle would have made, with its reason, in the change feed.
    const deletes = (await readChanges(session)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deletes.map((d) => [new URL(d.url).pathname, d.reason]).sort(),
      PRIVATE.map((p) => [p, 'out-of-scope: excluded']),
    );
    const states = new Map(
      (await collect(urlStates(session))).map((s) => [new URL(s.url as string).pathname, s]),
    );
    for (const p of PRIVATE)
      assert.deepEqual([states.get(p)?.state, states.get(p)?.note], ['ignored', 'out-of-scope: excluded'], p);
  });

  it('the same config run again decides no queued task again, and fetches what was queued', async () => {
    const name = uniqueCrawlName('rescope-same');
    await crawlAndStop(await openSession(parseConfig(input(name))));
    const mark = env.site.requests.length;
    const fetchedBefore = new Set(served(0, mark));
    const session = await openSession(parseConfig(input(name)));
    const stats = await counted(async () => void (await crawl(session)));

    assert.equal(stats['scope:rechecked'], undefined, `nothing decided again: ${JSON.stringify(stats)}`);
    assert.equal(stats['skipped:out-of-scope'], undefined);
    const after = new Set(served(mark));
    for (const p of [...PRIVATE, ...PUBLIC])
      assert.ok(fetchedBefore.has(p) || after.has(p), `${p} fetched by one of the runs`);
    const states = await collect(urlStates(session));
    assert.deepEqual(
      states.filter((s) => s.state !== 'indexed').map((s) => s.url),
      [],
      'every page indexed',
    );
  });
});
