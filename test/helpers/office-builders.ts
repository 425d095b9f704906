/**
 * Minimal valid Office documents built as Word, Excel, PowerPoint and LibreOffice write them:
 * the same parts, namespaces and content types, zipped with fflate (`[Content_Types].xml` or the
 * stored `mimetype` first).
 */
import { strToU8, type Zippable, zipSync } from 'fflate';

const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PKG_RELS = 'http://schemas.openxmlformats.org/package/2006/relationships';

export interface CoreProps {
  title?: string;
  creator?: string;
  subject?: string;
  keywords?: string;
  modified?: string;
}

function contentTypes(overrides: [string, string][]): string {
  return `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>${overrides
    .map(([part, type]) => `<Override PartName="/${part}" ContentType="${type}"/>`)
    .join(
      '',
    )}<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>`;
}

function rootRels(main: string): string {
  return `${XML}<Relationships xmlns="${PKG_RELS}"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="${main}"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>`;
}

function coreXml(p: CoreProps): string {
  const el = (name: string, v?: string, attrs = '') =>
    v === undefined ? '' : `<${name}${attrs}>${v}</${name}>`;
  return `${XML}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">${el('dc:title', p.title)}${el('dc:subject', p.subject)}${el('dc:creator', p.creator)}${el('cp:keywords', p.keywords)}<cp:lastModifiedBy>Editor</cp:lastModifiedBy>${el('dcterms:modified', p.modified, ' xsi:type="dcterms:W3CDTF"')}</cp:coreProperties>`;
}

/** Builds the zip, `[Content_Types].xml` first as Office writes it, deflated. */
function ooxml(
  main: string,
  mainType: string,
  parts: Record<string, string>,
  props: CoreProps,
  extra: [string, string][] = [],
): Uint8Array {
  const files: Zippable = {
    '[Content_Types].xml': strToU8(contentTypes([[main, mainType], ...extra])),
    '_rels/.rels': strToU8(rootRels(main)),
    'docProps/core.xml': strToU8(coreXml(props)),
  };
  for (const [name, xml] of Object.entries(parts)) files[name] = strToU8(xml);
  return zipSync(files, { level: 6 });
}

/** A .docx whose paragraphs are the given runs (a run list per paragraph; `\t` is a `<w:tab/>`). */
export function minimalDocx(
  paragraphs: string[][],
  props: CoreProps = {},
  bodyXml = '',
  /** more parts as they are (`word/footnotes.xml`…) */
  more: Record<string, string> = {},
): Uint8Array {
  const run = (t: string) =>
    t === '\t'
      ? '<w:r><w:tab/></w:r>'
      : `<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">${t}</w:t></w:r>`;
  const body = paragraphs
    .map((runs) => `<w:p><w:pPr><w:pStyle w:val="Normal"/></w:pPr>${runs.map(run).join('')}</w:p>`)
    .join('');
  const document = `${XML}<w:document xmlns:w="${W}" xmlns:r="${R}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" mc:Ignorable=""><w:body>${body}${bodyXml}<w:sectPr><w:pgSz w:w="12240" w:h="15840"/></w:sectPr></w:body></w:document>`;
  const main = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml';
  return ooxml('word/document.xml', main, { 'word/document.xml': document, ...more }, props);
}

/** A .xlsx: sheets by name, rows of cells (strings go to the shared string table, numbers inline). */
export function minimalXlsx(sheets: [string, (string | number)[][]][], props: CoreProps = {}): Uint8Array {
  const shared: string[] = [];
  const parts: Record<string, string> = {};
  const col = (i: number) => String.fromCharCode(65 + i);
  sheets.forEach(([, rows], s) => {
    const xmlRows = rows.map((cells, r) => {
      const xmlCells = cells.map((v, c) => {
        const ref = `${col(c)}${r + 1}`;
        if (typeof v === 'number') return `<c r="${ref}"><v>${v}</v></c>`;
        shared.push(v);
        return `<c r="${ref}" t="s"><v>${shared.length - 1}</v></c>`;
      });
      return `<row r="${r + 1}">${xmlCells.join('')}</row>`;
    });
    parts[`xl/worksheets/sheet${s + 1}.xml`] =
      `${XML}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="${R}"><dimension ref="A1"/><sheetData>${xmlRows.join('')}</sheetData></worksheet>`;
  });
  const ns = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
  parts['xl/workbook.xml'] =
    `${XML}<workbook xmlns="${ns}" xmlns:r="${R}"><sheets>${sheets.map(([name], i) => `<sheet name="${name}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('')}</sheets></workbook>`;
  parts['xl/_rels/workbook.xml.rels'] =
    `${XML}<Relationships xmlns="${PKG_RELS}">${sheets.map((_, i) => `<Relationship Id="rId${i + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`).join('')}<Relationship Id="rId${sheets.length + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`;
  parts['xl/sharedStrings.xml'] =
    `${XML}<sst xmlns="${ns}" count="${shared.length}" uniqueCount="${shared.length}">${shared.map((t) => `<si><t>${t}</t></si>`).join('')}</sst>`;
  const main = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml';
  return ooxml('xl/workbook.xml', main, parts, props);
}

/** A .pptx whose slides hold the given text boxes' paragraphs. */
export function minimalPptx(
  slides: string[][],
  props: CoreProps = {},
  /** the slide files' numbers in the order the deck shows them (a slide moved keeps its file) */
  order: number[] = slides.map((_, i) => i + 1),
  /** more parts as they are (`ppt/notesSlides/notesSlide1.xml`…) */
  more: Record<string, string> = {},
): Uint8Array {
  const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';
  const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';
  const parts: Record<string, string> = {};
  slides.forEach((paragraphs, i) => {
    const ps = paragraphs.map((t) => `<a:p><a:r><a:rPr lang="en-US"/><a:t>${t}</a:t></a:r></a:p>`).join('');
    parts[`ppt/slides/slide${i + 1}.xml`] =
      `${XML}<p:sld xmlns:a="${A}" xmlns:r="${R}" xmlns:p="${P}"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>${ps}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
  });
  parts['ppt/presentation.xml'] =
    `${XML}<p:presentation xmlns:a="${A}" xmlns:r="${R}" xmlns:p="${P}"><p:sldIdLst>${order.map((n, i) => `<p:sldId id="${256 + i}" r:id="rId${n + 1}"/>`).join('')}</p:sldIdLst></p:presentation>`;
  const rel = (n: number) =>
    `<Relationship Id="rId${n + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide${n}.xml"/>`;
  parts['ppt/_rels/presentation.xml.rels'] =
    `${XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${slides.map((_, i) => rel(i + 1)).join('')}</Relationships>`;
  const main = 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml';
  return ooxml('ppt/presentation.xml', main, { ...parts, ...more }, props);
}

/** An OpenDocument file (.odt by default): `mimetype` stored first, content.xml, meta.xml, the manifest. */
export function minimalOdf(
  bodyXml: string,
  meta: { title?: string; initialCreator?: string; date?: string; keywords?: string[] } = {},
  mimeType = 'application/vnd.oasis.opendocument.text',
  manifestExtra = '',
): Uint8Array {
  const office = 'urn:oasis:names:tc:opendocument:xmlns:office:1.0';
  const ns = `xmlns:office="${office}" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"`;
  const content = `${XML}<office:document-content ${ns} office:version="1.3"><office:font-face-decls><style:font-face style:name="Liberation Serif"/></office:font-face-decls><office:automatic-styles><style:style style:name="P1">Not content</style:style></office:automatic-styles><office:body>${bodyXml}</office:body></office:document-content>`;
  const el = (name: string, v?: string) => (v === undefined ? '' : `<${name}>${v}</${name}>`);
  const keywords = (meta.keywords ?? []).map((k) => `<meta:keyword>${k}</meta:keyword>`).join('');
  const metaXml = `${XML}<office:document-meta xmlns:office="${office}" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3"><office:meta><meta:generator>LibreOffice/7.6</meta:generator>${el('dc:title', meta.title)}${el('meta:initial-creator', meta.initialCreator)}<dc:creator>Last Editor</dc:creator>${el('dc:date', meta.date)}${keywords}</office:meta></office:document-meta>`;
  const manifest = `${XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mimeType}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">${manifestExtra}</manifest:file-entry><manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/></manifest:manifest>`;
  return zipSync({
    mimetype: [strToU8(mimeType), { level: 0 }],
    'content.xml': strToU8(content),
    'meta.xml': strToU8(metaXml),
    'META-INF/manifest.xml': strToU8(manifest),
  });
}

/**
 * The first bytes of an OLE2 compound file, and its directory's stream names in UTF-16LE (at the
 * directory sector, 512): `EncryptedPackage` and `EncryptionInfo` for an encrypted .docx
 * (MS-OFFCRYPTO), `WordDocument` for a legacy .doc.
 */
export function oleFile(streams: string[] = ['EncryptionInfo', 'EncryptedPackage']): Uint8Array {
  const bytes = new Uint8Array(1536);
  bytes.set([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
  for (const [i, name] of streams.entries()) bytes.set(Buffer.from(name, 'utf16le'), 512 + i * 128);
  return bytes;
}
