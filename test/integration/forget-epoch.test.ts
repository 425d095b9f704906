// A URL forgotten by one container is not "known" to another (forget-epoch.ts): a warm extract
// container cached the links it saw for 10 minutes (url-table.ts KNOWN_TTL_MS), so a broken link
// the refresh forgot was not found again by the next read of the page linking to it, on a
// deployed crawl (helper-43's audit). Here the local runner keeps each stage's deps for the
// session, as Lambda keeps a container: the same cache.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crawl, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

const HOUR = 3_600_000;

describe('forgotten URLs and warm containers', () => {
  const env = useEmulatorAndSite();

  it('a broken link the refresh forgets is found again by the next read of the page that links to it', async () => {
    const { site } = env;
    site.route('/robots.txt', { status: 404, body: '' });
    site.route('/', { body: linkPage('Home', ['/ok', '/broken']) });
    site.route('/ok', { body: linkPage('OK') });
    site.route('/broken', { status: 404, body: 'no' });
    const config = parseConfig({
      name: uniqueCrawlName('forget-epoch'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1h' },
    });
    const start = Date.now();
    await crawl(await openSession(config));
    const asked = () => site.requests.filter((r) => r.path === '/broken').length;
    assert.equal(asked(), 1);

    // An hour on the refresh fetches it again: a second permanent error, forgotten. The home page
    // is read in the same cycle, its link to /broken seen (and cached) before /broken is forgotten.
    const later = await openSession(config, { now: new Date(start + HOUR + 60_000) });
    await refresh(later);
    assert.equal(asked(), 2);
    let states = new Map((await collect(urlStates(later))).map((s) => [s.url as string, s]));
    assert.equal(states.has(`${site.url}/broken`), false, 'forgotten after failing again');

    // The next crawl in the same containers reads the home page again: /broken is a new link.
    await crawl(later);
    states = new Map((await collect(urlStates(later))).map((s) => [s.url as string, s]));
    assert.equal(asked(), 3, 'the forgotten link was claimed and fetched again');
    assert.equal(states.get(`${site.url}/broken`)?.errorCode, 'http-404');
  });
});
