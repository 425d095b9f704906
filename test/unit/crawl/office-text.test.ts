import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { officeText } from '../../../shared/crawl/extract/office-text.ts';
import { OFFICE_MIME, officeKind } from '../../../shared/crawl/extract/office-zip.ts';
import { minimalDocx, minimalOdf, minimalPptx, minimalXlsx, oleFile } from '../../helpers/office-builders.ts';

const LIMITS = { maxEntries: 1000, maxTotalBytes: 10 * 1024 * 1024 };
const PROPS = {
  title: 'Travel policy',
  creator: 'Ada Lovelace',
  subject: 'Expenses',
  keywords: 'travel, expenses',
  modified: '2026-10-01T08:30:00Z',
};

function read(kind: Parameters<typeof officeText>[0], bytes: Uint8Array, limits = LIMITS) {
  const doc = officeText(kind, bytes, limits);
  assert.notEqual(typeof doc, 'string', String(doc));
  return doc as Exclude<typeof doc, string>;
}

describe('officeText', () => {
  it('docx: paragraphs and runs in order, tabs as spaces, core properties', () => {
    const bytes = minimalDocx(
      [
        ['Hello ', 'world.'],
        ['Second', '\t', 'paragraph &amp; more'],
      ],
      PROPS,
    );
    const doc = read('docx', bytes);
    assert.equal(doc.text, 'Hello world. Second paragraph & more');
    assert.equal(doc.title, 'Travel policy');
    assert.deepEqual(doc.info, { author: 'Ada Lovelace', subject: 'Expenses', keywords: 'travel, expenses' });
    assert.equal(doc.lastModified, '2026-10-01T08:30:00.000Z');
    assert.equal(doc.cut, undefined);
  });

  it('docx: the main part the package names (Word Online writes word/document2.xml)', () => {
    const { 'word/document.xml': main, ...files } = unzipSync(minimalDocx([['Online body']]));
    files['word/document2.xml'] = new Uint8Array(main ?? []);
    const rels = new TextDecoder().decode(files['_rels/.rels']);
    files['_rels/.rels'] = strToU8(
      rels.replace('Target="word/document.xml"', 'Target="/word/document2.xml"'),
    );
    assert.equal(read('docx', zipSync(files)).text, 'Online body');
  });

  it('docx: deleted text and field codes are no content; no properties give no title', () => {
    const extra =
      '<w:p><w:del><w:r><w:delText>removed</w:delText></w:r></w:del><w:r><w:instrText> PAGE </w:instrText></w:r><w:r><w:t>kept</w:t></w:r></w:p>';
    const doc = read('docx', minimalDocx([['Body']], {}, extra));
    assert.equal(doc.text, 'Body kept');
    assert.equal(doc.title, null);
    assert.deepEqual(doc.info, {});
    assert.equal(doc.lastModified, null);
  });

  it("docx: a text box's text once (Word writes it again in mc:Fallback for older readers)", () => {
    const box = (t: string) => `<w:p><w:r><w:t>${t}</w:t></w:r></w:p>`;
    const extra = `<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing>${box('TextBoxOnce')}</w:drawing></mc:Choice><mc:Fallback><w:pict>${box('TextBoxOnce')}</w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>`;
    assert.equal(read('docx', minimalDocx([['Body']], {}, extra)).text, 'Body TextBoxOnce');
  });

  it("odt: a tracked change's deleted text and its author are no content", () => {
    const body =
      '<office:text><text:tracked-changes><text:changed-region text:id="c1"><text:deletion><office:change-info><dc:creator>Bob</dc:creator></office:change-info><text:p>DeletedOdfText</text:p></text:deletion></text:changed-region></text:tracked-changes><text:p>Visible text</text:p></office:text>';
    assert.equal(read('odt', minimalOdf(body)).text, 'Visible text');
  });

  it('xlsx: sheet names in workbook order, shared strings resolved, numbers as written', () => {
    const bytes = minimalXlsx(
      [
        [
          'Budget',
          [
            ['Item', 'Cost'],
            ['Flights', 1250.5],
          ],
        ],
        ['Notes', [['Approved by finance']]],
      ],
      { title: 'Budget 2027' },
    );
    const doc = read('xlsx', bytes);
    assert.equal(doc.text, 'Budget Item Cost Flights 1250.5 Notes Approved by finance');
    assert.equal(doc.title, 'Budget 2027');
  });

  it('xlsx: inline strings and booleans', () => {
    const files = unzipSync(minimalXlsx([['S', [['x']]]]));
    files['xl/worksheets/sheet1.xml'] = strToU8(
      '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>inline text</t></is></c><c r="B1" t="b"><v>1</v></c><c r="C1"><f>SUM(1,2)</f><v>3</v></c></row></sheetData></worksheet>',
    );
    assert.equal(read('xlsx', zipSync(files)).text, 'S inline text TRUE 3');
  });

  it("pptx: slides in the deck's order (presentation.xml), not their files' numbers", () => {
    const deck = minimalPptx([['ShownThird'], ['ShownFirst'], ['ShownSecond']], {}, [2, 3, 1]);
    assert.equal(read('pptx', deck).text, 'ShownFirst ShownSecond ShownThird');
  });

  it('pptx: slides in numeric order (slide10 after slide9)', () => {
    const slides = Array.from({ length: 11 }, (_, i) => [`Slide ${i + 1} title`, `point ${i + 1}`]);
    const doc = read('pptx', minimalPptx(slides, { title: 'Kick-off' }));
    const expected = slides.map((s) => s.join(' ')).join(' ');
    assert.equal(doc.text, expected);
    assert.equal(doc.title, 'Kick-off');
  });

  it("docx footnotes and endnotes, pptx speaker notes (not a notes page's slide number) are text too", () => {
    const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
    const notesPart = (tag: string, text: string) =>
      `<?xml version="1.0"?><w:${tag}s xmlns:w="${W}"><w:${tag} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:${tag}><w:${tag} w:id="1"><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:${tag}></w:${tag}s>`;
    const docx = minimalDocx([['Body', '\t', 'text']], {}, '', {
      'word/footnotes.xml': notesPart('footnote', 'FootnoteWord'),
      'word/endnotes.xml': notesPart('endnote', 'EndnoteWord'),
    });
    assert.equal(read('docx', docx).text, 'Body text FootnoteWord EndnoteWord');
    const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';
    const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';
    const notes = (n: number, text: string) =>
      `<?xml version="1.0"?><p:notes xmlns:a="${A}" xmlns:p="${P}"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>${text}</a:t></a:r></a:p></p:txBody></p:sp><p:sp><p:txBody><a:p><a:fld type="slidenum"><a:t>${n}</a:t></a:fld></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:notes>`;
    const deck = minimalPptx([['One'], ['Two']], {}, [1, 2], {
      'ppt/notesSlides/notesSlide10.xml': notes(10, 'LaterNote'),
      'ppt/notesSlides/notesSlide2.xml': notes(2, 'SpeakerNote'),
    });
    assert.equal(read('pptx', deck).text, 'One Two SpeakerNote LaterNote');
  });

  it('odt: headings, paragraphs, spans and table cells; styles left out; meta.xml', () => {
    const body =
      '<office:text><text:h text:outline-level="1">Minutes</text:h><text:p>Present: <text:span text:style-name="T1">Ada</text:span><text:s/>and Charles</text:p><table:table table:name="T"><table:table-row><table:table-cell><text:p>A1</text:p></table:table-cell><table:table-cell><text:p>B1</text:p></table:table-cell></table:table-row></table:table></office:text>';
    const doc = read(
      'odt',
      minimalOdf(body, {
        title: 'Board minutes',
        initialCreator: 'Grace Hopper',
        date: '2026-09-15T10:00:00.123456789',
        keywords: ['board', 'minutes'],
      }),
    );
    assert.equal(doc.text, 'Minutes Present: Ada and Charles A1 B1');
    assert.equal(doc.title, 'Board minutes');
    assert.deepEqual(doc.info, { author: 'Grace Hopper', keywords: 'board, minutes' });
    assert.equal(doc.lastModified, '2026-09-15T10:00:00.123Z');
  });

  it('a zip bomb part (a document.xml over limits.archiveBytes) is not inflated: noted', () => {
    const huge = minimalDocx([['x'.repeat(3 * 1024 * 1024)]]);
    assert.ok(huge.length < 64 * 1024, 'compresses well');
    const doc = officeText('docx', huge, { maxEntries: 100, maxTotalBytes: 1024 * 1024 });
    assert.equal(typeof doc, 'string');
    assert.match(
      String(doc),
      /word\/document\.xml declares \d+ bytes, over the \d+ left of limits\.archiveBytes/,
    );
  });

  it('a part lying about its size is cut at its declared size: the prefix read, the cut said', () => {
    const bytes = minimalDocx([['Start of the text'], ['y'.repeat(200_000)]]);
    lieAboutSize(bytes, 'word/document.xml', 1200);
    const doc = read('docx', bytes);
    assert.match(doc.text, /^Start of the text y+$/);
    assert.match(doc.cut ?? '', /lying size/);
  });

  it('an encrypted OOXML file (an OLE compound file) is noted, not a crash', () => {
    assert.equal(
      officeText('docx', oleFile(), LIMITS),
      'encrypted Office document: a password is needed to open it',
    );
  });

  it('a legacy .doc under a .docx name is said to be one, not an encrypted document', () => {
    assert.equal(
      officeText('docx', oleFile(['WordDocument', '\u0005SummaryInformation']), LIMITS),
      'a legacy binary Office document (.doc, .xls, .ppt) under an OOXML name or type: not supported',
    );
  });

  it('an encrypted OpenDocument (manifest encryption-data) is noted', () => {
    const enc = '<manifest:encryption-data manifest:checksum-type="SHA1/1K"/>';
    const doc = officeText('odt', minimalOdf('<office:text/>', {}, undefined, enc), LIMITS);
    assert.equal(doc, 'encrypted OpenDocument: a password is needed to open it');
  });

  it('a zip without the expected part, or no zip at all, is noted', () => {
    assert.equal(
      officeText('docx', zipSync({ 'a.txt': strToU8('hi') }), LIMITS),
      'not an Office document: no word/document.xml',
    );
    assert.match(String(officeText('xlsx', strToU8('not a zip'), LIMITS)), /^unreadable Office document/);
  });
});

describe('officeKind', () => {
  const docx = minimalDocx([['x']]);
  it('names the kind by media type, by the parts of a download or zip, by the URL of an OLE file', () => {
    assert.equal(officeKind('http://a.test/x', OFFICE_MIME.xlsx, new Uint8Array()), 'xlsx');
    assert.equal(officeKind('http://a.test/get?id=1', 'application/octet-stream', docx), 'docx');
    assert.equal(officeKind('http://a.test/get?id=1', 'application/zip', minimalPptx([['x']])), 'pptx');
    assert.equal(officeKind('http://a.test/get', null, minimalXlsx([['S', [['x']]]])), 'xlsx');
    const ods = minimalOdf('', {}, 'application/vnd.oasis.opendocument.spreadsheet');
    assert.equal(officeKind('http://a.test/get', 'application/octet-stream', ods), 'ods');
    assert.equal(officeKind('http://a.test/secret.docx', 'application/octet-stream', oleFile()), 'docx');
  });

  it('takes a zip whose parts say Office under a type that names another format (its bytes were indexed as text)', () => {
    for (const type of ['text/html', 'text/plain', 'application/msword'])
      assert.equal(officeKind('http://a.test/x.docx', type, docx), 'docx', type);
  });

  it('leaves legacy binaries, plain zips and declared other types alone', () => {
    assert.equal(officeKind('http://a.test/old.doc', 'application/msword', oleFile()), null);
    assert.equal(officeKind('http://a.test/old.doc', 'application/octet-stream', oleFile()), null);
    assert.equal(
      officeKind('http://a.test/b.zip', 'application/zip', zipSync({ 'a.txt': strToU8('a') })),
      null,
    );
    assert.equal(officeKind('http://a.test/x.docx', 'text/html', strToU8('<html>not a zip</html>')), null);
  });
});

/** Rewrites an entry's uncompressed size in the central directory and its local header. */
function lieAboutSize(zip: Uint8Array, name: string, size: number): void {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const n = new TextEncoder().encode(name);
  for (let at = 0; at + 46 < zip.length; at++) {
    const sig = view.getUint32(at, true);
    const [nameAt, sizeAt] = sig === 0x02014b50 ? [46, 24] : sig === 0x04034b50 ? [30, 22] : [0, 0];
    if (nameAt === 0 || view.getUint16(at + (sig === 0x02014b50 ? 28 : 26), true) !== n.length) continue;
    if (Buffer.from(zip.subarray(at + nameAt, at + nameAt + n.length)).equals(n))
      view.setUint32(at + sizeAt, size, true);
  }
}
