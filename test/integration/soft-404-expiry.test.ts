// Soft-404 detection adapts (scope.traps.soft404): the random-path probe's answer expires after
// 24 h, like robots.txt's. A host probed while it answered 404 for unknown paths, which then starts
// answering 200 "Page not found" (a CMS switch), is probed again by the refresh cycle a day later:
// a page that now answers the soft 404 is an error, its document deleted, not a changed document.
// And back: once the host answers 404 again, the next day's probe forgets the old fingerprint.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';

const HOUR = 3_600_000;
const html = (title: string, body: string) =>
  `<html><head><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

describe('soft-404 probe expiry', () => {
  let emu: TestEmulator;
  let server: http.Server;
  let url = '';
  const requests: string[] = [];
  /** true: unknown paths answer 200 "Page not found" (and /gone404.html is gone) */
  let soft = false;

  before(async () => {
    emu = await startTestEmulator();
    server = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      requests.push(path);
      const page =
        path === '/'
          ? html('Home', '<a href="/about">about</a> <a href="/gone404.html">old</a>')
          : path === '/about'
            ? html('About', '<p>About this site, a page of its own.</p>')
            : path === '/gone404.html' && !soft
              ? html('Old page', '<p>An old page, removed when the site moved to its new CMS.</p>')
              : null;
      if (page !== null) return void res.writeHead(200, { 'content-type': 'text/html' }).end(page);
      if (!soft) return void res.writeHead(404).end('not found');
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(html('Page not found', '<p>Sorry, the page does not exist.</p>'));
    });
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((r) => server?.close(() => r(undefined)));
    await emu?.stop();
  });

  it('a host that starts answering soft 404s is probed again a day later, and its soft 404s are errors', {
    timeout: 240_000,
  }, async () => {
    const config = parseConfig({
      name: uniqueCrawlName('soft404exp'),
      startUrls: [`${url}/`],
      scope: { traps: { soft404: true } },
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1d' },
    });
    const probes = () => requests.filter((r) => r.startsWith('/trawl-probe-')).length;
    const state = async (session: Awaited<ReturnType<typeof openSession>>, path: string) =>
      (await collect(urlStates(session))).find((s) => s.url === `${url}${path}`);
    const docPaths = async (session: Awaited<ReturnType<typeof openSession>>) =>
      (await collect(documents(session))).map((d) => new URL(d.url as string).pathname).sort();

    const first = await openSession(config);
    await crawl(first);
    assert.equal(probes(), 1, 'one probe in the first crawl');
    assert.equal((await state(first, '/gone404.html'))?.state, 'indexed');
    assert.deepEqual(await docPaths(first), ['/', '/about', '/gone404.html']);

    // The site moves to a CMS that answers 200 "Page not found" for unknown paths; the old page is gone.
    soft = true;
    const dayLater = await openSession(config, { now: new Date(Date.now() + 25 * HOUR) });
    await refresh(dayLater);
    assert.equal(probes(), 2, 'the refresh a day later probed the host again, once');
    const probed = await dayLater.hosts.getValue(`soft404#${config.name}#${url}`);
    assert.ok(probed && !probed.endsWith(' none'), `a soft-404 fingerprint stored: ${probed}`);
    // A soft 404 found by a refresh is a permanent error: the document deleted at once, the URL
    // kept in error (seed 001: tried again after maxAge), the deletion in the change feed with its code.
    const deleted = (await readChanges(dayLater)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deleted.map((c) => [new URL(c.url).pathname, c.reason]),
      [['/gone404.html', 'permanent-error: soft-404 (HTTP 200)']],
    );
    const gone = await state(dayLater, '/gone404.html');
    assert.deepEqual([gone?.state, gone?.errorCode], ['error', 'soft-404']);
    assert.equal((await state(dayLater, '/about'))?.state, 'indexed', 'a real page is no soft 404');
    assert.deepEqual(await docPaths(dayLater), ['/', '/about'], "the soft 404's document is deleted");

    // Back to real 404s: the next day's probe finds none, and the answer of the old one is dropped.
    soft = false;
    const twoDaysLater = await openSession(config, { now: new Date(Date.now() + 50 * HOUR) });
    await refresh(twoDaysLater);
    assert.equal(probes(), 3, 'probed again the next day');
    const stored = await twoDaysLater.hosts.getValue(`soft404#${config.name}#${url}`);
    assert.match(stored ?? '', /^\d+ none$/, `the host's answer is "no soft 404s" again: ${stored}`);
    assert.equal((await state(twoDaysLater, '/about'))?.state, 'indexed');
  });
});
