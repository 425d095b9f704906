import { startEmulator, useEmulatorEnv } from '../cli/emulator.ts';
import { startSiteServer } from '../test/helpers/site-server.ts';
import { runTrawl } from './trawl-run.ts';

const emu = await startEmulator();
useEmulatorEnv(emu.endpoint);
const site = await startSiteServer({ root: '/work/shared/corpora/site' });
try {
  const r = await runTrawl('boost', { name: 'explore-2', startUrls: [`${site.url}/doc/html/index.html`], scope: { underStartPath: true }, fetch: { allowPrivateNetworks: true } });
  console.log(JSON.stringify({ ...r, documentUrls: r.documentUrls.length }, null, 1));
} finally { await site.close(); await emu.stop(); }
