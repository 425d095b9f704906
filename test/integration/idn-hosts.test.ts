/**
 * Host names written in Unicode (IDN) in the config name the punycode hosts that URLs carry: a
 * `fetch.resolve` key, an `allowPrivateNetworks` entry and a `domain`/`host` rule written as
 * people write the name apply to the crawl of that host. Before, each compared the Unicode text
 * with the punycode host and never matched: the start URL failed as `dns-not-found`, the rule's
 * metadata was never added. A real loopback site, the real pipeline on the emulator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('IDN host names in the config', () => {
  let emu: TestEmulator;
  let site: SiteServer;

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/': { body: '<html><title>Bücher</title><a href="/katalog/café">Katalog</a></html>' },
        '/katalog/caf%C3%A9': { body: '<html><title>Café</title><p>Kaffee</p></html>' },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('fetch.resolve, allowPrivateNetworks and domain/path rules written in Unicode apply', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('idn'),
      startUrls: [`http://BÜCHER.test:${site.port}/`],
      rules: [
        {
          match: { and: [{ domain: 'bücher.test' }, { path: '/katalog/café' }] },
          actions: ['index', 'follow', { addMeta: { name: 'section', value: 'katalog' } }],
        },
      ],
      fetch: { allowPrivateNetworks: ['bücher.test'], resolve: { 'Bücher.test': '127.0.0.1' } },
    });
    const session = await openSession(config);
    await crawl(session);
    const states = await collect(urlStates(session));
    assert.deepEqual(
      states.map((s) => [s.url, s.state]),
      [
        [`http://xn--bcher-kva.test:${site.port}/`, 'indexed'],
        [`http://xn--bcher-kva.test:${site.port}/katalog/caf%C3%A9`, 'indexed'],
      ],
    );
    const docs = await collect(documents(session));
    const cafe = docs.find((d) => String(d.url).endsWith('/katalog/caf%C3%A9'));
    assert.deepEqual(cafe?.meta, { section: 'katalog' });
    assert.deepEqual(docs.find((d) => String(d.url).endsWith(`:${site.port}/`))?.meta, {});
  });
});
