/**
 * `trawl crawl` warns about a start URL that led nowhere (cli/commands/start-urls.ts startUrlProblem),
 * following its redirects in scope: a start URL redirected to https is `ignored: redirected to …`
 * and is no problem when its target is a page; the target's error is.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startUrlProblem, startUrlWarnings } from '../../cli/commands/start-urls.ts';
import { parseConfig } from '../../shared/config.ts';
import type { UrlItem } from '../../shared/types.ts';

const states: Record<string, Partial<UrlItem>> = {
  'http://a.test/': { state: 'ignored', note: 'redirected to https://a.test/' },
  'https://a.test/': { state: 'indexed' },
  'http://b.test/': { state: 'ignored', note: 'redirected to https://b.test/' },
  'https://b.test/': { state: 'ignored', note: 'redirected to https://www.b.test/' },
  'https://www.b.test/': { state: 'error', errorCode: 'http-404', note: 'Not Found' },
  'http://c.test/': { state: 'ignored', note: 'redirect target rejected (offsite): http://d.test/' },
  'http://e.test/': { state: 'error', errorCode: 'dns-not-found' },
  'http://loop.test/': { state: 'ignored', note: 'redirected to http://loop.test/' },
};
const lookup = async (url: string) => states[url] as UrlItem | undefined;

describe('the start URL warning', () => {
  it("follows redirects in scope: none for a target that is a page, the target's error otherwise", async () => {
    assert.equal(await startUrlProblem('http://a.test/', lookup), null);
    assert.equal(
      await startUrlProblem('http://b.test/', lookup),
      'redirected to https://www.b.test/, error: http-404: Not Found',
    );
  });
  it('names a redirect out of scope and an error; says nothing of an unknown URL', async () => {
    assert.equal(
      await startUrlProblem('http://c.test/', lookup),
      'ignored: redirect target rejected (offsite): http://d.test/',
    );
    assert.equal(await startUrlProblem('http://e.test/', lookup), 'error: dns-not-found');
    assert.equal(await startUrlProblem('http://unknown.test/', lookup), null);
  });
  it('names a start URL the config itself rejects (never fetched, so no state said it)', async () => {
    const config = parseConfig({
      name: 't',
      startUrls: ['http://a.test/', 'http://a.test/old/'],
      rules: [{ match: { path: '/old/' }, actions: ['ignore'] }],
    });
    assert.deepEqual(await startUrlWarnings(config, async () => undefined), [
      'trawl: warning: start URL http://a.test/old/ led nowhere (the config rejects it: rule 0: ignore)',
    ]);
  });
  it('a start URL moved to another scheme or host names the URL to start at', async () => {
    const config = parseConfig({ name: 't', startUrls: ['http://c.test/'] });
    assert.deepEqual(await startUrlWarnings(config, lookup), [
      'trawl: warning: start URL http://c.test/ led nowhere (ignored: redirect target rejected (offsite): http://d.test/); to crawl the site where it moved, start at http://d.test/',
    ]);
  });
  it('stops on a redirect loop', async () => {
    assert.match(
      (await startUrlProblem('http://loop.test/', lookup)) ?? '',
      /redirected to http:\/\/loop\.test\//,
    );
  });
});
