// A URL put back for its host (here a 429 with Retry-After) goes back to its queue as the fetcher's
// next flush goes, due from when it was put back, with a wake-up call for then. Until 2026-11-28 it
// went back only once every task of its frontier message was done: a message that also held four
// polite hosts' pages kept it for their whole round, and its delay was counted from then (an
// audit's host idled 29.8 s after an 8 s Retry-After).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const PAGES = 8;

describe('tasks put back go back as they are put back', () => {
  let emu: TestEmulator;
  const polite: SiteServer[] = [];
  let busy: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    for (let h = 0; h < 4; h++) {
      const routes: Record<string, { body: string }> = {};
      for (let i = 0; i < PAGES; i++)
        routes[`/p/${i}`] = { body: `<title>page ${i}</title><p>page ${i} of host ${h}</p>` };
      polite.push(await startSiteServer({ routes }));
    }
    busy = await startSiteServer({});
    let asked = 0;
    busy.route('/slow', {
      handler: (_req, res) => {
        if (asked++ === 0) return void res.writeHead(429, { 'retry-after': '1' }).end('busy');
        res.writeHead(200, { 'content-type': 'text/html' }).end('<title>slow</title><p>there now</p>');
      },
    });
  });
  after(async () => {
    for (const s of [...polite, busy]) await s?.close();
    await emu?.stop();
  });

  it("a 429's URL is fetched again while the rest of its message is still being fetched", async () => {
    // One frontier message (the seed's start URLs): four polite hosts' pages and the busy page.
    const startUrls = [
      `${busy.url}/slow`,
      ...polite.flatMap((s) => Array.from({ length: PAGES }, (_, i) => `${s.url}/p/${i}`)),
    ];
    const config = parseConfig({
      name: uniqueCrawlName('early-requeue'),
      startUrls,
      fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 1000 },
    });
    const session = await openSession(config);
    await crawl(session);

    const slow = busy.requests.filter((r) => r.path === '/slow');
    assert.deepEqual(
      slow.map((r) => r.status),
      [429, 200],
      'asked twice: busy, then there',
    );
    const lastPolite = Math.max(
      ...polite.flatMap((s) => s.requests.filter((r) => r.path.startsWith('/p/')).map((r) => r.at)),
    );
    assert.ok(
      (slow[1]?.at ?? Infinity) < lastPolite,
      `the retry came before the message's other pages were done (${(slow[1]?.at ?? 0) - lastPolite} ms)`,
    );
    let indexed = 0;
    for await (const u of urlStates(session)) if (u.state === 'indexed') indexed++;
    assert.equal(indexed, 1 + 4 * PAGES);
  });
});
