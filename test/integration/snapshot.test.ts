// The embedded emulator's state survives a restart: tables and buckets are saved and restored,
// and queues are rebuilt from the URLs still pending — only those: a URL whose state after its
// fetch is kept in a manifest line (its table item is just the claim) is not pending.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { restoreSnapshot, saveSnapshot } from '../../cli/snapshot.ts';
import { generateDemoSite } from '../../demo/generate-site.ts';
import { parseConfig } from '../../shared/config.ts';
import { resetContainerDeps } from '../../shared/stages/deps.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('emulator snapshot: save, restore, re-queue what was pending', () => {
  let site: SiteServer;
  const emulators: TestEmulator[] = [];
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-snap-site-'));
    site = await startSiteServer({ root: dir });
    generateDemoSite(dir, { pages: 30, seed: 3, baseUrl: site.url });
  });
  after(async () => {
    await site?.close();
    for (const e of emulators) await e.stop();
  });

  it('restores states and documents, and re-queues only the URL claimed but never fetched', async () => {
    emulators.push(await startTestEmulator());
    const config = parseConfig({
      name: uniqueCrawlName('snap'),
      startUrls: [`${site.url}/`],
      scope: { keepQueryParams: [] },
      fetch: { allowPrivateNetworks: true },
    });
    const first = await openSession(config);
    await crawl(first);
    // As if a worker claimed a URL and crashed before sending it on.
    const lost = `${site.url}/claimed-then-lost.html`;
    const task = { url: lost, depth: 1, queue: 'follow' as const, index: true, follow: true, priority: 0 };
    assert.equal((await first.urls.claim([task], 'crashed-worker', new Date().toISOString())).length, 1);
    const states = await collect(urlStates(first));
    const docs = await collect(documents(first));
    assert.ok(docs.length > 20);

    const dir = mkdtempSync(join(tmpdir(), 'trawl-snap-'));
    await saveSnapshot(emulators[0]!.endpoint, dir);
    await emulators[0]!.stop();
    emulators.push(await startTestEmulator());
    resetContainerDeps();
    const requeued = await restoreSnapshot(emulators[1]!.endpoint, dir);

    assert.equal(requeued, 1);
    const second = await openSession(config);
    assert.deepEqual(await collect(urlStates(second)), states);
    assert.deepEqual(await collect(documents(second)), docs);
    // The re-queued URL is fetched when the pipeline runs again (the site answers 404).
    await second.runner.drain();
    const after = new Map((await collect(urlStates(second))).map((s) => [s.url, s]));
    assert.equal(after.get(lost)?.state, 'error');
    assert.equal(after.get(lost)?.httpStatus, 404);
    assert.equal([...after.values()].filter((s) => s.state === 'pending').length, 0);
  });

  it("a crawl's save carries the other crawls over unread; a save cut between its renames leaves one whole snapshot", async () => {
    const emu = await startTestEmulator();
    emulators.push(emu);
    const one = parseConfig({
      name: uniqueCrawlName('snap-a'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    const two = parseConfig({
      name: uniqueCrawlName('snap-b'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    const a = await openSession(one);
    await crawl(a);
    const b = await openSession(two);
    await crawl(b);
    const dir = mkdtempSync(join(tmpdir(), 'trawl-snap-'));
    await saveSnapshot(emu.endpoint, dir);
    const bFile = join(dir, 'dynamodb', `${b.resources.urlsTable}.json`);
    // Stand-in content: a save for crawl A must carry B's file as it is, not read B again.
    writeFileSync(bFile, readFileSync(bFile, 'utf8').replace('"items":[', '"marker":1,"items":['));
    await a.urls.claim(
      [{ url: `${site.url}/new.html`, depth: 1, queue: 'follow', index: true, follow: true, priority: 0 }],
      'test',
      new Date().toISOString(),
    );
    await saveSnapshot(emu.endpoint, dir, [one.name]);
    assert.match(readFileSync(bFile, 'utf8'), /"marker":1/, "B's file carried over unread");
    assert.match(readFileSync(join(dir, 'dynamodb', `${a.resources.urlsTable}.json`), 'utf8'), /new\.html/);
    // Two saves at once take turns: both crawls' newest states are in the snapshot.
    await b.urls.claim(
      [{ url: `${site.url}/newer.html`, depth: 1, queue: 'follow', index: true, follow: true, priority: 0 }],
      'test',
      new Date().toISOString(),
    );
    await Promise.all([
      saveSnapshot(emu.endpoint, dir, [one.name]),
      saveSnapshot(emu.endpoint, dir, [two.name]),
    ]);
    assert.match(readFileSync(join(dir, 'dynamodb', `${a.resources.urlsTable}.json`), 'utf8'), /new\.html/);
    assert.match(readFileSync(bFile, 'utf8'), /newer\.html/);
    // A save killed after moving the old snapshot aside and before putting the new one in place.
    renameSync(dir, `${dir}.old`);
    const fresh = await startTestEmulator();
    emulators.push(fresh);
    assert.equal(
      await restoreSnapshot(fresh.endpoint, dir),
      2,
      'the claimed URLs of A and B re-queued from .old',
    );
  });
});
