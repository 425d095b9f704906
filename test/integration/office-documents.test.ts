import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crawl, documents, openSession, urlStates } from '../../cli/session.ts';
import { parseConfig } from '../../shared/config.ts';
import { OFFICE_MIME } from '../../shared/crawl/extract/office-zip.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { minimalDocx, minimalXlsx, oleFile } from '../helpers/office-builders.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

describe('Office documents through the pipeline', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const docx = minimalDocx([['Employees book travel'], ['through the portal.']], {
    title: 'Travel policy',
    creator: 'Ada Lovelace',
    modified: '2026-10-01T08:30:00Z',
  });
  const xlsx = minimalXlsx([['Budget', [['Flights', 1250.5]]]]);

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/': {
          body: `<html><head><title>Intranet</title></head><body>
            <a href="/files/policy.docx">policy</a> <a href="/files/budget.xlsx">budget</a>
            <a href="/files/secret.docx">secret</a>
          </body></html>`,
        },
        '/files/policy.docx': { headers: { 'Content-Type': OFFICE_MIME.docx }, body: docx },
        // A download served without its type: known by its parts.
        '/files/budget.xlsx': { headers: { 'Content-Type': 'application/octet-stream' }, body: xlsx },
        '/files/secret.docx': { headers: { 'Content-Type': OFFICE_MIME.docx }, body: oleFile() },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('indexes a linked .docx and .xlsx with their title, text and type; an encrypted one is noted', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('office'),
      startUrls: [`${site.url}/`],
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);

    await crawl(session);

    const docs = new Map((await collect(documents(session))).map((d) => [d.url as string, d]));
    const policy = docs.get(`${site.url}/files/policy.docx`);
    assert.equal(policy?.title, 'Travel policy');
    assert.equal(policy?.content, 'Employees book travel through the portal.');
    assert.equal(policy?.mimeType, OFFICE_MIME.docx);
    assert.equal(policy?.lastModified, '2026-10-01T08:30:00.000Z');
    assert.equal(policy?.size, docx.length);
    const budget = docs.get(`${site.url}/files/budget.xlsx`);
    // No title in its properties: named after its URL, as a PDF without one is.
    assert.equal(budget?.title, 'budget');
    assert.equal(budget?.content, 'Budget Flights 1250.5');
    assert.equal(budget?.mimeType, OFFICE_MIME.xlsx);
    assert.equal(budget?.contentType, 'application/octet-stream');
    assert.equal(docs.has(`${site.url}/files/secret.docx`), false);

    const states = new Map((await collect(urlStates(session))).map((u) => [u.url as string, u]));
    assert.equal(states.get(`${site.url}/files/secret.docx`)?.state, 'ignored');
    assert.equal(
      states.get(`${site.url}/files/secret.docx`)?.note,
      'encrypted Office document: a password is needed to open it',
    );
  });
});
