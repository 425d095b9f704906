import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constants, crc32, deflateRawSync, gzipSync as zlibGzip } from 'node:zlib';
import { gzipSync, strToU8, zipSync } from 'fflate';
import {
  elementMimeType,
  extractCompound,
  gunzipCapped,
  isCompound,
} from '../../../shared/crawl/archives/compound.ts';
import { ZIP_MTIME, ZIP_MTIME_READ } from '../../helpers/archive-builders.ts';

// Tar and tar.gz extraction are tested in tar.test.ts, next to the tar reader.
const LIMITS = { maxEntries: 100, maxTotalBytes: 10 * 1024 * 1024, maxDepth: 3 };
const ARCHIVE = 'http://files.example/pub/bundle.zip';
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Little-endian [byte width, value] fields, as zip headers are laid out (APPNOTE 4.3). */
function le(fields: [number, number][]): Buffer {
  const out = Buffer.alloc(fields.reduce((n, [width]) => n + width, 0));
  fields.reduce((at, [width, value]) => out.writeUIntLE(value, at, width), 0);
  return out;
}

/** A one-entry zip around an already deflated stream, its size declared by the caller. */
function rawZip(name: string, deflated: Uint8Array, declaredSize: number, crc: number): Uint8Array {
  const n = Buffer.from(name);
  const sizes: [number, number][] = [
    [4, crc],
    [4, deflated.length],
    [4, declaredSize],
    [2, n.length],
  ];
  const local = le([[4, 0x04034b50], [2, 20], [2, 0], [2, 8], [4, 0], ...sizes, [2, 0]]);
  const central = le([
    [4, 0x02014b50],
    [2, 20],
    [2, 20],
    [2, 0],
    [2, 8],
    [4, 0],
    ...sizes,
    [4, 0],
    [4, 0],
    [4, 0],
    [4, 0],
  ]);
  const cdSize = central.length + n.length;
  const end = le([
    [4, 0x06054b50],
    [4, 0],
    [2, 1],
    [2, 1],
    [4, cdSize],
    [4, local.length + n.length + deflated.length],
    [2, 0],
  ]);
  return Buffer.concat([local, n, deflated, central, n, end]);
}

/** `mib` MiB of zeros as one raw deflate stream, from one compressed MiB: sync-flushed blocks concatenate. */
function deflatedZeros(mib: number): { deflated: Uint8Array; size: number; crc: number } {
  const oneMib = new Uint8Array(1 << 20);
  const block = deflateRawSync(oneMib, { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  let crc = 0;
  for (let i = 0; i < mib; i += 1) crc = crc32(oneMib, crc);
  const deflated = Buffer.concat([...Array<Uint8Array>(mib).fill(block), deflateRawSync(new Uint8Array())]);
  return { deflated, size: mib * oneMib.length, crc };
}

/** RFC 1952: a 10-byte header, the deflate stream, CRC-32 and size mod 2^32. */
function gzipOf({ deflated, size, crc }: ReturnType<typeof deflatedZeros>): Uint8Array {
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc, 0);
  trailer.writeUInt32LE(size % 2 ** 32, 4);
  return Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]), deflated, trailer]);
}

/** Rewrites the uncompressed size a zip's central directory declares for `name`. */
function declareSize(zip: Uint8Array, name: string, size: number): Uint8Array {
  const bytes = Buffer.from(zip);
  for (let at = bytes.indexOf('PK\x01\x02'); at >= 0; at = bytes.indexOf('PK\x01\x02', at + 1)) {
    const entryName = bytes.toString('utf8', at + 46, at + 46 + bytes.readUInt16LE(at + 28));
    if (entryName === name) bytes.writeUInt32LE(size, at + 24);
  }
  return bytes;
}

describe('isCompound', () => {
  const zip = zipSync({ 'a.txt': strToU8('a') });
  const url = 'http://x.example/download';
  const none = new Uint8Array();
  const ustar = new Uint8Array(1024);
  ustar.set(strToU8('ustar'), 257);
  const ooxml = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  const cases: [string, string, string | null, Uint8Array, boolean][] = [
    ['zip by magic bytes', url, null, zip, true],
    ['gzip by magic bytes', url, 'application/octet-stream', gzipSync(strToU8('a')), true],
    ['tar by ustar at 257', url, null, ustar, true],
    ['an archive Content-Type, no body yet', url, 'application/zip; charset=binary', none, true],
    ['application/x-tar', url, 'application/x-tar', none, true],
    ['an HTML page', 'http://x.example/a.zip', 'text/html', strToU8('<html></html>'), false],
    [
      'an HTML error page labelled application/zip',
      url,
      'application/zip',
      strToU8('<html>404</html>'),
      false,
    ],
    ['a .docx by extension', 'http://x.example/report.docx?v=2', null, zip, false],
    ['an OOXML Content-Type', url, ooxml, zip, false],
    [
      'an OOXML zip by its first entry',
      url,
      null,
      zipSync({ '[Content_Types].xml': strToU8('<T/>') }),
      false,
    ],
    [
      'an EPUB by its mimetype entry',
      url,
      null,
      zipSync({ mimetype: strToU8('application/epub+zip') }),
      false,
    ],
  ];
  for (const [label, url, mime, bytes, expected] of cases) {
    it(`${label}: ${expected}`, () => {
      assert.equal(isCompound(url, mime, bytes), expected);
    });
  }
});

describe('extractCompound: zip', () => {
  it('gives each file the URL <archive url>/<entry path> and the archive as compound path (SMILA)', () => {
    const zip = zipSync({
      'readme.txt': strToU8('hello'),
      docs: {},
      'docs/a b#1?.html': strToU8('<p>x</p>'),
    });

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.url, e.name, text(e.bytes), e.compoundPath]),
      [
        [`${ARCHIVE}/readme.txt`, 'readme.txt', 'hello', [ARCHIVE]],
        [`${ARCHIVE}/docs/a%20b%231%3F.html`, 'docs/a b#1?.html', '<p>x</p>', [ARCHIVE]],
      ],
    );
    assert.equal(result.truncated, false);
    assert.deepEqual(result.warnings, [`${ARCHIVE}: docs/: directory entry skipped`]);
  });

  it('skips path-traversal and absolute names with a warning', () => {
    const zip = zipSync({
      '../evil.txt': strToU8('x'),
      'a/../../b.txt': strToU8('x'),
      '/etc/passwd': strToU8('x'),
      'ok.txt': strToU8('ok'),
    });

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['ok.txt'],
    );
    assert.equal(result.warnings.filter((w) => w.includes('path traversal')).length, 3);
  });

  it('opens a zip inside a zip, the compound path growing by the nested archive URL', () => {
    const inner = zipSync({ 'deep.txt': strToU8('deep') });
    const outer = zipSync({ 'top.txt': strToU8('top'), 'nested/inner.zip': inner });

    const result = extractCompound(outer, ARCHIVE, LIMITS);

    const innerUrl = `${ARCHIVE}/nested/inner.zip`;
    assert.deepEqual(
      result.elements.map((e) => [e.url, e.compoundPath]),
      [
        [`${ARCHIVE}/top.txt`, [ARCHIVE]],
        [`${innerUrl}/deep.txt`, [ARCHIVE, innerUrl]],
      ],
    );
  });

  it('skips nested archives beyond maxDepth and reports truncation', () => {
    const level2 = zipSync({ 'l2.txt': strToU8('2') });
    const level1 = zipSync({ 'l1.txt': strToU8('1'), 'l2.zip': level2 });
    const top = zipSync({ 'l1.zip': level1 });

    const result = extractCompound(top, ARCHIVE, { ...LIMITS, maxDepth: 1 });

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['l1.txt'],
    );
    assert.equal(result.truncated, true);
    assert.match(
      result.warnings.join('\n'),
      /l1\.zip\/l2\.zip: nested archive beyond limits.archiveDepth \(1\)/,
    );
  });

  it('stops at maxEntries with one warning', () => {
    const zip = zipSync(Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`f${n}.txt`, strToU8(`${n}`)])));

    const result = extractCompound(zip, ARCHIVE, { ...LIMITS, maxEntries: 2 });

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['f1.txt', 'f2.txt'],
    );
    assert.equal(result.truncated, true);
    assert.equal(result.warnings.filter((w) => w.includes('maxEntries')).length, 1);
  });

  it('zip bomb: 200 MB of zeros declared in the central directory is refused before inflating', () => {
    const zeros = deflatedZeros(200);
    const bomb = rawZip('zeros.bin', zeros.deflated, zeros.size, zeros.crc);
    assert.ok(bomb.length < 250_000); // ~1000:1

    const result = extractCompound(bomb, ARCHIVE, LIMITS);

    assert.deepEqual(result.elements, []);
    assert.equal(result.truncated, true);
    assert.match(result.warnings[0] ?? '', /zeros\.bin: declares 209715200 bytes, over the 10485760 left/);
  });

  it('zip bomb: an entry declaring a huge size is refused, smaller entries still come out', () => {
    const zip = declareSize(
      zipSync({ 'big.txt': strToU8('x'.repeat(1000)), 'small.txt': strToU8('s') }),
      'big.txt',
      0xfffffff0,
    );

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['small.txt'],
    );
    assert.equal(result.truncated, true);
  });

  it('zip bomb: an entry declaring less than it holds inflates to its declared size at most', () => {
    const zeros = deflatedZeros(20);
    const liar = rawZip('liar.bin', zeros.deflated, 100, zeros.crc);

    const result = extractCompound(liar, ARCHIVE, LIMITS);

    assert.ok((result.elements[0]?.bytes.length ?? 0) <= 100);
  });

  it('skips an encrypted entry with a warning and reads the others (the archive is not lost to it)', () => {
    // Random bytes deflated stand in for ZipCrypto ciphertext: inflated as if plain, they throw.
    const zip = Buffer.from(
      zipSync({ 'public.txt': strToU8('open text'), 'secret.txt': strToU8('x'.repeat(200)) }, { level: 6 }),
    );
    const secret = zip.indexOf('secret.txt');
    const central = zip.lastIndexOf('PK\x01\x02');
    // The encryption flag (general purpose bit 0) in both headers, and the entry's data garbled.
    zip.writeUInt16LE(zip.readUInt16LE(secret - 30 + 6) | 1, secret - 30 + 6);
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 1, central + 8);
    zip.fill(0xff, secret + 10, secret + 14);

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.name, text(e.bytes)]),
      [['public.txt', 'open text']],
    );
    assert.deepEqual(result.warnings, [`${ARCHIVE}: secret.txt: encrypted (password-protected), not read`]);
  });

  it("leaves out macOS's AppleDouble files (__MACOSX/, ._name) without a warning", () => {
    const zip = zipSync({
      'Report/notes.txt': strToU8('notes'),
      '__MACOSX/Report/._notes.txt': new Uint8Array([0, 5, 0x16, 7, 0, 2]),
      'Report/._index.html': new Uint8Array([0, 5, 0x16, 7]),
    });

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['Report/notes.txt'],
    );
    assert.deepEqual(result.warnings, []);
  });

  it('reads a name without the UTF-8 flag as UTF-8 when it is, else as code page 437 (APPNOTE D)', () => {
    const zip = Buffer.from(zipSync({ 'Bxcher.txt': strToU8('cp437'), 'Caf__.txt': strToU8('utf-8') }));
    // fflate flags no ASCII name: write the legacy bytes in place, in both headers.
    for (let at = zip.indexOf('Bxcher'); at >= 0; at = zip.indexOf('Bxcher', at + 1)) zip[at + 1] = 0x81;
    for (let at = zip.indexOf('Caf__'); at >= 0; at = zip.indexOf('Caf__', at + 1))
      Buffer.from('\u00e9').copy(zip, at + 3);

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.name, e.url, text(e.bytes)]),
      [
        ['B\u00fccher.txt', `${ARCHIVE}/B%C3%BCcher.txt`, 'cp437'],
        ['Caf\u00e9.txt', `${ARCHIVE}/Caf%C3%A9.txt`, 'utf-8'],
      ],
    );
  });

  it('warns about a corrupt zip instead of throwing', () => {
    const zip = zipSync({ 'a.txt': strToU8('a') }).subarray(0, 40);

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(result.elements, []);
    assert.match(result.warnings[0] ?? '', /corrupt zip archive/);
  });
});

describe('extractCompound: gzip', () => {
  it('a plain .gz holds one element, named by the gzip header or else by the URL', () => {
    const named = extractCompound(gzipSync(strToU8('report'), { filename: 'report.csv' }), ARCHIVE, LIMITS);
    const unnamed = extractCompound(zlibGzip(Buffer.from('log')), 'http://x.example/logs/app.log.gz', LIMITS);

    assert.deepEqual(
      named.elements.map((e) => [e.url, text(e.bytes)]),
      [[`${ARCHIVE}/report.csv`, 'report']],
    );
    assert.deepEqual(
      unnamed.elements.map((e) => e.url),
      ['http://x.example/logs/app.log.gz/app.log'],
    );
  });

  it('gzip bomb: 200 MB of zeros stops at the byte budget, no element', () => {
    const bomb = gzipOf(deflatedZeros(200));

    const result = extractCompound(bomb, 'http://x.example/zeros.gz', { ...LIMITS, maxTotalBytes: 1 << 20 });

    assert.deepEqual(result.elements, []);
    assert.equal(result.truncated, true);
    assert.match(result.warnings[0] ?? '', /inflates to more than/);
  });

  it('gunzipCapped keeps at most maxBytes of a large stream', () => {
    const capped = gunzipCapped(gzipOf(deflatedZeros(5)), 1_000_000);
    const whole = gunzipCapped(gzipOf(deflatedZeros(5)), 5 << 20);

    assert.deepEqual([capped.truncated, capped.bytes.length], [true, 1_000_000]);
    assert.deepEqual([whole.truncated, whole.bytes.length], [false, 5 << 20]);
  });
});

describe('elementMimeType: what an archive element is, with no Content-Type of its own', () => {
  it('by its extension: documents and the usual text formats; binaries none', () => {
    assert.deepEqual(
      ['a/page.HTM', 'notes.rst', 'app.log', 'data.json', 'conf/app.yaml', 'logo.png', 'x.exe'].map((n) =>
        elementMimeType(n),
      ),
      ['text/html', 'text/plain', 'text/plain', 'text/plain', 'text/plain', null, null],
    );
  });

  it('without an extension (README, LICENSE): text when its bytes are, else none', () => {
    assert.equal(
      elementMimeType('docs/README', strToU8('# Project\n\tIndented, caf\u00e9 \u2014 ok\r\n')),
      'text/plain',
    );
    assert.equal(elementMimeType('bin/tool', new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])), null);
    assert.equal(elementMimeType('blob', new Uint8Array([0xff, 0xfe, 0x41, 0xc3])), null, 'not UTF-8');
    assert.equal(elementMimeType('empty', new Uint8Array()), null);
    // A character cut at the end of the 4 KB sample is not taken for binary data.
    assert.equal(elementMimeType('long', strToU8(`${'a'.repeat(4095)}\u00e9 more`)), 'text/plain');
  });
});

describe("extractCompound: an element's date (its lastModified)", () => {
  it("a zip entry's MS-DOS time, or its extended timestamp (UTC) when it has one", () => {
    const utc = Date.parse('2023-03-04T05:06:08Z') / 1000;
    const stamp = new Uint8Array([1, utc & 255, (utc >> 8) & 255, (utc >> 16) & 255, (utc >>> 24) & 255]);
    const zip = zipSync({
      'dos.txt': [strToU8('a'), { mtime: ZIP_MTIME }],
      'unix.txt': [strToU8('b'), { mtime: ZIP_MTIME, extra: { 21589: stamp } }],
    });

    const result = extractCompound(zip, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.name, e.modified]),
      [
        ['dos.txt', ZIP_MTIME_READ],
        ['unix.txt', '2023-03-04T05:06:08.000Z'],
      ],
    );
  });

  it("a tar entry's mtime; none when the header leaves it 0", async () => {
    const { tar } = await import('../../helpers/archive-builders.ts');
    const bytes = tar([
      { name: 'dated.txt', data: 'x', mtime: 1_700_000_000 },
      { name: 'undated.txt', data: 'y' },
    ]);

    const result = extractCompound(bytes, ARCHIVE, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.name, e.modified]),
      [
        ['dated.txt', '2023-11-14T22:13:20.000Z'],
        ['undated.txt', undefined],
      ],
    );
  });
});
