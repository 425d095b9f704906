/**
 * `trawl clear-errors` (seed 002 "Clear Error Cache") and documents: a URL in temporary error
 * keeps its document (seed 001), and clearing the error must not drop it behind the change feed's
 * back. It stays in the index until the URL is fetched again: a 404 then deletes it through the
 * feed, a page that answers again keeps it. Real emulator, real handlers, a site on loopback
 * whose page resets its connections.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readChanges } from '../../cli/change-feed.ts';
import { clearErrors, crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { type CrawlConfigInput, parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { linkPage, useEmulatorAndSite } from '../helpers/crawl-env.ts';
import { uniqueCrawlName } from '../helpers/emulator.ts';
import type { Route } from '../helpers/site-server.ts';

const reset: Route = { handler: (req) => req.socket.destroy() };

describe('clear-errors and the documents of URLs in temporary error', () => {
  const env = useEmulatorAndSite({
    routes: {
      '/robots.txt': { status: 404, body: '' },
      '/': { body: linkPage('Home', ['/p', '/q']) },
    },
  });

  it('keeps the document until the URL is fetched again: a 404 deletes it through the feed, a 200 keeps it', async () => {
    env.site.route('/p', { body: linkPage('P') });
    env.site.route('/q', { body: linkPage('Q') });
    const input: CrawlConfigInput = {
      name: uniqueCrawlName('clearerr'),
      startUrls: [`${env.site.url}/`],
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '1h', maxTemporaryErrors: 3 },
    };
    const config = parseConfig(input);
    await crawl(await openSession(config));
    // Two hours on, both pages reset their connections: temporary errors, documents kept.
    env.site.route('/p', reset);
    env.site.route('/q', reset);
    const later = await openSession(config, { now: new Date(Date.now() + 2 * 3_600_000) });
    await refresh(later);
    const state = async (path: string) =>
      (await collect(urlStates(later))).find((u) => new URL(u.url as string).pathname === path);
    assert.equal((await state('/p'))?.errorKind, 'temporary');
    const paths = async () =>
      (await collect(documents(later))).map((d) => new URL(d.url as string).pathname).sort();
    assert.deepEqual(await paths(), ['/', '/p', '/q'], 'a temporary error keeps the document');

    assert.equal(await clearErrors(later), 2);
    assert.deepEqual(await paths(), ['/', '/p', '/q'], 'clearing the error keeps the document');
    assert.equal((await state('/p'))?.state, 'pending');
    const deletesBefore = (await readChanges(later)).filter((c) => c.type === 'delete');
    assert.deepEqual(deletesBefore, [], 'nothing was deleted, so the feed says nothing');

    // The next crawl fetches both again: /p is gone for good, /q answers again.
    env.site.route('/p', { status: 404, body: 'gone' });
    env.site.route('/q', { body: linkPage('Q') });
    await crawl(later);
    assert.deepEqual(await paths(), ['/', '/q']);
    const deletes = (await readChanges(later)).filter((c) => c.type === 'delete');
    assert.deepEqual(
      deletes.map((d) => [new URL(d.url).pathname, d.reason]),
      [['/p', 'permanent-error: http-404 (HTTP 404)']],
    );
    assert.equal((await state('/q'))?.state, 'indexed');
    assert.equal((await state('/q'))?.temporaryErrors, 0);
  });

  it('a broken link cleared and fetched again still names the page that links to it', async () => {
    // `trawl urls --state error` lists a site's broken links with the page each is on (foundOn).
    env.site.route('/b', { body: linkPage('B', ['/broken']) });
    env.site.route('/broken', { status: 404, body: 'gone' });
    const config = parseConfig({
      name: uniqueCrawlName('clearerr-found'),
      startUrls: [`${env.site.url}/b`],
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);
    await crawl(session);
    const broken = async () =>
      (await collect(urlStates(session))).find((u) => new URL(u.url as string).pathname === '/broken');
    assert.equal((await broken())?.foundOn, `${env.site.url}/b`);
    assert.equal(await clearErrors(session), 1);
    await crawl(session);
    assert.deepEqual([(await broken())?.state, (await broken())?.foundOn], ['error', `${env.site.url}/b`]);
  });
});
