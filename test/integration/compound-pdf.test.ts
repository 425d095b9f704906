import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gzipSync, strToU8, zipSync } from 'fflate';
import { readChanges } from '../../cli/change-feed.ts';
import { crawl, documents, openSession, refresh, urlStates } from '../../cli/session.ts';
import { DEFAULT_IGNORED_EXTENSIONS, parseConfig } from '../../shared/config.ts';
import {
  lyingZip,
  minimalPdf,
  tar,
  ZIP_MTIME,
  ZIP_MTIME_READ,
} from '../fixtures/site-extraction/archives.ts';
import { collect } from '../helpers/collect.ts';
import { startTestEmulator, type TestEmulator, uniqueCrawlName } from '../helpers/emulator.ts';
import { type SiteServer, startSiteServer } from '../helpers/site-server.ts';

const ZIPPED_HTML =
  '<html><head><title>Zipped page</title></head><body>zipped <b>html</b> <a href="x.html">x</a></body></html>';
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

describe('compound files and PDFs through the pipeline (issue #5 items 9 and 11)', () => {
  let emu: TestEmulator;
  let site: SiteServer;
  const report = minimalPdf('Quarterly crawl report', 'Trawl Report');
  const untitled = minimalPdf('A PDF without a title');
  const manual = minimalPdf('Manual inside the zip', 'Zipped Manual');
  const inner = zipSync({ 'deep.txt': strToU8('deep inside') }, { mtime: ZIP_MTIME });
  const archive = zipSync(
    {
      'readme.txt': strToU8('Zip   readme\ntext'),
      'docs/page.html': strToU8(ZIPPED_HTML),
      'inner.zip': inner,
      'manual.pdf': manual,
      'logo.png': PNG,
    },
    { mtime: ZIP_MTIME },
  );
  const bundle = gzipSync(tar({ 'notes/one.txt': 'first note', 'two.md': '# Second note' }));
  const bomb = lyingZip(200 * 1024 * 1024);

  before(async () => {
    emu = await startTestEmulator();
    site = await startSiteServer({
      routes: {
        '/': {
          body: `<html><head><title>Downloads</title></head><body>
            <a href="/files/archive.zip">zip</a> <a href="/files/bundle.tar.gz">tar.gz</a>
            <a href="/files/bomb.zip">bomb</a> <a href="/report.pdf">report</a> <a href="/untitled.pdf">untitled</a>
          </body></html>`,
        },
        '/files/archive.zip': { headers: { 'Content-Type': 'application/zip' }, body: archive },
        '/files/bundle.tar.gz': { headers: { 'Content-Type': 'application/gzip' }, body: bundle },
        '/files/bomb.zip': { headers: { 'Content-Type': 'application/zip' }, body: bomb },
        '/report.pdf': { headers: { 'Content-Type': 'application/pdf' }, body: report },
        '/untitled.pdf': { headers: { 'Content-Type': 'application/pdf' }, body: untitled },
      },
    });
  });
  after(async () => {
    await site?.close();
    await emu?.stop();
  });

  it('indexes archive elements (nested too) as <archive url>/<path> with compoundPath, and PDFs as text', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('compound'),
      startUrls: [`${site.url}/`],
      // zip is on seed 004's ignored list; a crawl that wants archives takes it off.
      scope: { ignoredExtensions: DEFAULT_IGNORED_EXTENSIONS.filter((e) => e !== 'zip') },
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);

    await crawl(session);

    const zip = `${site.url}/files/archive.zip`;
    const tgz = `${site.url}/files/bundle.tar.gz`;
    const bombUrl = `${site.url}/files/bomb.zip`;
    const el = (
      url: string,
      path: string[],
      mimeType: string,
      title: string,
      content: string,
      size: number,
    ) => ({
      url,
      title,
      content,
      contentType: mimeType,
      mimeType,
      // The charset the text was decoded with: none declared, so UTF-8; none for a PDF.
      charset: mimeType === 'application/pdf' ? null : 'utf-8',
      // A zip element's date is its entry's (since 2026-11-28); the tar's entries have none.
      lastModified: path.some((p) => p.endsWith('.zip')) ? ZIP_MTIME_READ : null,
      size,
      depth: 1,
      source: null,
      meta: {},
      description: null,
      language: null,
      compoundPath: path,
    });
    const pdf = (url: string, title: string, content: string, size: number) => ({
      ...el(url, [], 'application/pdf', title, content, size),
      compoundPath: undefined,
    });
    const expected = [
      el(`${zip}/readme.txt`, [zip], 'text/plain', 'readme', 'Zip readme text', 17),
      {
        ...el(
          `${zip}/docs/page.html`,
          [zip],
          'text/html',
          'Zipped page',
          'zipped html x',
          ZIPPED_HTML.length,
        ),
        canonical: null,
      },
      el(`${zip}/inner.zip/deep.txt`, [zip, `${zip}/inner.zip`], 'text/plain', 'deep', 'deep inside', 11),
      el(
        `${zip}/manual.pdf`,
        [zip],
        'application/pdf',
        'Zipped Manual',
        'Manual inside the zip',
        manual.length,
      ),
      el(`${tgz}/notes/one.txt`, [tgz], 'text/plain', 'one', 'first note', 10),
      el(`${tgz}/two.md`, [tgz], 'text/markdown', 'two', '# Second note', 13),
      el(`${bombUrl}/small.txt`, [bombUrl], 'text/plain', 'small', 'small and honest', 16),
      pdf(`${site.url}/report.pdf`, 'Trawl Report', 'Quarterly crawl report', report.length),
      pdf(`${site.url}/untitled.pdf`, 'untitled', 'A PDF without a title', untitled.length),
    ];
    const docs = await collect(documents(session));
    const strip = ({ indexedAt, hash, ...rest }: Record<string, unknown>) => {
      assert.match(hash as string, /^sha256:/);
      return JSON.parse(JSON.stringify(rest));
    };
    const byUrl = new Map(docs.map((d) => [d.url as string, strip(d)]));
    assert.deepEqual([...byUrl.keys()].sort(), [`${site.url}/`, ...expected.map((e) => e.url)].sort());
    for (const e of expected) assert.deepEqual(byUrl.get(e.url), JSON.parse(JSON.stringify(e)), e.url);

    const states = new Map((await collect(urlStates(session))).map((u) => [u.url as string, u]));
    assert.equal(states.get(zip)?.state, 'followed');
    assert.equal(states.get(zip)?.note, 'archive with 5 element(s), 1 not indexable');
    // The bomb's 200 MB entry is refused from its declared size, before anything is inflated.
    assert.equal(
      states.get(bombUrl)?.note,
      `archive with 1 element(s), truncated by limits: ${bombUrl}: zeros.bin: declares 209715200 bytes, over the 104857600 left of limits.archiveBytes (maxTotalBytes)`,
    );
  });
  it('a macOS zip with a password-protected entry: the open files indexed, AppleDouble files left out, the rest said', async () => {
    const zip = Buffer.from(
      zipSync({
        'Report/notes.txt': strToU8('open notes'),
        '__MACOSX/Report/._notes.txt': new Uint8Array([0, 5, 0x16, 7, 0, 2, 0, 0]),
        'Report/secret.txt': strToU8('s'.repeat(300)),
      }),
    );
    // ZipCrypto stands in: the encryption flag (bit 0) in both headers, the entry's data garbled.
    const local = zip.indexOf('Report/secret.txt') - 30;
    zip.writeUInt16LE(zip.readUInt16LE(local + 6) | 1, local + 6);
    const central = zip.lastIndexOf('Report/secret.txt') - 46;
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 1, central + 8);
    zip.fill(0xff, local + 30 + 17, local + 30 + 21);
    site.route('/mac/', { body: '<html><body><a href="/mac/files.zip">zip</a></body></html>' });
    site.route('/mac/files.zip', { headers: { 'Content-Type': 'application/zip' }, body: zip });
    const config = parseConfig({
      name: uniqueCrawlName('compoundmac'),
      startUrls: [`${site.url}/mac/`],
      scope: { ignoredExtensions: DEFAULT_IGNORED_EXTENSIONS.filter((e) => e !== 'zip') },
      fetch: { allowPrivateNetworks: true },
    });
    const session = await openSession(config);

    await crawl(session);

    const url = `${site.url}/mac/files.zip`;
    const docs = await collect(documents(session));
    assert.deepEqual(
      docs.filter((d) => String(d.url).startsWith(url)).map((d) => [d.url, d.content]),
      [[`${url}/Report/notes.txt`, 'open notes']],
    );
    const states = new Map((await collect(urlStates(session))).map((u) => [u.url as string, u]));
    assert.equal(
      states.get(url)?.note,
      `archive with 1 element(s), not read: ${url}: Report/secret.txt: encrypted (password-protected), not read`,
    );
  });

  it('retires the elements an archive no longer gives, and a gone archive’s, through the change feed', async () => {
    const config = parseConfig({
      name: uniqueCrawlName('compoundgone'),
      startUrls: [`${site.url}/`],
      scope: { ignoredExtensions: DEFAULT_IGNORED_EXTENSIONS.filter((e) => e !== 'zip') },
      fetch: { allowPrivateNetworks: true },
      refresh: { maxAge: '48h' },
    });
    await crawl(await openSession(config));
    const zip = `${site.url}/files/archive.zip`;
    const tgz = `${site.url}/files/bundle.tar.gz`;
    // The zip loses its HTML page; the tar.gz is taken off the site.
    const smaller = zipSync({
      'readme.txt': strToU8('Zip   readme\ntext'),
      'inner.zip': inner,
      'manual.pdf': manual,
      'logo.png': PNG,
    });
    site.route('/files/archive.zip', { headers: { 'Content-Type': 'application/zip' }, body: smaller });
    site.route('/files/bundle.tar.gz', { status: 404, body: 'gone' });
    try {
      const later = await openSession(config, { now: new Date(Date.now() + 3 * 86_400_000) });
      await refresh(later);
      const docs = (await collect(documents(later))).map((d) => d.url as string);
      const inArchives = docs.filter((u) => u.startsWith(`${zip}/`) || u.startsWith(`${tgz}/`)).sort();
      assert.deepEqual(inArchives, [`${zip}/inner.zip/deep.txt`, `${zip}/manual.pdf`, `${zip}/readme.txt`]);
      const deletes = (await readChanges(later))
        .filter((c) => c.type === 'delete' && (c.url.startsWith(zip) || c.url.startsWith(tgz)))
        .map((c) => [c.url, c.reason])
        .sort();
      assert.deepEqual(deletes, [
        [`${zip}/docs/page.html`, 'permanent-error: removed-from-archive'],
        [`${tgz}/notes/one.txt`, 'permanent-error: archive-gone'],
        [`${tgz}/two.md`, 'permanent-error: archive-gone'],
      ]);
      // Their states are forgotten with them; the kept elements keep theirs. The archive's own 404
      // is remembered (seed 001), to be tried again after maxAge.
      const all = await collect(urlStates(later));
      const states = new Set(all.map((u) => u.url as string));
      for (const gone of [`${zip}/docs/page.html`, `${tgz}/notes/one.txt`, `${tgz}/two.md`])
        assert.ok(!states.has(gone), gone);
      const archive = all.find((u) => u.url === tgz);
      assert.deepEqual([archive?.state, archive?.errorCode], ['error', 'http-404']);
      assert.ok(states.has(`${zip}/readme.txt`));
      // A second cycle a day later deletes nothing more.
      const next = await openSession(config, { now: new Date(Date.now() + 4 * 86_400_000) });
      await refresh(next);
      const again = (await readChanges(next)).filter((c) => c.type === 'delete');
      assert.equal(again.length, 3);
      // The zip taken out of the scope: the next cycle deletes it unfetched, its elements with it.
      const narrowed = parseConfig({ ...config, scope: { ...config.scope, exclude: ['/files/'] } });
      const out = await openSession(narrowed, { now: new Date(Date.now() + 4 * 86_400_000 + 3_600_000) });
      await refresh(out);
      const left = (await collect(documents(out)))
        .map((d) => d.url as string)
        .filter((u) => u.startsWith(zip));
      assert.deepEqual(left, []);
      const outDeletes = (await readChanges(out)).filter(
        (c) => c.type === 'delete' && c.url.startsWith(`${zip}/`),
      );
      assert.equal(outDeletes.length, 3 + 1, 'the page removed before, and the three elements left');
      for (const c of outDeletes.filter((d) => !d.url.endsWith('/docs/page.html')))
        assert.match(
          c.reason ?? '',
          new RegExp(`^out-of-scope: .* \\(archive ${zip.replace(/[.]/g, '\\.')}\\)$`),
        );
    } finally {
      site.route('/files/archive.zip', { headers: { 'Content-Type': 'application/zip' }, body: archive });
      site.route('/files/bundle.tar.gz', { headers: { 'Content-Type': 'application/gzip' }, body: bundle });
    }
  });
});
