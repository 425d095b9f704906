/**
 * HTTPS sites a few round trips away. Loopback connects at once, so a real network's handshake is
 * made real here: each site is a real TLS server (test/fixtures/tls, trusted in this process only)
 * behind a TCP front that holds every new connection's first bytes for HANDSHAKE_MS, so the TLS
 * handshake takes that long, as DNS, TCP and TLS take a few round trips on the internet.
 * What this pins down:
 * - a fetch that connects over TLS and then sends nothing (its politeness turn missed or not due)
 *   leaves the process alive: the TCP socket was destroyed under its TLS socket before, and Node
 *   (20 and 24) crashed in SSL_read when the server's session ticket arrived;
 * - the same for a deadline hit mid-body over TLS;
 * - a polite host whose handshake takes longer than the slot's 50 ms jitter is fetched, one page a
 *   turn (before, every slot was missed while connecting and its URLs went back for ever);
 * - several such hosts in one invocation keep their pace, every gap at least the wait.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { crawl, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { fetchUrl } from '../../shared/net/fetcher.ts';
import { depsFromEnv } from '../../shared/stages/deps.ts';
import { runFetchStage } from '../../shared/stages/fetch-stage.ts';
import { sendTasks } from '../../shared/stages/send-tasks.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { fetchOptions } from '../helpers/fetch-options.ts';
import { urlTask } from '../helpers/tasks.ts';
import { startHandshakeFront, TLS_FIXTURE, trustTlsFixture } from '../helpers/tls-front.ts';

const HANDSHAKE_MS = 150;
const WAIT_MS = 1000;

interface TlsSite {
  port: number;
  /** Date.now() of each page request (robots.txt not counted), and the connections opened */
  arrivals: { path: string; at: number }[];
  readonly connections: number;
  close(): void;
}

/** A TLS site behind a front that delays every connection's first bytes (the handshake) by `delayMs`. */
async function startTlsSite(delayMs: number, onRequest?: (res: ServerResponse) => boolean): Promise<TlsSite> {
  const arrivals: { path: string; at: number }[] = [];
  const server = https.createServer(TLS_FIXTURE, (req, res) => {
    if (req.url === '/robots.txt') return res.writeHead(404).end();
    arrivals.push({ path: req.url ?? '', at: Date.now() });
    if (onRequest?.(res)) return;
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><title>${req.url}</title></html>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const front = await startHandshakeFront((server.address() as AddressInfo).port, delayMs);
  return {
    port: front.port,
    arrivals,
    get connections() {
      return front.connections;
    },
    close() {
      front.close();
      server.closeAllConnections();
      server.close();
    },
  };
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - (times[i] as number));

describe('HTTPS sites a few round trips away', () => {
  let emu: TestEmulator;
  let untrust: (() => void) | null = null;

  before(async () => {
    // The fixture's certificate is trusted in this process only, as a site's real CA would be.
    untrust = trustTlsFixture();
    assert.ok(untrust, 'Node sets its default CAs (22.15, 24.5 and later)');
    emu = await startTestEmulator();
  });
  after(async () => {
    untrust?.();
    await emu?.stop();
  });

  it('a TLS connection whose request is not sent, or whose deadline passes mid-body, closes cleanly', async () => {
    const dripping = new Set<ServerResponse>();
    const site = await startTlsSite(0, (res) => {
      if (!dripping.size) return false;
      res.writeHead(200, { 'content-type': 'text/html' });
      const timer = setInterval(() => res.write('<p>more</p>'.repeat(50)), 10);
      res.on('close', () => clearInterval(timer));
      return true;
    });
    try {
      const opts = fetchOptions({ maxBytes: 10 * 1024 * 1024, resolve: { 'a.tls.test': '127.0.0.1' } });
      const url = `https://a.tls.test:${site.port}/page.html`;
      // Connected, then the turn: missed (late) or not due; nothing is sent either way.
      for (let i = 0; i < 10; i++) {
        const late = await fetchUrl(url, { ...opts, turn: async () => ({ sendBy: Date.now() - 1 }) });
        assert.equal(late.kind, 'late');
        const notDue = await fetchUrl(url, { ...opts, turn: async () => ({ requeueSeconds: 3 }) });
        assert.deepEqual(notDue, { kind: 'not-due', requeueSeconds: 3 });
        // the server's session tickets arrive after the handshake
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(site.arrivals.length, 0, 'no request was sent');
      assert.equal(site.connections, 20);
      // An AWS failure while taking the turn is the caller's, thrown, not the site's error.
      await assert.rejects(
        fetchUrl(url, {
          ...opts,
          turn: async () => {
            throw new Error('slot write failed');
          },
        }),
        /slot write failed/,
      );
      // A deadline in the middle of a TLS body that keeps coming.
      dripping.add({} as never);
      for (let i = 0; i < 3; i++) {
        const out = await fetchUrl(url, { ...opts, timeoutMs: 300 });
        assert.equal(out.kind, 'error');
        assert.equal(out.kind === 'error' && out.code, 'timeout');
      }
      await new Promise((r) => setTimeout(r, 100));
      // Still alive, and a plain fetch over TLS works.
      dripping.clear();
      const ok = await fetchUrl(url, opts);
      assert.equal(ok.kind, 'ok');
    } finally {
      site.close();
    }
  });

  it(`a lone polite host with a ${HANDSHAKE_MS} ms handshake is fetched a page a turn`, async () => {
    const site = await startTlsSite(HANDSHAKE_MS);
    try {
      const base = `https://lone.tls.test:${site.port}`;
      const config = parseConfig({
        name: uniqueCrawlName('tls-lone'),
        startUrls: [`${base}/0.html`],
        fetch: {
          allowPrivateNetworks: true,
          waitBetweenRequestsMs: WAIT_MS,
          resolve: { 'lone.tls.test': '127.0.0.1' },
        },
      });
      await openSession(config);
      const deps = depsFromEnv();
      await sendTasks(
        deps,
        [0, 1, 2, 3].map((i) => urlTask(`${base}/${i}.html`)),
      );
      // One fetcher a turn, as the wake-up calls start them on AWS.
      const fetched: number[] = [];
      while (fetched.reduce((a, b) => a + b, 0) < 4 && fetched.length < 9) {
        const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
        fetched.push(summary.fetched);
        const due = summary.wakeAt ?? Date.now();
        await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now()) + 300));
      }
      // The first pass's turn is robots.txt's (it takes one as a page does), then a page a pass.
      // Before, every slot was missed while connecting and no page was ever fetched. A busy machine
      // can still miss a turn now and then (a pass fetching nothing): the test allows a few.
      assert.equal(fetched[0], 0, "the first pass's turn is robots.txt's");
      assert.ok(
        fetched.every((n) => n <= 1) && fetched.reduce((a, b) => a + b, 0) === 4,
        `one page a pass at most, four in all: ${fetched}`,
      );
      // A loaded machine misses turns now and then (this file failed clean-clone CI runs under
      // load on 2026-11-26 and 2026-11-29); up to four fit the nine passes.
      const missed = fetched.slice(1).filter((n) => n === 0).length;
      assert.ok(missed <= 4, `the handshake missed ${missed} turns: ${fetched}`);
      const times = site.arrivals.map((a) => a.at);
      assert.equal(times.length, 4);
      for (const gap of gaps(times)) assert.ok(gap >= WAIT_MS, `requests ${gap} ms apart`);
      // robots.txt and the passes' pages over one connection (keep-alive, as in a warm container);
      // a missed turn closes its connection (nothing was sent on it).
      assert.ok(site.connections <= 1 + missed, `${site.connections} handshakes, ${missed} turns missed`);
    } finally {
      site.close();
    }
  });

  it('several such hosts in one invocation: every page, every gap at least the wait', async () => {
    const HOSTS = 5;
    const PAGES = 4;
    const sites = await Promise.all(Array.from({ length: HOSTS }, () => startTlsSite(HANDSHAKE_MS)));
    try {
      const names = sites.map((_, i) => `h${i}.tls.test`);
      const config = parseConfig({
        name: uniqueCrawlName('tls-many'),
        startUrls: sites.map((s, i) => `https://${names[i]}:${s.port}/0.html`),
        fetch: {
          allowPrivateNetworks: true,
          waitBetweenRequestsMs: WAIT_MS,
          resolve: Object.fromEntries(names.map((n) => [n, '127.0.0.1'])),
        },
      });
      await openSession(config);
      const deps = depsFromEnv();
      await sendTasks(
        deps,
        sites.flatMap((s, i) =>
          Array.from({ length: PAGES }, (_, p) => urlTask(`https://${names[i]}:${s.port}/${p}.html`)),
        ),
      );
      const summary = await runFetchStage(deps, { deadline: Date.now() + 60_000 });
      // A busy machine can miss a turn (its URL goes back to the queue, delayed): a second
      // invocation, as its wake-up call would start, takes what was put back.
      let fetched = summary.fetched;
      for (let wakeAt = summary.wakeAt, i = 0; fetched < HOSTS * PAGES && i < 3; i++) {
        await new Promise((r) => setTimeout(r, Math.max(0, (wakeAt ?? 0) - Date.now()) + 1000));
        const next = await runFetchStage(deps, { deadline: Date.now() + 60_000 });
        fetched += next.fetched;
        wakeAt = next.wakeAt;
      }
      assert.equal(fetched, HOSTS * PAGES, `fetched ${summary.fetched}, put back ${summary.requeued}`);
      const missed = HOSTS * PAGES - summary.fetched;
      // Most turns are the first invocation's; a loaded machine misses a few (put back, delayed).
      assert.ok(missed <= HOSTS, `the first invocation missed ${missed} turns`);
      for (const site of sites) {
        const times = site.arrivals.map((a) => a.at);
        assert.equal(times.length, PAGES);
        for (const gap of gaps(times)) assert.ok(gap >= WAIT_MS, `requests ${gap} ms apart`);
      }
      // One handshake a host (keep-alive), and one after each missed turn, which closes its
      // connection: those the first invocation put back (`missed`) and those it took again itself,
      // which `missed` does not count. A loaded machine misses several (clean-clone CI runs of
      // 2026-11-29 saw 6 and 9 for 5 hosts). Without keep-alive it is a handshake a page: 20.
      const connections = sites.reduce((n, s) => n + s.connections, 0);
      assert.ok(connections <= (HOSTS * PAGES) / 2, `${connections} connections for ${HOSTS * PAGES} pages`);
    } finally {
      for (const s of sites) s.close();
    }
  });
});

describe('fetch.caCertificates: a site whose CA is its own', () => {
  let emu: TestEmulator;
  let site: TlsSite;

  before(async () => {
    // Nothing trusted in-process here: the fixture's CA reaches the fetcher through the config only.
    emu = await startTestEmulator();
    site = await startTlsSite(0);
  });
  after(async () => {
    site?.close();
    await emu?.stop();
  });

  const opts = fetchOptions({ resolve: { 'intranet.tls.test': '127.0.0.1' } });

  it('is refused as an unknown CA without the config, fetched with it', async () => {
    const url = `https://intranet.tls.test:${site.port}/a.html`;
    const refused = await fetchUrl(url, opts);
    assert.equal(refused.kind, 'error');
    assert.equal(refused.kind === 'error' && refused.code, 'tls-error');
    const ok = await fetchUrl(url, { ...opts, caCertificates: [TLS_FIXTURE.cert] });
    assert.equal(ok.kind, 'ok');
    assert.equal(ok.kind === 'ok' && ok.status, 200);
    // The name is still checked against the certificate: another name with the same CA is refused.
    const otherName = await fetchUrl(`https://intranet.example:${site.port}/a.html`, {
      ...opts,
      resolve: { 'intranet.example': '127.0.0.1' },
      caCertificates: [TLS_FIXTURE.cert],
    });
    assert.equal(otherName.kind === 'error' && otherName.code, 'tls-error');
  });

  it('a crawl of the site without its CA: each page a permanent tls-error, robots.txt fresh or not', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('tls-refused'),
      startUrls: ['a', 'b'].map((p) => `https://intranet.tls.test:${site.port}/${p}.html`),
      discovery: false,
      fetch: { allowPrivateNetworks: true, resolve: { 'intranet.tls.test': '127.0.0.1' } },
    });
    const session = await openSession(config);
    await crawl(session);
    const states = [];
    for await (const u of urlStates(session)) states.push(u);
    // robots.txt met the certificate first: the pages got the host's error, not a temporary
    // robots-unavailable (which a cached robots.txt would not have given them).
    assert.deepEqual(
      states.map((u) => [new URL(u.url as string).pathname, u.state, u.errorKind, u.errorCode]).sort(),
      [
        ['/a.html', 'error', 'permanent', 'tls-error'],
        ['/b.html', 'error', 'permanent', 'tls-error'],
      ],
    );
    assert.match(String(states[0]?.note), /secure connection when robots\.txt was read/);
  });

  it('an IP-address URL: the certificate must name that IP (not "localhost")', async () => {
    const pem = (f: string) => readFileSync(new URL(`../fixtures/tls/${f}`, import.meta.url), 'utf8');
    const fetchWith = async (name: 'ip' | 'localhost') => {
      const tlsFiles = { cert: pem(`${name}-cert.pem`), key: pem(`${name}-key.pem`) };
      const server = https.createServer(tlsFiles, (_req, res) => res.writeHead(200).end('<title>ip</title>'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const { port } = server.address() as AddressInfo;
        return await fetchUrl(`https://127.0.0.1:${port}/`, { ...opts, caCertificates: [tlsFiles.cert] });
      } finally {
        server.closeAllConnections();
        server.close();
      }
    };
    const named = await fetchWith('ip');
    assert.equal(named.kind === 'ok' && named.status, 200, JSON.stringify(named));
    // A certificate for localhost only, from a CA the crawl trusts: refused for 127.0.0.1 (before, accepted).
    const other = await fetchWith('localhost');
    assert.equal(other.kind === 'error' && other.code, 'tls-error', JSON.stringify(other));
  });

  it('a leaf signed by a CA the crawl was not given: a tls-error, not a connection error', async () => {
    const pem = (f: string) => readFileSync(new URL(`../fixtures/tls/${f}`, import.meta.url), 'utf8');
    const server = https.createServer(
      { cert: pem('signed-leaf-cert.pem'), key: pem('signed-leaf-key.pem') },
      (_req, res) => res.writeHead(200).end('<title>signed</title>'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const url = `https://signed.tls.test:${port}/`;
      const o = { ...opts, resolve: { 'signed.tls.test': '127.0.0.1' } };
      // Node says UNABLE_TO_VERIFY_LEAF_SIGNATURE: no "CERT" in it, and it was a connection-error.
      const refused = await fetchUrl(url, o);
      assert.equal(refused.kind === 'error' && refused.code, 'tls-error', JSON.stringify(refused));
      assert.equal(
        refused.kind === 'error' && refused.message,
        'unable to verify the first certificate (a private CA: fetch.caCertificates)',
      );
      const ok = await fetchUrl(url, { ...o, caCertificates: [TLS_FIXTURE.cert] });
      assert.equal(ok.kind === 'ok' && ok.status, 200, JSON.stringify(ok));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('the fetch stage reads robots.txt and the pages with the config’s CA', async () => {
    const base = `https://intranet.tls.test:${site.port}`;
    const config = parseConfig({
      name: uniqueCrawlName('tls-ca'),
      startUrls: [`${base}/`],
      fetch: { allowPrivateNetworks: true, resolve: opts.resolve, caCertificates: [TLS_FIXTURE.cert] },
    });
    await openSession(config);
    const deps = depsFromEnv();
    const before = site.arrivals.length;
    await sendTasks(
      deps,
      [1, 2, 3].map((i) => urlTask(`${base}/p${i}.html`)),
    );
    const summary = await runFetchStage(deps, { deadline: Date.now() + 30_000 });
    assert.deepEqual(
      { fetched: summary.fetched, errors: summary.errors },
      { fetched: 3, errors: { permanent: 0, temporary: 0 } },
    );
    assert.equal(site.arrivals.length - before, 3);
  });
});
