/**
 * What most pipeline suites start with: the embedded emulator and one loopback site, started
 * before the suite's tests and stopped after them; and a small HTML page with links.
 */
import { after, before } from 'node:test';
import { startTestEmulator, type TestEmulator } from './emulator.ts';
import { type Route, type SiteServer, type SiteServerOptions, startSiteServer } from './site-server.ts';

/** Call inside a `describe`: its `emu` and `site` are there once the suite's `before` has run. */
export function useEmulatorAndSite(opts: SiteServerOptions = {}): { emu: TestEmulator; site: SiteServer } {
  const env = {} as { emu: TestEmulator; site: SiteServer };
  before(async () => {
    env.emu = await startTestEmulator();
    env.site = await startSiteServer(opts);
  });
  after(async () => {
    await env.site?.close();
    await env.emu?.stop();
  });
  return env;
}

/** A four-page site the refresh suites share: a home page linking to /a, /b and /private/c; no robots.txt. */
export function fourPageRoutes(): Record<string, Route> {
  return {
    '/': { body: linkPage('Home', ['/a', '/b', '/private/c']) },
    '/a': { body: linkPage('A') },
    '/b': { body: linkPage('B') },
    '/private/c': { body: linkPage('C') },
    '/robots.txt': { status: 404, body: '' },
  };
}

/** An HTML page titled `title`, its text `title text`, with one `<a>` per link. */
export const linkPage = (title: string, links: string[] = []): string =>
  `<!doctype html><html><head><title>${title}</title></head><body><p>${title} text</p>${links
    .map((l) => `<a href="${l}">${l}</a>`)
    .join('')}</body></html>`;
