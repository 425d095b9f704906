// The SSRF guard through the whole pipeline (issue #4 part 8): without fetch.allowPrivateNetworks no
// request reaches a loopback, private, link-local, unique-local or unspecified address — start URLs,
// fetch.resolve overrides and redirect hops alike. The "public" host is reached through a loopback
// forward proxy (fetch.proxy), which also shows the proxy support end to end.
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { stageStats } from '../../shared/stages/logger.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

type UrlState = Record<string, unknown>;

interface Proxy {
  port: number;
  /** absolute request targets the proxy was asked for */
  targets: string[];
  close(): Promise<void>;
}

/** A forward proxy (RFC 9112 absolute-form) that sends every request, whatever its host, to `site`. */
async function startProxy(site: SiteServer): Promise<Proxy> {
  const targets: string[] = [];
  const server = http.createServer((req, res) => {
    targets.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://invalid');
    const upstream = http.request(
      {
        host: '127.0.0.1',
        port: site.port,
        path: `${url.pathname}${url.search}`,
        method: req.method,
        headers: req.headers,
        // A connection per request: a kept one can race the site's keep-alive close into a 502.
        agent: false,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    targets,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function run(input: Omit<CrawlConfigInput, 'name'>) {
  const session = await openSession(parseConfig({ name: uniqueCrawlName('ssrf'), ...input }));
  const fetchedBefore = stageStats.fetched ?? 0;
  await crawl(session);
  const fetched = (stageStats.fetched ?? 0) - fetchedBefore;
  const states: UrlState[] = [];
  for await (const u of urlStates(session)) states.push(u);
  const docs: Record<string, unknown>[] = [];
  for await (const d of documents(session)) docs.push(d);
  return { states, docs, fetched };
}

const refused = (u: UrlState | undefined) => [u?.state, u?.errorKind, u?.errorCode];

describe('SSRF guard through the pipeline', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  let proxy: Proxy;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({});
    proxy = await startProxy(site);
    const page = (t: string) => ({
      body: `<html><head><title>${t}</title></head><body><p>${t}</p></body></html>`,
    });
    site.route('/', page('Home'));
    site.route('/start', page('Public page'));
    site.route('/secret', page('Secret'));
    site.route('/robots.txt', { status: 302, headers: { location: 'http://169.254.169.254/robots.txt' } });
    site.route('/to-metadata', {
      status: 302,
      headers: { location: 'http://169.254.169.254/latest/meta-data/' },
    });
    site.route('/to-loopback', {
      status: 302,
      headers: { location: `http://127.0.0.1:${site.port}/secret` },
    });
    site.route('/to-mapped', {
      status: 302,
      headers: { location: `http://[::ffff:127.0.0.1]:${site.port}/secret` },
    });
  });
  after(async () => {
    await proxy?.close();
    await site?.close();
    await emu?.stop();
  });

  it('a loopback site without allowPrivateNetworks: every URL refused, zero requests reach it', async () => {
    const p = site.port;
    const startUrls = [
      `http://127.0.0.1:${p}/`,
      `http://localhost:${p}/a`,
      `http://[::ffff:127.0.0.1]:${p}/b`,
      `http://0.0.0.0:${p}/c`,
      `http://public.example:${p}/d`, // fetch.resolve points it at loopback: still refused
      'http://169.254.169.254/latest/meta-data/',
      `http://10.0.0.1:${p}/e`,
      'http://[fd00::1]/f',
    ];
    const { states, fetched } = await run({
      startUrls,
      fetch: { resolve: { 'public.example': '127.0.0.1' }, timeoutMs: 3000 },
    });
    assert.equal(states.length, startUrls.length);
    for (const u of states)
      assert.deepEqual(refused(u), ['error', 'permanent', 'private-address'], String(u.url));
    assert.equal(site.requests.length, 0, 'no request reached the loopback site');
    assert.equal(fetched, 0, 'and the summary counts none as fetched (it said "8 fetched")');
  });

  it('the same site with allowPrivateNetworks: true is fetched (the refusal above was the guard)', async () => {
    const { states } = await run({ startUrls: [`${site.url}/`], fetch: { allowPrivateNetworks: true } });
    assert.equal(states.find((u) => u.url === `${site.url}/`)?.state, 'indexed');
    assert.equal(site.requests.filter((r) => r.path === '/').length, 1);
    site.requests.length = 0;
  });

  it("with allowPrivateNetworks: true, the crawl's own emulator is still refused (a link to its dashboard read its secrets)", async () => {
    const endpoint = process.env.AWS_ENDPOINT_URL ?? '';
    assert.match(endpoint, /^http:\/\/(127\.0\.0\.1|localhost):\d+/);
    site.route('/links-emulator', {
      body: `<html><head><title>E</title></head><body><p>E</p><a href="${endpoint}/moto-api/">dashboard</a></body></html>`,
    });
    // Host names only (any port): the emulator's port on 127.0.0.1 is in scope, so only the guard stops it.
    const { states } = await run({
      startUrls: [`${site.url}/links-emulator`],
      scope: { sameHostAndScheme: false },
      fetch: { allowPrivateNetworks: true },
    });
    const dashboard = states.find((u) => String(u.url).startsWith(endpoint));
    assert.deepEqual(
      refused(dashboard),
      ['error', 'permanent', 'private-address'],
      JSON.stringify(dashboard),
    );
    assert.match(String(dashboard?.note), /the crawl's AWS endpoint/);
    assert.equal(states.find((u) => u.url === `${site.url}/links-emulator`)?.state, 'indexed');
  });

  it('redirect hops from a public host to loopback or 169.254.169.254 are refused; the proxy carries the rest', async () => {
    const paths = ['/start', '/to-metadata', '/to-loopback', '/to-mapped'];
    const { states, docs } = await run({
      startUrls: paths.map((p) => `http://public.test${p}`),
      discovery: false,
      // Offsite targets are in scope here, so the SSRF guard is the only thing that stops them.
      scope: { followOffsite: true, sameHostAndScheme: false },
      // the guard resolves public.test itself before asking the proxy (a public address, never dialled)
      fetch: { proxy: { host: '127.0.0.1', port: proxy.port }, resolve: { 'public.test': '93.184.215.14' } },
    });
    const byUrl = new Map(states.map((u) => [u.url as string, u]));
    assert.equal(byUrl.get('http://public.test/start')?.state, 'indexed');
    assert.equal(docs.find((d) => d.url === 'http://public.test/start')?.title, 'Public page');
    for (const p of ['/to-metadata', '/to-loopback', '/to-mapped']) {
      assert.equal(byUrl.get(`http://public.test${p}`)?.state, 'ignored', p);
      assert.match(String(byUrl.get(`http://public.test${p}`)?.note), /^redirected to /);
    }
    const hops = states.filter((u) => !(u.url as string).startsWith('http://public.test/'));
    assert.equal(hops.length, 3);
    for (const u of hops) {
      assert.deepEqual(refused(u), ['error', 'permanent', 'private-address'], String(u.url));
      assert.equal(u.queue, 'redir');
    }
    // Everything the proxy was asked for is on the public host, at the address the guard checked
    // (fetch.resolve's; the proxy resolving the name again could go elsewhere); the site never served /secret.
    assert.ok(proxy.targets.length >= 5);
    assert.ok(
      proxy.targets.every((t) => t.startsWith('http://93.184.215.14/')),
      proxy.targets.join(' '),
    );
    assert.equal(site.requests.filter((r) => r.path === '/secret').length, 0);
  });
});
