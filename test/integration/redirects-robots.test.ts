// Redirects (SMILA: targets normalized and checked again, sent to the redir source, loops and
// chains stopped) and robots.txt (RFC 9309: Disallow, Crawl-delay, Sitemap lines; Rogue mode)
// through the whole pipeline.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CrawlSession, crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type RequestLog, type SiteServer, startSiteServer } from '../helpers/site-server.ts';

type UrlState = Record<string, unknown>;

async function run(input: Omit<CrawlConfigInput, 'name'>) {
  const config = parseConfig({ name: uniqueCrawlName('redir'), ...input });
  const session: CrawlSession = await openSession(config);
  await crawl(session);
  const states = new Map<string, UrlState>();
  for await (const u of urlStates(session)) states.set(new URL(u.url as string).pathname, u);
  const docs = new Map<string, Record<string, unknown>>();
  for await (const d of documents(session)) docs.set(new URL(d.url as string).pathname, d);
  return { states, docs };
}

const requested = (log: RequestLog[], path: string) => log.filter((r) => r.path === path).length;
const redirect = (location: string) => ({ status: 302, headers: { location } });
const page = (title: string) => ({
  body: `<html><head><title>${title}</title></head><body><p>${title}</p></body></html>`,
});

describe('redirects and robots.txt through the pipeline', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let other: SiteServer;
  let slow: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    [site, other, slow] = await Promise.all([startSiteServer({}), startSiteServer({}), startSiteServer({})]);
    site.route('/robots.txt', {
      headers: { 'content-type': 'text/plain' },
      body: 'User-agent: *\nDisallow: /private/\n',
    });
    site.route('/loop-a', redirect('/loop-b'));
    site.route('/loop-b', redirect('/loop-a'));
    site.route('/self', redirect('/self'));
    for (let i = 0; i < 10; i++) site.route(`/hop/${i}`, redirect(`/hop/${i + 1}`));
    site.route('/away', redirect(`${other.url}/landing`));
    site.route('/moved', { status: 301, headers: { location: '/new-place?b=2&a=1#frag' } });
    site.route('/new-place', page('New place'));
    site.route('/to-private', redirect('/private/secret'));
    site.route('/private/secret', page('Secret'));
    site.route('/private/page', page('Private page'));
    site.route('/to-excluded', redirect('/excluded/x'));
    site.route('/excluded/x', page('Excluded'));
    other.route('/landing', page('Elsewhere'));
    slow.route('/robots.txt', {
      headers: { 'content-type': 'text/plain' },
      body: `User-agent: trawl\nCrawl-delay: 0.5\nAllow: /\n\nSitemap: ${slow.url}/sitemap.xml\nSitemap: /more/sitemap.xml\n`,
    });
    const locs = [1, 2, 3, 4, 5].map((i) => `<url><loc>${slow.url}/c/${i}</loc></url>`).join('');
    slow.route('/sitemap.xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`,
    });
    for (let i = 1; i <= 5; i++) slow.route(`/c/${i}`, page(`Slow ${i}`));
    // A relative Sitemap line (common, though the protocol asks for a full URL): resolved against
    // the robots.txt's URL. It used to be dropped, and /c/6 was never found.
    slow.route('/more/sitemap.xml', {
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${slow.url}/c/6</loc></url></urlset>`,
    });
    slow.route('/c/6', page('Slow 6'));
  });
  after(async () => {
    await Promise.all([site?.close(), other?.close(), slow?.close()]);
    await emu?.stop();
  });

  it('redirects: loops, long chains, out-of-scope and excluded targets stopped; in-scope targets indexed', async () => {
    const paths = [
      '/loop-a',
      '/self',
      '/hop/0',
      '/away',
      '/moved',
      '/to-private',
      '/private/page',
      '/to-excluded',
    ];
    const fetchedBefore = stageStats.fetched ?? 0;
    const { states, docs } = await run({
      startUrls: paths.map((p) => `${site.url}${p}`),
      discovery: false,
      scope: { exclude: ['/excluded/'] },
      fetch: { allowPrivateNetworks: true, maxRedirects: 3 },
    });
    // "fetched" is what the site was asked (robots.txt aside): not the URLs robots.txt stopped.
    const pages = site.requests.filter((r) => r.path !== '/robots.txt').length;
    assert.equal((stageStats.fetched ?? 0) - fetchedBefore, pages);
    const err = (p: string) => [states.get(p)?.state, states.get(p)?.errorKind, states.get(p)?.errorCode];
    assert.deepEqual(err('/loop-b'), ['error', 'permanent', 'redirect-loop']);
    assert.equal(states.get('/loop-a')?.note, `redirected to ${site.url}/loop-b`);
    assert.deepEqual(err('/self'), ['error', 'permanent', 'redirect-loop']);
    assert.equal(requested(site.requests, '/self'), 1);
    // maxRedirects 3: /hop/0 → 1 → 2 → 3 are followed, the fourth redirect is the error.
    assert.deepEqual(err('/hop/3'), ['error', 'permanent', 'too-many-redirects']);
    assert.equal(requested(site.requests, '/hop/4'), 0);
    // A redirect leaving the start host is checked against scope again and not fetched.
    assert.equal(states.get('/away')?.state, 'ignored');
    assert.match(String(states.get('/away')?.note), /redirect target rejected/);
    assert.equal(other.requests.length, 0, 'the out-of-scope host saw no request');
    assert.equal(requested(site.requests, '/excluded/x'), 0);
    assert.match(String(states.get('/to-excluded')?.note), /redirect target rejected/);
    // In scope: normalized (fragment dropped), fetched from the redir source, indexed.
    const target = [...states.values()].find((u) => String(u.url).includes('/new-place'));
    assert.equal(target?.url, `${site.url}/new-place?b=2&a=1`);
    assert.deepEqual([target?.state, target?.queue, target?.httpStatus], ['indexed', 'redir', 200]);
    assert.equal(docs.get('/new-place')?.title, 'New place');
    // robots.txt applies to redirect targets too; disallowed URLs are never requested.
    for (const p of ['/private/secret', '/private/page']) {
      // The rule that kept it out named (helper-46: the note said only "robots.txt").
      assert.deepEqual(
        [states.get(p)?.state, states.get(p)?.note],
        ['ignored', 'robots.txt: Disallow: /private/'],
        p,
      );
      assert.equal(requested(site.requests, p), 0, `${p} was requested`);
    }
    assert.equal(states.get('/private/secret')?.queue, 'redir');
  });

  it('a refresh continues a redirect chain: the hop past maxRedirects stays an error, its target unfetched', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('redirchain'),
      startUrls: [`${site.url}/hop/5`],
      discovery: false,
      fetch: { allowPrivateNetworks: true, maxRedirects: 2 },
      refresh: { maxAge: '48h' },
    });
    const first = await openSession(config);
    await crawl(first);
    const states = new Map<string, UrlState>();
    for await (const u of urlStates(first)) states.set(new URL(u.url as string).pathname, u);
    // /hop/5 → 6 → 7: the third redirect is one too many.
    assert.deepEqual(
      [states.get('/hop/7')?.state, states.get('/hop/7')?.errorCode],
      ['error', 'too-many-redirects'],
    );
    const hop7 = requested(site.requests, '/hop/7');
    // Refreshed, each hop continues the chain it was reached by: /hop/7 redirects one too many
    // again (and, a permanent error on a refresh, is forgotten); it started a chain of its own
    // before, and /hop/8, 9, … were fetched and the end of the chain indexed.
    await refresh(await openSession(config, { now: new Date(Date.now() + 3 * 86_400_000) }));
    assert.equal(requested(site.requests, '/hop/7'), hop7 + 1, 'the hop was refreshed');
    assert.equal(requested(site.requests, '/hop/8'), 0, 'the refreshed hop started a chain of its own');
  });

  it('Rogue mode (respectRobotsTxt: false) fetches what robots.txt disallows', async () => {
    const before = requested(site.requests, '/private/page');
    const { states, docs } = await run({
      startUrls: [`${site.url}/private/page`],
      fetch: { allowPrivateNetworks: true, respectRobotsTxt: false },
    });
    assert.equal(states.get('/private/page')?.state, 'indexed');
    assert.equal(docs.get('/private/page')?.title, 'Private page');
    assert.equal(requested(site.requests, '/private/page'), before + 1);
  });

  it('Crawl-delay is honoured and Sitemap: lines (absolute and relative) feed the crawl', async (t) => {
    const { states } = await run({
      startUrls: [`${slow.url}/c/1`],
      discovery: false,
      fetch: { allowPrivateNetworks: true },
    });
    for (let i = 1; i <= 6; i++) assert.equal(states.get(`/c/${i}`)?.state, 'indexed', `/c/${i}`);
    assert.equal(states.get('/sitemap.xml')?.state, 'followed');
    assert.equal(states.get('/more/sitemap.xml')?.state, 'followed');
    const times = slow.requests
      .filter((r) => r.path !== '/robots.txt')
      .map((r) => r.at)
      .sort((a, b) => a - b);
    const gaps = times.slice(1).map((at, i) => at - times[i]!);
    t.diagnostic(`gaps between requests: ${gaps.join(', ')} ms`);
    assert.ok(Math.min(...gaps) >= 500, `Crawl-delay 0.5 s: min gap ${Math.min(...gaps)} ms`);
    assert.equal(requested(slow.requests, '/robots.txt'), 1, 'robots.txt cached per host');
  });

  it("a robots.txt redirected to another host's: that host's Crawl-delay holds from the redirected request too", async (t) => {
    // helper-44's audit: B's next page came 1.4 s after A's robots.txt request that ended at B's,
    // under B's 2 s Crawl-delay (only the configured wait was kept).
    const [a, b] = await Promise.all([startSiteServer({}), startSiteServer({})]);
    try {
      a.route('/robots.txt', { status: 301, headers: { location: `${b.url}/robots.txt` } });
      a.route('/', page('A'));
      b.route('/robots.txt', { body: 'User-agent: *\nCrawl-delay: 2\n' });
      for (const p of ['/', '/b1', '/b2']) b.route(p, page(`B ${p}`));
      const { states } = await run({
        startUrls: [`${a.url}/`, `${b.url}/`, `${b.url}/b1`, `${b.url}/b2`],
        fetch: { allowPrivateNetworks: true, waitBetweenRequestsMs: 300 },
      });
      assert.equal(states.get('/b2')?.state, 'indexed');
      const times = b.requests.map((r) => r.at).sort((x, y) => x - y);
      const gaps = times.slice(1).map((at, i) => at - (times[i] ?? 0));
      t.diagnostic(`B: ${b.requests.map((r) => r.path).join(' ')}; gaps ${gaps.join(', ')} ms`);
      assert.ok(requested(b.requests, '/robots.txt') >= 2, "A's request ended at B's robots.txt");
      assert.ok(Math.min(...gaps) >= 2000, `Crawl-delay 2 s on B: min gap ${Math.min(...gaps)} ms`);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
