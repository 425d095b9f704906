// A lone polite host whose delay is at most MAX_IN_PROCESS_WAIT_MS is waited for inside the fetch
// invocation (politeness/host-turns.ts): a pass through the queue costs whole seconds. With a fast
// site the wait after an answer is the delay plus the slot's margin, and until 2026-11-29 every
// page of a host with a 500 ms delay went back through the queue (helper-44's audit: 23 fetch
// invocations for 20 pages, 40 % of the politeness bound).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crawl, openSession } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { MAX_IN_PROCESS_WAIT_MS } from '../../shared/stages/politeness/host-turns.ts';
import { linkPage, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';

const PAGES = Array.from({ length: 10 }, (_, i) => `/p${i}`);

describe('a short politeness delay on a fast site', () => {
  const env = useEmulatorAndSite();

  it('is waited for in the invocation, not through the queue, and every gap keeps it', async () => {
    const { site } = env;
    site.route('/robots.txt', { status: 404, body: '' });
    site.route('/', { body: linkPage('Home', PAGES) });
    for (const p of PAGES) site.route(p, { body: linkPage(p) });
    const session = await openSession(
      parseConfig({
        name: uniqueCrawlName('short-wait'),
        startUrls: [`${site.url}/`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: MAX_IN_PROCESS_WAIT_MS },
      }),
    );
    await crawl(session);
    const pages = site.requests.filter((r) => r.path.startsWith('/p')).map((r) => r.at);
    assert.equal(pages.length, PAGES.length);
    const all = site.requests.map((r) => r.at).sort((a, b) => a - b);
    const gaps = all.slice(1).map((t, i) => t - (all[i] ?? 0));
    assert.ok(Math.min(...gaps) >= MAX_IN_PROCESS_WAIT_MS, `gaps ${gaps.join(', ')}`);
    const { invocations } = session.runner.stats.fetch;
    console.log(`fetch invocations: ${invocations} for ${all.length} requests; gaps ${gaps.join(', ')} ms`);
    // The start page's and the linked pages' (each batch of new URLs may start one): not one a page.
    assert.ok(invocations <= 4, `${invocations} fetch invocations for ${PAGES.length} pages`);
  });
});
