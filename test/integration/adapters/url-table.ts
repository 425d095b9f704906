/**
 * The URL table adapter (shared/aws/url-table.ts) called directly against the real emulator:
 * the conditional claim the frontier's "once per crawl" rests on, batch reads past BatchGetItem's
 * 100 keys and 16 MB, batch writes past 25, field removal, forgetting, paged scans. The one
 * mock: a client that leaves keys unprocessed on every call (moto only leaves keys of a response
 * over 16 MB, and takes them on the retry).
 */
import assert from 'node:assert/strict';
import { before, describe, it, mock } from 'node:test';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createUrlTable, type UrlTable } from '../../../shared/aws/url-table.ts';
import type { UrlItem, UrlTask } from '../../../shared/types.ts';
import { type AdapterEnv, sharedAdapterEnv } from '../../helpers/adapter-env.ts';

const task = (url: string, extra: Partial<UrlTask> = {}): UrlTask => ({
  url,
  depth: 1,
  queue: 'index',
  index: true,
  follow: true,
  priority: 0,
  ...extra,
});
const item = (url: string, extra: Partial<UrlItem> = {}): UrlItem => ({
  url,
  state: 'indexed',
  depth: 1,
  queue: 'index',
  claimedBy: 'writer',
  ...extra,
});
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';
const T2 = '2026-01-03T00:00:00.000Z';

/** Counts the commands a table sends, by name (an observer: every command reaches the emulator). */
function observed(client: DynamoDBDocumentClient) {
  const sent: string[] = [];
  const proxy = {
    send: (cmd: { constructor: { name: string } }) => {
      sent.push(cmd.constructor.name);
      return client.send(cmd as never);
    },
  } as unknown as DynamoDBDocumentClient;
  return { proxy, sent };
}

describe('url table adapter', () => {
  let env: AdapterEnv;
  /** A new adapter instance: a cold container with an empty cache of known URLs. */
  let fresh: (tableName?: string) => UrlTable;
  before(async () => {
    env = await sharedAdapterEnv();
    fresh = (tableName = env.res.urlsTable) => createUrlTable({ client: env.clients.ddb, tableName });
  });

  it('claim writes the pending item once; a copy of the task in one call is one claim', async () => {
    const urls = fresh();
    const t = task('https://a.test/1', { source: 'docs', kind: 'sitemap', addMeta: [] });
    const won = await urls.claim([t, { ...t }], 'fetch:1', T0);
    assert.deepEqual(won, [t]);
    const got = (await fresh().getMany([t.url])).get(t.url);
    assert.deepEqual(got, {
      url: t.url,
      state: 'pending',
      depth: 1,
      queue: 'index',
      index: true,
      follow: true,
      priority: 0,
      source: 'docs',
      addMeta: [],
      claimedBy: 'fetch:1',
      discoveredAt: T0,
      temporaryErrors: 0,
      kind: 'sitemap',
    });
  });

  it('a URL claimed once is not claimed by another claimer; its own claimer gets it back as redelivered', async () => {
    const t = task('https://a.test/2');
    assert.equal((await fresh().claim([t], 'fetch:a', T0)).length, 1);
    assert.deepEqual(await fresh().claim([t], 'fetch:b', T1), [], 'another claimer, cold cache');
    assert.deepEqual(await fresh().claim([t], 'fetch:a', T1), [{ ...t, redelivered: true }]);
    const got = (await fresh().getMany([t.url])).get(t.url);
    assert.equal(got?.claimedBy, 'fetch:a');
    assert.equal(got?.discoveredAt, T0, 'the item is not rewritten by a later claim');
  });

  it('concurrent claimers of the same URLs: exactly one wins each URL, and it is the one the table names', async () => {
    const targets = Array.from({ length: 8 }, (_, i) => task(`https://race.test/${i}`));
    const claimers = Array.from({ length: 5 }, (_, i) => `fetch:${i}`);
    // Five cold containers: all read "absent" before any writes, so the conditional write decides.
    const results = await Promise.all(claimers.map((c) => fresh().claim(targets, c, T0)));
    const items = await fresh().getMany(targets.map((t) => t.url));
    for (const t of targets) {
      const winners = claimers.filter((_, i) => results[i]?.some((w) => w.url === t.url));
      assert.equal(winners.length, 1, `${t.url}: one winner, got ${winners.join(', ')}`);
      assert.equal(items.get(t.url)?.claimedBy, winners[0]);
    }
  });

  it('getMany reads more than 100 keys (BatchGetItem slices), duplicates and absent keys included', async () => {
    const urls = fresh();
    const written = Array.from({ length: 130 }, (_, i) => item(`https://many.test/${i}`, { depth: i }));
    const { proxy, sent } = observed(env.clients.ddb);
    await createUrlTable({ client: proxy, tableName: env.res.urlsTable }).writeMany(written, []);
    assert.equal(sent.filter((s) => s === 'BatchWriteCommand').length, 6, '25 requests a call');
    const asked = [...written.map((w) => w.url), 'https://many.test/absent', written[0]?.url ?? ''];
    const got = await urls.getMany(asked);
    assert.equal(got.size, 130);
    for (const w of written) assert.deepEqual(got.get(w.url), w);
  });

  it('scan pages through a table bigger than one 1 MB page, each item once', async () => {
    // Before the 16 MB test below: a scan reads the whole table.
    const { urlsTable } = env.res;
    const pad = 'y'.repeat(100 * 1024);
    const written = Array.from({ length: 14 }, (_, i) => item(`https://scan.test/${i}`, { note: pad }));
    await fresh(urlsTable).writeMany(written, []);
    const { proxy, sent } = observed(env.clients.ddb);
    const scanned: string[] = [];
    for await (const it of createUrlTable({ client: proxy, tableName: urlsTable }).scan())
      if (it.url.startsWith('https://scan.test/')) scanned.push(it.url);
    assert.deepEqual(scanned.sort(), written.map((w) => w.url).sort());
    assert.ok(sent.length >= 2, `more than one page (${sent.length} scans)`);
  });

  it('getMany retries the keys a response over 16 MB leaves unprocessed', async () => {
    const urlsTable = env.res.urlsTable;
    // 100 items of ~170 KB: the response to their keys is ~17 MB, over BatchGetItem's 16 MB.
    const big = 'x'.repeat(170 * 1024);
    const written = Array.from({ length: 100 }, (_, i) =>
      item(`https://big.test/${i}`, { note: `${i}${big}` }),
    );
    await fresh(urlsTable).writeMany(written, []);
    const { proxy, sent } = observed(env.clients.ddb);
    const got = await createUrlTable({ client: proxy, tableName: urlsTable }).getMany(
      written.map((w) => w.url),
    );
    assert.equal(got.size, 100);
    for (const w of written) assert.equal(got.get(w.url)?.note, w.note);
    const gets = sent.filter((s) => s === 'BatchGetCommand').length;
    assert.ok(gets >= 2, `a retry of the unprocessed keys (${gets} calls)`);
  });

  it('getMany fails clearly when keys stay unprocessed, instead of answering without them', async () => {
    // Simulated: moto cannot keep keys unprocessed (throttling); every answer leaves them all.
    const stuck = {
      send: async (cmd: { input: { RequestItems: Record<string, { Keys: unknown[] }> } }) => ({
        Responses: {},
        UnprocessedKeys: cmd.input.RequestItems,
      }),
    } as unknown as DynamoDBDocumentClient;
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const reading = createUrlTable({ client: stuck, tableName: 't' }).getMany(['https://s.test/1']);
      const outcome = reading.then(
        () => 'resolved',
        (err: Error) => err.message,
      );
      // Back-off waits run on the mocked clock: advance it until the read gives up.
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setImmediate(r));
        mock.timers.tick(10_000);
      }
      assert.match(await outcome, /BatchGetItem left 1 key\(s\) unprocessed/);
    } finally {
      mock.timers.reset();
    }
  });

  it('writeMany puts and deletes together; an item over 400 KB is refused with an error, not dropped', async () => {
    const urls = fresh();
    const keep = Array.from({ length: 30 }, (_, i) => item(`https://w.test/${i}`));
    await urls.writeMany(keep, []);
    const replaced = keep.slice(0, 5).map((k) => ({ ...k, state: 'error' as const }));
    await urls.writeMany(
      replaced,
      keep.slice(5, 28).map((k) => k.url),
    );
    const got = await fresh().getMany(keep.map((k) => k.url));
    assert.deepEqual(
      [...got.keys()].sort(),
      [...keep.slice(0, 5), ...keep.slice(28)].map((k) => k.url).sort(),
    );
    assert.equal(got.get(keep[0]?.url ?? '')?.state, 'error', 'a put replaces the whole item');
    const huge = item('https://w.test/huge', { note: 'x'.repeat(401 * 1024) });
    await assert.rejects(urls.writeMany([huge], []), /size/i);
    assert.equal((await fresh().getMany([huge.url])).size, 0);
  });

  it('writeMany refuses a URL twice in one call (put and delete, or two puts) before writing anything', async () => {
    const urls = fresh();
    const [a, b] = [item('https://dup.test/a'), item('https://dup.test/b')];
    await assert.rejects(urls.writeMany([a, b], [a.url]), /https:\/\/dup\.test\/a appears twice/);
    await assert.rejects(urls.writeMany([a, b, { ...a, state: 'error' }], []), /appears twice/);
    assert.equal((await fresh().getMany([a.url, b.url])).size, 0);
  });

  it('removeFields drops only the named attributes; no fields is no request', async () => {
    const urls = fresh();
    const u = 'https://r.test/1';
    await urls.writeMany([item(u, { docBulk: 'docs/bulks/x', docLine: 3, hash: 'h' })], []);
    await urls.removeFields(u, ['docBulk', 'docLine']);
    await urls.removeFields(u, []);
    const got = (await fresh().getMany([u])).get(u);
    assert.deepEqual(got, item(u, { hash: 'h' }));
  });

  it('forget deletes the item and this instance claims the URL again (its cache forgets it too)', async () => {
    const urls = fresh();
    const t = task('https://f.test/1');
    assert.equal((await urls.claim([t], 'fetch:x', T0)).length, 1);
    assert.deepEqual(await urls.claim([t], 'fetch:y', T0), [], 'known: skipped');
    await urls.forget(t.url);
    assert.equal((await fresh().getMany([t.url])).size, 0);
    assert.deepEqual(await urls.claim([t], 'fetch:y', T1), [t], 'claimed again after forget');
  });

  it('claim with stampBefore stamps known URLs last reached before it, and never goes back', async () => {
    const urls = fresh();
    const t = task('https://o.test/1');
    await urls.claim([t], 'fetch:o', T0);
    await fresh().claim([t], 'fetch:p', T2, { stampBefore: T1 });
    assert.equal((await fresh().getMany([t.url])).get(t.url)?.reachedAt, T2);
    await fresh().claim([t], 'fetch:q', T1, { stampBefore: '2026-12-31T00:00:00.000Z' });
    assert.equal((await fresh().getMany([t.url])).get(t.url)?.reachedAt, T2, 'an older stamp loses');
  });

  it('putStates writes whole items but never moves a link stamp back (reachedAt, linksReadAt)', async () => {
    const urls = fresh();
    const t = task('https://o.test/kept');
    await urls.claim([t], 'fetch:o', T0);
    // A refresh task's state, read before a link stamped the item (the index stage writes it after).
    const carried = item(t.url, { state: 'error', reachedAt: T0, linksReadAt: T1, lastFetched: T1 });
    await fresh().claim([t], 'fetch:p', T2, { stampBefore: T1 });
    await urls.putStates([carried]);
    const got = (await fresh().getMany([t.url])).get(t.url);
    assert.equal(got?.state, 'error', 'the state is written');
    assert.equal(got?.reachedAt, T2, 'the later stamp stays');
    assert.equal(got?.linksReadAt, T1);
    // A put without a stamp keeps the table's; a later one wins.
    await urls.putStates([item(t.url, { state: 'indexed' })]);
    assert.deepEqual(
      [(await fresh().getMany([t.url])).get(t.url)].map((i) => [i?.state, i?.reachedAt, i?.linksReadAt]),
      [['indexed', T2, T1]],
    );
    const T3 = '2026-01-04T00:00:00.000Z';
    await urls.putStates([item(t.url, { state: 'indexed', reachedAt: T3, linksReadAt: T3 })]);
    assert.equal((await fresh().getMany([t.url])).get(t.url)?.reachedAt, T3);
    await assert.rejects(urls.putStates([carried, carried]), /appears twice/);
  });

  it('a gate records the URLs it stops with its fields and does not return them', async () => {
    const urls = fresh();
    const [a, b] = [task('https://g.test/a'), task('https://g.test/b')];
    const won = await urls.claim([a, b], 'fetch:g', T0, {
      gate: async (c) => ({
        admitted: c.filter((x) => x.url === a.url),
        stopped: c
          .filter((x) => x.url === b.url)
          .map((x) => ({ task: x, extra: { state: 'ignored', note: 'trap: test' } })),
      }),
    });
    assert.deepEqual(won, [a]);
    const got = await fresh().getMany([a.url, b.url]);
    assert.equal(got.get(b.url)?.state, 'ignored');
    assert.equal(got.get(b.url)?.note, 'trap: test');
    assert.deepEqual(await fresh().claim([b], 'fetch:g', T1), [], 'a stopped URL is no redelivery');
  });
});
