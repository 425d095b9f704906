import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import { decodeBody, parseContentType, withoutMarkup } from '../../../shared/crawl/extract/decode-body.ts';

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
  it('undeclared bytes that are not UTF-8 are windows-1252, as a browser reads them; a UTF-8 tail cut mid-character is UTF-8', () => {
    const legacy = concat(ascii('<title>Caf'), new Uint8Array([0xe9, 0x20, 0x93, 0x71, 0x94, 0x20, 0x80]));
    assert.deepEqual(decodeBody(legacy, 'text/html'), {
      text: '<title>Café \u201cq\u201d €',
      charset: 'windows-1252',
    });
    const cut = new Uint8Array(Buffer.from('日本語')).subarray(0, 7);
    assert.deepEqual(decodeBody(cut, null), { text: '日本', charset: 'utf-8' });
  });
  it('undeclared Japanese, Chinese, Korean or Russian bytes: the encoding a detector is sure of, not windows-1252', () => {
    const page = (text: string) =>
      `<!doctype html><html><head><title>${text}</title></head><body><p>${text}</p></body></html>`;
    const cases: [string, string, string][] = [
      ['shift_jis', 'Shift_JIS', '東京駅の案内と日本語のページです。今日は晴れです。'],
      ['euc-jp', 'EUC-JP', '東京駅の案内と日本語のページです。今日は晴れです。'],
      ['gb18030', 'GB18030', '北京是中华人民共和国的首都，也是全国的政治中心和文化中心。'],
      ['euc-kr', 'EUC-KR', '서울은 대한민국의 수도이며 가장 큰 도시입니다. 오늘 날씨가 좋습니다.'],
      [
        'windows-1251',
        'win1251',
        'Москва — столица России, крупнейший по численности населения город страны.',
      ],
    ];
    for (const [charset, iconvName, text] of cases) {
      const decoded = decodeBody(new Uint8Array(iconv.encode(page(text), iconvName)), 'text/html');
      assert.deepEqual([decoded.charset, decoded.text.includes(text)], [charset, true], charset);
    }
    // Western text is left to windows-1252: a detector cannot tell ISO-8859-1 from -2 on it.
    const french = iconv.encode(
      page('Le café est très bon, où est la gare? Déjà vu, naïve façade.'),
      'win1252',
    );
    assert.equal(decodeBody(new Uint8Array(french), 'text/html').charset, 'windows-1252');
  });
  it('undeclared text in a non-Latin script is decoded as the detector names it, however unsure (real Russian scores 35-47)', () => {
    const ru =
      'Москва - столица России, город федерального значения, административный центр Центрального федерального округа и центр Московской области, в состав которой не входит. Крупнейший по численности населения город России и её субъект.';
    // An inline script's ASCII code is left out of the evidence as the tags are.
    const page = (text: string) =>
      `<!doctype html><html><head><title>Москва</title><script>var config = {"analytics": true, "items": [1, 2, 3], "label": "counter"}; function track(a, b) { return a + b; }</script><style>body { font-family: Arial, sans-serif; margin: 0 auto; }</style></head><body><p>${text}</p></body></html>`;
    const cases: [string, string, string][] = [
      ['windows-1251', 'win1251', ru],
      ['koi8-r', 'koi8-r', ru],
      ['iso-8859-7', 'iso-8859-7', 'Η Αθήνα είναι η πρωτεύουσα της Ελλάδας και η μεγαλύτερη πόλη της χώρας.'],
      ['windows-1256', 'win1256', 'القاهرة هي عاصمة جمهورية مصر العربية وأكبر مدنها'],
      ['windows-1255', 'win1255', 'ירושלים היא בירת ישראל והעיר הגדולה ביותר בה'],
    ];
    for (const [charset, iconvName, text] of cases) {
      const decoded = decodeBody(new Uint8Array(iconv.encode(page(text), iconvName)), 'text/html');
      assert.deepEqual([decoded.charset, decoded.text.includes(text)], [charset, true], charset);
    }
    // Latin scripts with the most accents stay windows-1252 (the detector says ISO-8859-2 at 56 for French).
    for (const text of [
      'Le café est très bon, où est la gare? Déjà vu, naïve façade.',
      'Die Größe der Straße überrascht. Äpfel und Öl für die Küche.',
    ]) {
      assert.equal(
        decodeBody(new Uint8Array(iconv.encode(page(text), 'win1252')), 'text/html').charset,
        'windows-1252',
      );
    }
  });
  it('undeclared ISO-2022-JP (7-bit, so valid UTF-8) is read by its escapes', () => {
    const text = '日本語のページです。東京駅の案内。';
    // ISO-2022-JP's JIS X 0208 bytes are EUC-JP's with the high bit off, between ESC $ B and ESC ( B.
    const jis = [...iconv.encode(text, 'EUC-JP')].map((b) => b & 0x7f);
    const bytes = concat(
      ascii('<title>'),
      new Uint8Array([0x1b, 0x24, 0x42, ...jis, 0x1b, 0x28, 0x42]),
      ascii('</title>'),
    );
    assert.deepEqual(decodeBody(bytes, 'text/html'), {
      text: `<title>${text}</title>`,
      charset: 'iso-2022-jp',
    });
  });
  it('undeclared UTF-8 with a stray byte stays UTF-8 (the byte becomes U+FFFD), not windows-1252 mojibake', () => {
    const text = 'Café résumé, crème brûlée à la française: déjà vu.';
    const bytes = concat(
      new Uint8Array(Buffer.from(`<title>${text}</title><p>`)),
      new Uint8Array([0xa0]),
      new Uint8Array(Buffer.from(`${text}</p>`)),
    );
    assert.deepEqual(decodeBody(bytes, 'text/html'), {
      text: `<title>${text}</title><p>\uFFFD${text}</p>`,
      charset: 'utf-8',
    });
    // Too few well-formed sequences among the strays: windows-1252 as before.
    const western = concat(
      new Uint8Array(iconv.encode('Le café est très bon, où est la gare? ', 'win1252')),
      new Uint8Array(Buffer.from('Déjà vu.')),
    );
    assert.equal(decodeBody(western, null).charset, 'windows-1252');
  });
  it('markup that opens and never closes is read in one pass: the text between tags, metas in order', () => {
    assert.equal(
      withoutMarkup(
        '<title>T</title><script type=x>var a = "<b>";</script><STYLE>p{}</style>Hi <b>there</b><scripts>x</scripts>end<br',
      ),
      ' T   Hi  there  x end ',
    );
    assert.equal(withoutMarkup(`${'<'.repeat(65_536)}é`), ' ');
    // 64 KB of unclosed metas, then nothing: no charset, and no quadratic scan to find that out.
    assert.equal(decodeBody(ascii('<meta '.repeat(10_000)), null).charset, 'utf-8');
    assert.equal(
      decodeBody(ascii('<meta name="a>b" charset=koi8-r><meta charset=utf-8>'), null).charset,
      'koi8-r',
    );
  });
  it("reads labels as browsers do (the WHATWG table), not by the names' letter", () => {
    const cases: [string, number[], string, string][] = [
      ['x-cp1251', [0xcf, 0xf0], 'windows-1251', 'Пр'],
      ['iso-8859-9', [0x93, 0xfd, 0x80], 'windows-1254', '\u201cı€'],
      ['latin5', [0xd0], 'windows-1254', 'Ğ'],
      ['tis-620', [0x93, 0xa1], 'windows-874', '\u201cก'],
      ['l1', [0x80], 'windows-1252', '€'],
      ['ANSI_X3.4-1968', [0xe9], 'windows-1252', 'é'],
      ['gb2312', [0xa2, 0xe3], 'gbk', '€'],
      ['unicode', [0x3c, 0x00, 0x70, 0x00], 'utf-16le', '<p'],
      ['iso-2022-jp', [...Buffer.from('\u001b$BF|K\\8l\u001b(B', 'latin1')], 'iso-2022-jp', '日本語'],
      ['koi8', [0xf0], 'koi8-r', 'П'],
    ];
    for (const [label, bytes, charset, text] of cases)
      assert.deepEqual(
        decodeBody(new Uint8Array(bytes), `text/plain; charset=${label}`, 'none'),
        { text, charset },
        label,
      );
    // Labels browsers do not know are passed over: utf-7 would have dropped "+b-".
    assert.deepEqual(decodeBody(ascii('a+b-c'), 'text/html; charset=utf-7'), {
      text: 'a+b-c',
      charset: 'utf-8',
    });
    // Any UTF-16 name in a meta of an ASCII byte stream is UTF-8.
    const ucs2 = concat(ascii('<meta charset="ucs-2">'), new Uint8Array(Buffer.from('日本')));
    assert.deepEqual(decodeBody(ucs2, 'text/html'), { text: '<meta charset="ucs-2">日本', charset: 'utf-8' });
  });
  it('a meta counts in HTML only; XML names its encoding in its declaration', () => {
    const plain = concat(
      ascii('Example: <meta charset="windows-1251"> '),
      new Uint8Array(Buffer.from('Привет')),
    );
    assert.deepEqual(decodeBody(plain, 'text/plain', 'none'), {
      text: 'Example: <meta charset="windows-1251"> Привет',
      charset: 'utf-8',
    });
    const xml = concat(
      ascii('<?xml version="1.0" encoding="Shift_JIS"?><doc>'),
      new Uint8Array(iconv.encode('日本語', 'shift_jis')),
    );
    assert.deepEqual(decodeBody(xml, 'text/xml', 'xml'), {
      text: '<?xml version="1.0" encoding="Shift_JIS"?><doc>日本語',
      charset: 'shift_jis',
    });
    // The header still wins.
    assert.equal(decodeBody(xml, 'text/xml; charset=utf-8', 'xml').charset, 'utf-8');
  });
  it("a '>' inside a quoted attribute does not end the meta", () => {
    const bytes = concat(
      ascii('<meta name="x" content="a>b" charset="windows-1251">'),
      new Uint8Array([0xcf]),
    );
    assert.deepEqual(decodeBody(bytes, null).charset, 'windows-1251');
  });
  it('works on a view into a larger buffer', () => {
    const whole = new Uint8Array(Buffer.from('xx<p>ok</p>yy'));
    assert.equal(decodeBody(whole.subarray(2, 11), null).text, '<p>ok</p>');
  });
});
