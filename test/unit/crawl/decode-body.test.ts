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
  it('a meta after a long inline script is read (a browser changes the encoding there too); past 64 KiB it is not', () => {
    const late = concat(
      ascii(`<script>${'x'.repeat(5600)}</script><meta charset="windows-1252">`),
      ascii('caf\u00e9'),
    );
    assert.deepEqual(decodeBody(late, 'text/html'), {
      text: `<script>${'x'.repeat(5600)}</script><meta charset="windows-1252">café`,
      charset: 'windows-1252',
    });
    const beyond = concat(ascii(' '.repeat(64 * 1024)), ascii('<meta charset="shift_jis">'));
    assert.equal(decodeBody(beyond, null).charset, 'utf-8');
  });
  it('reads the meta as the WHATWG prescan does: not in a comment, not a charset= in some content', () => {
    const page = (head: string) => concat(ascii(head), new Uint8Array(Buffer.from('déjà vu ü')));
    const cases = [
      '<!-- old: <meta charset="shift_jis"> --><meta charset="utf-8">',
      '<meta name="description" content="Convert text; charset=koi8-r is supported"><meta charset="utf-8">',
      '<meta content="x; charset=koi8-r"><meta charset=utf-8>',
    ];
    for (const head of cases) assert.equal(decodeBody(page(head), 'text/html').charset, 'utf-8', head);
    // http-equiv, in any case and attribute order, with single quotes or none.
    const equiv = concat(ascii(`<META CONTENT='text/html; Charset=Shift_JIS' HTTP-EQUIV=Content-Type>`));
    assert.equal(decodeBody(equiv, 'text/html').charset, 'shift_jis');
    // An unknown label is passed over: the next declaration counts.
    assert.equal(
      decodeBody(ascii('<meta charset="x-klingon"><meta charset="koi8-r">'), null).charset,
      'koi8-r',
    );
    // An unterminated comment hides the rest.
    assert.equal(decodeBody(ascii('<!-- <meta charset="koi8-r">'), null).charset, 'utf-8');
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
