import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import { decodeBody, parseContentType } from '../../../shared/crawl/extract/decode-body.ts';

const ascii = (text: string) => new Uint8Array(Buffer.from(text, 'latin1'));
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

describe('parseContentType (SMILA httpMimetype / httpCharset)', () => {
  const cases: [string | null, string | null, string | null][] = [
    [null, null, null],
    ['text/html', 'text/html', null],
    ['Text/HTML; Charset=ISO-8859-1', 'text/html', 'iso-8859-1'],
    ['text/html;charset="utf-8"', 'text/html', 'utf-8'],
    ["application/xhtml+xml; q=1; charset='Shift_JIS'", 'application/xhtml+xml', 'shift_jis'],
    ['text/plain; charset=', 'text/plain', null],
    ['garbage', null, null],
    ['', null, null],
  ];
  for (const [header, mimeType, charset] of cases) {
    it(`${JSON.stringify(header)}`, () => assert.deepEqual(parseContentType(header), { mimeType, charset }));
  }
});

describe('decodeBody', () => {
  it('no declaration: utf-8', () => {
    assert.deepEqual(decodeBody(new Uint8Array(Buffer.from('<p>héllo</p>')), null), {
      text: '<p>héllo</p>',
      charset: 'utf-8',
    });
  });
  it('a UTF-8 BOM wins over the header and is stripped', () => {
    const bytes = concat(new Uint8Array([0xef, 0xbb, 0xbf]), new Uint8Array(Buffer.from('é')));
    assert.deepEqual(decodeBody(bytes, 'text/html; charset=iso-8859-1'), { text: 'é', charset: 'utf-8' });
  });
  it('a UTF-16LE BOM', () => {
    const bytes = concat(new Uint8Array([0xff, 0xfe]), new Uint8Array(iconv.encode('ü<p>', 'utf-16le')));
    assert.deepEqual(decodeBody(bytes, 'text/html'), { text: 'ü<p>', charset: 'utf-16le' });
  });
  it('the header charset: windows-1252', () => {
    const { text, charset } = decodeBody(
      new Uint8Array([0x80, 0x20, 0xe9]),
      'text/html; charset=windows-1252',
    );
    assert.deepEqual([text, charset], ['€ é', 'windows-1252']);
  });
  it('iso-8859-1 decodes as windows-1252, as browsers do', () => {
    const { text, charset } = decodeBody(
      new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x93]),
      'text/html; charset=ISO-8859-1',
    );
    assert.deepEqual([text, charset], ['café\u201c', 'windows-1252']);
  });
  it('<meta charset> in the first 4 KiB: shift_jis', () => {
    const bytes = concat(
      ascii('<html><head><meta charset="Shift_JIS"></head><body>'),
      iconv.encode('日本語', 'shift_jis'),
    );
    const { text, charset } = decodeBody(bytes, 'text/html');
    assert.equal(charset, 'shift_jis');
    assert.ok(text.endsWith('<body>日本語'));
  });
  it('<meta http-equiv=Content-Type content="…; charset=…">', () => {
    const bytes = concat(
      ascii('<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'),
      new Uint8Array([0xfc]),
    );
    assert.deepEqual(decodeBody(bytes, null), {
      text: `${Buffer.from(bytes.subarray(0, -1)).toString('latin1')}ü`,
      charset: 'windows-1252',
    });
  });
  it('the header wins over the meta', () => {
    const bytes = concat(ascii('<meta charset="shift_jis">'), new Uint8Array(Buffer.from('ä')));
    assert.equal(decodeBody(bytes, 'text/html; charset=utf-8').text, '<meta charset="shift_jis">ä');
  });
  it('a meta past the first 4 KiB is not read', () => {
    const bytes = concat(ascii(' '.repeat(4096)), ascii('<meta charset="shift_jis">'));
    assert.equal(decodeBody(bytes, null).charset, 'utf-8');
  });
  it('a meta declaring utf-16 in ASCII bytes means utf-8', () => {
    assert.equal(decodeBody(ascii('<meta charset="utf-16">'), null).charset, 'utf-8');
  });
  it('unknown charsets fall back without throwing', () => {
    const bytes = concat(ascii('<meta charset="x-klingon">'), new Uint8Array(Buffer.from('ö')));
    assert.deepEqual(decodeBody(bytes, 'text/html; charset=bogus-8'), {
      text: '<meta charset="x-klingon">ö',
      charset: 'utf-8',
    });
  });
  it('works on a view into a larger buffer', () => {
    const whole = new Uint8Array(Buffer.from('xx<p>ok</p>yy'));
    assert.equal(decodeBody(whole.subarray(2, 11), null).text, '<p>ok</p>');
  });
});
