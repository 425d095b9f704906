import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync, strToU8, zipSync } from 'fflate';
import { extractCompound } from '../../../shared/crawl/archives/compound.ts';
import { readTar } from '../../../shared/crawl/archives/tar.ts';
import { tar } from '../../helpers/archive-builders.ts';

const LIMITS = { maxEntries: 100, maxTotalBytes: 10 * 1024 * 1024, maxDepth: 3 };
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('readTar', () => {
  it('takes long names from GNU "L" and pax "path" records', () => {
    const longName = `${'d/'.repeat(80)}file.txt`;
    // A pax record is "<length> path=<value>\n"; the 3-digit length counts the whole record.
    const pax = `${longName.length + 10} path=${longName}\n`;
    const archive = tar([
      { name: '././@LongLink', type: 'L', data: `${longName}\0` },
      { name: 'truncated-gnu', data: 'gnu' },
      { name: 'PaxHeaders/x', type: 'x', data: pax },
      { name: 'truncated-pax', data: 'pax' },
    ]);

    const entries = [...readTar(archive, [])];

    assert.deepEqual(
      entries.map((e) => [e.path, e.type, text(e.data)]),
      [
        [longName, 'file', 'gnu'],
        [longName, 'file', 'pax'],
      ],
    );
  });

  it('stops with a warning at a header whose checksum does not match, or at cut-off data', () => {
    const archive = tar([
      { name: 'a.txt', data: 'a' },
      { name: 'b.txt', data: 'b' },
    ]);
    archive[1024 + 10] = (archive[1024 + 10] ?? 0) ^ 1; // a byte of b.txt's header
    const warnings: string[] = [];
    const cutWarnings: string[] = [];

    const entries = [...readTar(archive, warnings)];
    const cut = [...readTar(tar([{ name: 'c.txt', data: 'x'.repeat(600) }]).subarray(0, 800), cutWarnings)];

    assert.deepEqual(
      entries.map((e) => e.path),
      ['a.txt'],
    );
    assert.match(warnings[0] ?? '', /tar header at byte 1024 is invalid/);
    assert.deepEqual(cut, []);
    assert.match(cutWarnings[0] ?? '', /cut off/);
  });
});

describe('extractCompound: tar and tar.gz', () => {
  const archive = tar([
    { name: 'site/', type: '5' },
    { name: 'index.html', prefix: 'site', data: '<h1>home</h1>' },
    { name: 'site/link', type: '2' },
    { name: '../escape.txt', data: 'no' },
    { name: 'site/empty.txt', data: '' },
    { name: 'site/big.bin', data: new Uint8Array(1500).fill(7) },
  ]);

  it('reads regular files (ustar prefix + name), skipping directories, links and traversal with warnings', () => {
    const url = 'http://files.example/site.tar';

    const result = extractCompound(archive, url, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.url, e.bytes.length]),
      [
        [`${url}/site/index.html`, 13],
        [`${url}/site/empty.txt`, 0],
        [`${url}/site/big.bin`, 1500],
      ],
    );
    assert.equal(text(result.elements[0]!.bytes), '<h1>home</h1>');
    assert.equal(result.warnings.length, 3);
    assert.match(
      result.warnings.join('\n'),
      /site\/: directory entry skipped[\s\S]*link[\s\S]*path traversal/,
    );
  });

  it('reads a tar.gz as one compound', () => {
    const url = 'http://files.example/site.tar.gz';

    const result = extractCompound(gzipSync(archive), url, LIMITS);

    assert.deepEqual(result.elements.map((e) => [e.url, e.compoundPath]).slice(0, 1), [
      [`${url}/site/index.html`, [url]],
    ]);
    assert.equal(result.elements.length, 3);
  });

  it('opens a zip inside a tar.gz', () => {
    const url = 'http://files.example/mixed.tgz';
    const tgz = gzipSync(tar([{ name: 'inner.zip', data: zipSync({ 'x.txt': strToU8('x') }) }]));

    const result = extractCompound(tgz, url, LIMITS);

    assert.deepEqual(
      result.elements.map((e) => [e.url, e.compoundPath]),
      [[`${url}/inner.zip/x.txt`, [url, `${url}/inner.zip`]]],
    );
  });

  it('maxTotalBytes refuses a tar entry larger than what is left', () => {
    const result = extractCompound(archive, 'http://x.example/a.tar', { ...LIMITS, maxTotalBytes: 1000 });

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['site/index.html', 'site/empty.txt'],
    );
    assert.equal(result.truncated, true);
  });

  it('a tar.gz inflating beyond the byte budget yields the entries before the cut', () => {
    const part = new Uint8Array(400 * 1024).fill(0x61);
    const tgz = gzipSync(tar(['1', '2', '3'].map((n) => ({ name: `part${n}.txt`, data: part }))));

    const result = extractCompound(tgz, 'http://x.example/parts.tgz', {
      ...LIMITS,
      maxTotalBytes: 900 * 1024,
    });

    assert.deepEqual(
      result.elements.map((e) => e.name),
      ['part1.txt', 'part2.txt'],
    );
    assert.equal(result.truncated, true);
    assert.match(result.warnings.join('\n'), /inflates to more than/);
  });
});
