/**
 * The duplicate registry's cost (index.foldDuplicates): content new to its URL is registered with
 * one conditional write and no read; only when the write finds the digest taken does the stage read
 * the entry and fold the URL. The real index-stage function and hosts table on the emulator, their
 * calls counted; the page outcomes are made up (only their URLs and digests count here).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { ENTRY_MAX_BYTES } from '../../shared/crawl/extract/duplicates.ts';
import type { OutcomePlan } from '../../shared/crawl/state/index-plan.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { foldDuplicates } from '../../shared/stages/duplicates.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';

function plan(url: string, digest: string): OutcomePlan {
  const outcome = {
    url,
    state: 'indexed',
    notModified: false,
    dup: { digest, canonical: null },
    task: { url, depth: 1, queue: 'follow', index: true, follow: true, priority: 0 },
  };
  return {
    outcome,
    writeDoc: true,
    set: { state: 'indexed' },
    remove: [],
    forget: false,
    stat: 'indexed',
  } as unknown as OutcomePlan;
}

describe('duplicate registry', () => {
  let emu: TestEmulator;
  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    await emu?.stop();
  });

  it('new content: one conditional write, no read; a known digest: read, then folded', async () => {
    const config = parseConfig({ name: uniqueCrawlName('dupreg'), startUrls: ['http://d.test/'] });
    await openSession(config);
    const deps = depsFromEnv();
    const calls = { reads: 0, writes: 0 };
    const { getValue, swapValue } = deps.hosts;
    deps.hosts.getValue = (...args) => {
      calls.reads++;
      return getValue(...args);
    };
    deps.hosts.swapValue = (...args) => {
      calls.writes++;
      return swapValue(...args);
    };
    const at = new Date().toISOString();
    const fresh = ['d1', 'd2', 'd3'].map((d, i) => plan(`http://d.test/p${i}`, d));
    await foldDuplicates(deps, fresh, new Map(), at);
    assert.deepEqual(calls, { reads: 0, writes: 3 });
    for (const p of fresh) assert.equal(p.set.state, 'indexed');

    const copy = plan('http://d.test/a-longer-copy-of-p0', 'd1');
    await foldDuplicates(deps, [copy], new Map(), at);
    assert.equal(calls.reads, 1, 'the write found d1 taken: read once');
    assert.equal(copy.set.state, 'duplicate');
    assert.equal(copy.set.duplicateOf, 'http://d.test/p0');
  });

  it('a keeper demoted by a preferred URL of the same batch: recorded a duplicate, no upsert and no delete', async () => {
    // Both new in one batch, the longer URL first: it registers the content, the shorter one then
    // takes it over. The longer one's plan used to upsert its document while the fold deleted it,
    // in the same feed object and the delete first: a consumer applying the feed kept the duplicate.
    const config = parseConfig({ name: uniqueCrawlName('dupbatch'), startUrls: ['http://b.test/'] });
    await openSession(config);
    const deps = depsFromEnv();
    const long = plan('http://b.test/a-much-longer-duplicate-url', 'same');
    const short = plan('http://b.test/s', 'same');
    const deletes = await foldDuplicates(deps, [long, short], new Map(), new Date().toISOString());
    assert.deepEqual(deletes, [], 'nothing was in the index to delete');
    assert.equal(short.set.state, 'indexed');
    assert.equal(short.writeDoc, true);
    assert.equal(long.set.state, 'duplicate');
    assert.equal(long.set.duplicateOf, 'http://b.test/s');
    assert.equal(long.writeDoc, false, 'no upsert of the duplicate');
    // Kept before (a document from an earlier batch): its document is deleted, versioned.
    const kept = plan('http://b.test/kept-from-before-with-a-long-url', 'other');
    await foldDuplicates(deps, [kept], new Map(), new Date().toISOString());
    const at = new Date().toISOString();
    const later = await foldDuplicates(deps, [plan('http://b.test/k', 'other')], new Map(), at);
    assert.deepEqual(later, [
      {
        type: 'delete',
        url: 'http://b.test/kept-from-before-with-a-long-url',
        at,
        reason: 'duplicate: of http://b.test/k',
        version: Date.parse(at),
      },
    ]);
  });

  it('one content under 600 URLs, two batches at once: one keeper, the rest folded, the entry bounded', async () => {
    const config = parseConfig({ name: uniqueCrawlName('dupmany'), startUrls: ['http://m.test/'] });
    await openSession(config);
    const deps = depsFromEnv();
    const writes = { tried: 0, made: 0 };
    const { swapValue } = deps.hosts;
    deps.hosts.swapValue = async (...args) => {
      writes.tried++;
      const made = await swapValue(...args);
      if (made) writes.made++;
      return made;
    };
    const at = new Date().toISOString();
    const batch = (from: number) =>
      Array.from({ length: 300 }, (_, i) =>
        plan(`http://m.test/list?page=${from + i}&session=abcdef`, 'same'),
      );
    const [a, b] = [batch(1000), batch(2000)];
    // Each batch as an index invocation would (16 digests at once), the two side by side.
    await Promise.all([foldDuplicates(deps, a, new Map(), at), foldDuplicates(deps, b, new Map(), at)]);
    const plans = [...a, ...b];
    const keepers = plans.filter((p) => p.set.state === 'indexed');
    assert.equal(keepers.length, 1, 'one URL keeps the document');
    const keeper = keepers[0]?.outcome.url;
    for (const p of plans.filter((p) => p.set.state !== 'indexed')) {
      assert.equal(p.set.state, 'duplicate');
      assert.equal(p.set.duplicateOf, keeper);
    }
    const raw = await deps.hosts.getValue(`dup#${config.name}#same`, true);
    assert.ok(raw && Buffer.byteLength(raw) <= ENTRY_MAX_BYTES, `entry of ${raw?.length} bytes`);
    const listed = (JSON.parse(raw) as { dups: string[] }).dups.length;
    // Each URL tries once to register the content as new (one conditional write, no read: new
    // content is the common case), which fails for a duplicate. Only the keeper and the listed
    // duplicates change the entry, a few tries each as the batches race; the hundreds past the
    // bound write nothing (before: a write of the growing entry each, 600 in all).
    assert.ok(writes.made <= listed + 1, `${writes.made} writes made for ${listed} listed`);
    assert.ok(writes.tried <= plans.length + 3 * (listed + 1), `${writes.tried} writes tried`);
  });
});
