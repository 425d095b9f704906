import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import {
  type CrawlSession,
  crawl,
  currentStates,
  documents,
  openSession,
  refresh,
  urlStates,
} from '../../cli/session.ts';
import { createAwsClients } from '../../shared/aws/clients.ts';
import { type CrawlConfig, parseConfig } from '../../shared/config.ts';
import { changeEvents } from '../../shared/stages/change-feed.ts';
import {
  EXTRACT_CONFIG,
  expectedDocuments,
  LAST_MODIFIED,
  siteRoutes,
} from '../fixtures/site-extraction/site.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type Route, type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const byteLength = (r: Route) =>
  typeof r.body === 'string' ? Buffer.byteLength(r.body) : (r.body?.byteLength ?? 0);

/** docBulk:docLine of every URL with a document (the stable address, docs/design-facts.md). */
async function pointers(session: CrawlSession): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const item of currentStates(session))
    if (item.docBulk) out.set(item.url, `${item.docBulk}:${item.docLine}`);
  return out;
}

async function keys(session: CrawlSession, prefix: string): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const key of session.store.list(prefix)) out.add(key);
  return out;
}

async function linesOf(session: CrawlSession, key: string): Promise<Record<string, unknown>[]> {
  const res = await session.monitor.s3.send(
    new GetObjectCommand({ Bucket: session.resources.bucket, Key: key }),
  );
  const text = gunzipSync(
    await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
  );
  return text
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('extraction and indexing end to end (issue #5 items 1-8)', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let config: CrawlConfig;
  let session: CrawlSession;
  const routes = siteRoutes();

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({ routes });
  });
  after(async () => {
    delete process.env.TRAWL_EVENT_BUS;
    await site?.close();
    await emu?.stop();
  });

  it('indexes exactly the expected documents, whole, with the contract fields', async () => {
    config = parseConfig({
      name: uniqueCrawlName('extract'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      ...EXTRACT_CONFIG,
    });
    session = await openSession(config);

    await crawl(session);

    const docs = await collect(documents(session));
    const expected = expectedDocuments(site.url);
    assert.deepEqual(
      docs.map((d) => d.url).sort(),
      Object.keys(expected)
        .map((p) => `${site.url}${p}`)
        .sort(),
    );
    for (const doc of docs) {
      const path = (doc.url as string).slice(site.url.length);
      const { indexedAt, lastModified, hash, ...rest } = doc;
      assert.match(hash as string, /^sha256:[0-9a-f]{64}$/, path);
      assert.ok(!Number.isNaN(Date.parse(indexedAt as string)), path);
      assert.equal(lastModified, path === '/' ? new Date(LAST_MODIFIED).toISOString() : null, path);
      assert.deepEqual(rest, { url: doc.url, size: byteLength(routes[path]!), ...expected[path] }, path);
    }
    const states = new Map(
      (await collect(urlStates(session))).map((u) => [(u.url as string).slice(site.url.length), u]),
    );
    // Seed 004: noindex alone still follows; none neither indexes nor follows; X-Robots-Tag counts too.
    assert.equal(states.get('/robots/meta-noindex.html')?.state, 'followed');
    assert.equal(states.get('/robots/meta-none.html')?.state, 'ignored');
    assert.equal(states.get('/robots/header-noindex.html')?.state, 'followed');
    assert.match(String(states.get('/robots/header-noindex.html')?.note), /X-Robots-Tag: noindex/);
    for (const never of [
      '/from-script.html',
      '/robots/unreached-1.html',
      '/robots/unreached-2.html',
      '/robots/unreached-3.html',
    ]) {
      assert.equal(states.has(never), false, `${never} must not be discovered`);
    }
    assert.equal(
      [...states.keys()].filter((p) => p.startsWith('javascript') || p.startsWith('mailto')).length,
      0,
    );
  });

  it('Rogue mode ignores meta robots and X-Robots-Tag (seed 002); index.mapping renames fields', async () => {
    const rogue = parseConfig({
      name: uniqueCrawlName('rogue'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true, respectRobotsTxt: false },
      index: { mapping: { url: 'Path', content: 'Content' } },
      ...EXTRACT_CONFIG,
    });
    const rogueSession = await openSession(rogue);

    await crawl(rogueSession);

    const docs = await collect(documents(rogueSession));
    const extra = [
      'meta-noindex',
      'meta-none',
      'header-noindex',
      'unreached-1',
      'unreached-2',
      'unreached-3',
    ];
    const expectedPaths = [
      ...Object.keys(expectedDocuments(site.url)),
      ...extra.map((p) => `/robots/${p}.html`),
    ];
    assert.deepEqual(docs.map((d) => d.Path).sort(), expectedPaths.map((p) => `${site.url}${p}`).sort());
    const home = docs.find((d) => d.Path === `${site.url}/`);
    assert.equal(home?.Content, expectedDocuments(site.url)['/']?.content);
    assert.equal('url' in (home ?? {}) || 'content' in (home ?? {}), false);
  });

  it('refresh: unchanged pages write nothing, a changed page gets a new pointer, the change feed and one event per batch carry it', async () => {
    const aws = createAwsClients({ count: false });
    const bus = `${config.name}-bus`;
    await aws.events.send(new CreateEventBusCommand({ Name: bus }));
    const queue = await aws.sqs.send(new CreateQueueCommand({ QueueName: `${config.name}-feed` }));
    const attrs = await aws.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.QueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const rule = `${config.name}-changes`;
    await aws.events.send(
      new PutRuleCommand({
        Name: rule,
        EventBusName: bus,
        EventPattern: JSON.stringify({ 'detail-type': ['Trawl Document Changes'] }),
      }),
    );
    await aws.events.send(
      new PutTargetsCommand({
        Rule: rule,
        EventBusName: bus,
        Targets: [{ Id: 'feed', Arn: attrs.Attributes?.QueueArn }],
      }),
    );
    process.env.TRAWL_EVENT_BUS = bus;
    const before = await pointers(session);
    const bulksBefore = await keys(session, 'docs/bulks/');
    const changesBefore = await keys(session, 'changes/');
    const changed = `${site.url}/in-head.html`;
    site.route('/in-head.html', {
      headers: { 'Content-Type': 'text/html' },
      body: '<title>In head</title>changed text',
    });

    // Three days on: past refresh.maxAge (48h), every URL is due for its aged-information check.
    const later = await openSession(config, { now: new Date(Date.now() + 3 * 86_400_000) });
    await refresh(later);

    const after = await pointers(later);
    assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
    for (const [url, pointer] of before) {
      if (url === changed) assert.notEqual(after.get(url), pointer);
      else assert.equal(after.get(url), pointer, `${url} was rewritten although unchanged`);
    }
    const newBulks = [...(await keys(later, 'docs/bulks/'))].filter((k) => !bulksBefore.has(k));
    assert.equal(newBulks.length, 1);
    assert.deepEqual(
      (await linesOf(later, newBulks[0]!)).map((d) => d.url),
      [changed],
    );
    const doc = (await collect(documents(later))).find((d) => d.url === changed);
    assert.equal(doc?.content, 'changed text');
    const newChanges = [...(await keys(later, 'changes/'))].filter((k) => !changesBefore.has(k));
    const feed = (await Promise.all(newChanges.map((k) => linesOf(later, k)))).flat();
    assert.deepEqual(
      feed.map((c) => [c.type, c.url]),
      [['upsert', changed]],
    );

    const events = await receiveAll(aws, queue.QueueUrl!, 1);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.['detail-type'], 'Trawl Document Changes');
    const detail = events[0]?.detail as { crawl: string; changes: { type: string; url: string }[] };
    assert.equal(detail.crawl, config.name);
    assert.deepEqual(
      detail.changes.map((c) => [c.type, c.url]),
      [['upsert', changed]],
    );

    await aws.events.send(new RemoveTargetsCommand({ Rule: rule, EventBusName: bus, Ids: ['feed'] }));
    await aws.events.send(new DeleteRuleCommand({ Name: rule, EventBusName: bus }));
    await aws.events.send(new DeleteEventBusCommand({ Name: bus }));
    await aws.sqs.send(new DeleteQueueCommand({ QueueUrl: queue.QueueUrl }));
  });
});

describe('changeEvents: one event per index batch, split only by the PutEvents entry size', () => {
  it('keeps a batch in one entry, and chunks 3000 changes into entries under 256 KB in order', () => {
    const change = (i: number) => ({
      type: 'upsert' as const,
      url: `https://e.example/${'p'.repeat(200)}/${i}`,
      at: 'now',
    });

    const small = changeEvents('c', 'bus', [change(0), change(1)]);
    const large = changeEvents(
      'c',
      'bus',
      Array.from({ length: 3000 }, (_, i) => change(i)),
    );

    assert.equal(small.length, 1);
    assert.ok(large.length > 1);
    assert.ok(large.every((e) => Buffer.byteLength(e.Detail ?? '') < 256 * 1024));
    const urls = large.flatMap(
      (e) => (JSON.parse(e.Detail ?? '{}') as { changes: { url: string }[] }).changes,
    );
    assert.deepEqual(
      urls.map((c) => c.url),
      Array.from({ length: 3000 }, (_, i) => change(i).url),
    );
  });
});

/** Receives until `want` messages arrived or 10 s passed (EventBridge delivers asynchronously on AWS). */
async function receiveAll(aws: ReturnType<typeof createAwsClients>, queueUrl: string, want: number) {
  const out: Record<string, unknown>[] = [];
  const deadline = Date.now() + 10_000;
  while (out.length < want && Date.now() < deadline) {
    const res = await aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    for (const m of res.Messages ?? []) out.push(JSON.parse(m.Body ?? '{}'));
  }
  return out;
}
