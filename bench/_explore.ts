import { startEmulator, useEmulatorEnv } from '../cli/emulator.ts';
import { crawl, documents, openSession, urlStates } from '../cli/session.ts';
import { parseConfig } from '../shared/config.ts';
import { requestCounts, resetRequestCounts } from '../shared/aws/request-counter.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';

const emu = await startEmulator();
useEmulatorEnv(emu.endpoint);
const site = await startSiteServer({ root: '/work/shared/corpora/site' });
try {
  const config = parseConfig({ name: 'explore-1', startUrls: [`${site.url}/doc/html/index.html`], scope: { underStartPath: true }, fetch: { allowPrivateNetworks: true } });
  const session = await openSession(config);
  resetRequestCounts();
  const t0 = performance.now();
  await crawl(session);
  const secs = (performance.now() - t0) / 1000;
  const docs = []; for await (const d of documents(session)) docs.push(d);
  const states: Record<string, number> = {};
  for await (const u of urlStates(session)) states[String(u.state)] = (states[String(u.state)] ?? 0) + 1;
  console.log({ secs, docs: docs.length, states, gets: site.requests.length });
  console.log(JSON.stringify(requestCounts, null, 1));
  console.log(JSON.stringify(session.runner.stats, null, 1));
} finally { await site.close(); await emu.stop(); }
