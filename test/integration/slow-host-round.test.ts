// A fetch round held by one host's slow request (helper-44's audit, 2026-11-29): three healthy
// polite hosts and a fourth whose start page never answers. Until then the healthy hosts' links
// waited for the hung request's timeout (their pages unwritten, and their new URLs left by the
// extract stage to the fetcher that held the round); now the fetcher steps aside after
// STRAGGLE_MS with no task ended (fetch-stage.ts). Real loopback servers, the whole local
// pipeline on the emulator.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage } from '../helpers/crawl-env.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

/** The hung request is given up after this long (the default): the healthy hosts' links come well before (their pages written within FLUSH_MS, then the extract batching window, 10 s). */
const TIMEOUT_MS = 30_000;
const LINKS = ['/l1', '/l2', '/l3'];

describe('a round held by a slow request', () => {
  let emu: TestEmulator;
  const sites: SiteServer[] = [];

  before(async () => {
    emu = await startTestEmulator();
  });
  after(async () => {
    for (const s of sites) await s.close();
    await emu?.stop();
  });

  it('does not hold the other hosts: their links are fetched while the hung request waits for its timeout', async () => {
    const healthy: SiteServer[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await startSiteServer({});
      s.route('/', { headers: { 'content-type': 'text/html' }, body: linkPage(`home ${i}`, LINKS) });
      for (const l of LINKS)
        s.route(l, { headers: { 'content-type': 'text/html' }, body: linkPage(`${i}${l}`) });
      healthy.push(s);
    }
    const hung = await startSiteServer({});
    hung.route('/', { handler: () => {} });
    sites.push(...healthy, hung);
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('slow-round'),
        startUrls: [...healthy, hung].map((s) => `${s.url}/`),
        fetch: { allowPrivateNetworks: true, timeoutMs: TIMEOUT_MS, waitBetweenRequestsMs: 500 },
        refresh: { maxTemporaryErrors: 0 },
      }),
    );
    await crawl(session);

    const hungAt = hung.requests.find((r) => r.path === '/')?.at;
    assert.ok(hungAt !== undefined, 'the hung host was asked');
    const linksAt = healthy.flatMap((s) => s.requests.filter((r) => LINKS.includes(r.path)).map((r) => r.at));
    assert.equal(linksAt.length, healthy.length * LINKS.length, 'every link fetched once');
    const latest = Math.max(...linksAt);
    for (const s of healthy) console.log(s.requests.map((r) => `${r.path}@${r.at - hungAt}`).join(' '));
    console.log(
      `the healthy hosts' links fetched by ${latest - hungAt} ms after the hung request (timeout ${TIMEOUT_MS} ms)`,
    );
    assert.ok(
      latest < hungAt + TIMEOUT_MS,
      `the links waited for the hung request's timeout: the last came ${latest - hungAt} ms after it was sent`,
    );
    const states = await collect(urlStates(session));
    const indexed = states.filter((s) => s.state === 'indexed').length;
    assert.equal(indexed, healthy.length * (1 + LINKS.length));
    const hungState = states.find((s) => s.url === `${hung.url}/`);
    assert.equal(hungState?.errorKind, 'temporary', JSON.stringify(hungState));
  });
});
