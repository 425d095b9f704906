/**
 * The text and properties of an Office document (.docx, .xlsx, .pptx, .odt, .ods, .odp), as Tika
 * gives them to Elastic's crawler and Norconex: the body's text in reading order, the title,
 * author, subject and keywords, and the last-modified date the document records.
 * Elements are matched by local name: producers other than Office write other prefixes.
 */
import { addToGroup } from '../../groups.ts';
import { boundedParser } from './bounded-parser.ts';
import { isOleFile, type OfficeKind, type OfficeParts, type PartLimits, readParts } from './office-zip.ts';
import type { PdfInfoName } from './pdf-text.ts';
import { collapse } from './visible-text.ts';

/** What an Office document gives the index. */
export interface OfficeText {
  /** the body's text, whitespace collapsed to single spaces */
  text: string;
  title: string | null;
  /** author, subject (else description) and keywords, named as a PDF's are */
  info: Partial<Record<PdfInfoName, string>>;
  /** the document's own last-modified date, ISO, or null */
  lastModified: string | null;
  /** why the text is incomplete (a limit cut a part), when it is */
  cut?: string;
}

const ODF: ReadonlySet<OfficeKind> = new Set(['odt', 'ods', 'odp']);

/** The parts each kind reads: its text parts and its properties. */
const WANTED: Record<'ooxml' | 'odf', RegExp> = {
  ooxml:
    /^(_rels\/\.rels|docProps\/core\.xml|word\/document\d*\.xml|word\/(?:footnotes|endnotes)\.xml|ppt\/notesSlides\/notesSlide\d+\.xml|xl\/workbook\.xml|xl\/_rels\/workbook\.xml\.rels|xl\/sharedStrings\.xml|xl\/worksheets\/[^/]+\.xml|ppt\/slides\/slide\d+\.xml|ppt\/presentation\.xml|ppt\/_rels\/presentation\.xml\.rels)$/,
  odf: /^(content\.xml|meta\.xml|META-INF\/manifest\.xml)$/,
};

/**
 * An Office document's text within the archive limits, or why there is none (a string: encrypted,
 * corrupt, its text part missing or over a limit).
 */
export function officeText(kind: OfficeKind, bytes: Uint8Array, limits: PartLimits): OfficeText | string {
  const odf = ODF.has(kind);
  // Office saves a password-protected .docx/.xlsx/.pptx as an OLE file holding the encrypted
  // package (MS-OFFCRYPTO §2.3.4.1), so one is known by its first bytes.
  if (isOleFile(bytes)) {
    if (odf) return 'not an OpenDocument file';
    // The encrypted package is a stream of that name; without it, this is a legacy binary
    // (.doc, .xls, .ppt) under an OOXML name, which a password would not open (helper-53).
    return hasUtf16(bytes, 'EncryptedPackage')
      ? 'encrypted Office document: a password is needed to open it'
      : 'a legacy binary Office document (.doc, .xls, .ppt) under an OOXML name or type: not supported';
  }
  let read: OfficeParts;
  try {
    read = readParts(bytes, (name) => WANTED[odf ? 'odf' : 'ooxml'].test(name), limits);
  } catch (error) {
    return `unreadable Office document (${(error as Error).message || 'not a zip file'})`;
  }
  if (read.unread.length > 0)
    return `encrypted or unreadable Office document parts: ${read.unread.join('; ')}`;
  const manifest = read.parts.get('META-INF/manifest.xml');
  // ODF 1.2 Part 3 §4.8: an encrypted part is listed with its <manifest:encryption-data>.
  if (manifest && /encryption-data/.test(decode(manifest)))
    return 'encrypted OpenDocument: a password is needed to open it';
  const body = odf ? odfBody(read) : ooxmlBody(kind, read);
  const cut = read.cut.length > 0 ? read.cut.slice(0, 3).join('; ') : undefined;
  if (typeof body !== 'string') return cut ? `Office document not read: ${cut}` : body.error;
  const props = properties(read.parts.get(odf ? 'meta.xml' : 'docProps/core.xml'));
  return { text: collapse(body), ...props, ...(cut ? { cut } : {}) };
}

function decode(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** Callbacks on elements by local name, and on text with the names of the open elements. */
interface Walk {
  open?: (name: string, attrs: Record<string, string>) => void;
  close?: (name: string) => void;
  text?: (text: string, open: string[]) => void;
}

const local = (name: string) => name.slice(name.indexOf(':') + 1);

/** Parses one XML part, fed in 1 MiB pieces (a part can be as large as limits.archiveBytes). */
function walk(bytes: Uint8Array, cbs: Walk): void {
  const open: string[] = [];
  const parser = boundedParser(
    {
      onopentag: (name, attrs) => {
        open.push(local(name));
        cbs.open?.(local(name), attrs);
      },
      onclosetag: (name) => {
        open.pop();
        cbs.close?.(local(name));
      },
      ontext: (t) => cbs.text?.(t, open),
    },
    { xmlMode: true },
  );
  const decoder = new TextDecoder();
  const step = 1024 * 1024;
  for (let at = 0; at < bytes.length; at += step)
    parser.write(decoder.decode(bytes.subarray(at, at + step), { stream: true }));
  parser.end(decoder.decode());
}

/**
 * The text of a part: the text inside `textIn` elements (all text when null), a space where a
 * `breaks` element opens or closes (paragraphs, cells, tabs, line breaks). Not the text of an
 * `mc:Fallback`: Word writes every text box and shape twice, the copy for older readers there
 * ("TextBoxOnce TextBoxOnce", helper-53).
 */
function partText(
  bytes: Uint8Array,
  textIn: string | null,
  breaks: ReadonlySet<string>,
  /** an element whose text is left out (a notes page's slide-number field) */
  skipIn?: string,
): string {
  const out: string[] = [];
  const space = (name: string) => breaks.has(name) && out.push(' ');
  walk(bytes, {
    open: space,
    close: space,
    text: (t, open) =>
      (textIn === null || open.includes(textIn)) &&
      !open.includes('Fallback') &&
      (skipIn === undefined || !open.includes(skipIn)) &&
      out.push(t),
  });
  return out.join('');
}

const WORD_BREAKS = new Set(['p', 'tab', 'br', 'cr', 'tc']);
const SLIDE_BREAKS = new Set(['p', 'br', 'tc']);
const ODF_BREAKS = new Set(['p', 'h', 's', 'tab', 'line-break', 'table-cell', 'list-item', 'frame']);

function ooxmlBody(kind: OfficeKind, read: OfficeParts): string | Missing {
  if (kind === 'docx') {
    // The package's relationships name the main part: Word Online writes word/document2.xml.
    const main = [...relationTargets(read, '_rels/.rels', '').values()].find((t) =>
      /^word\/document\d*\.xml$/.test(t),
    );
    const part = main ?? 'word/document.xml';
    const doc = read.parts.get(part);
    if (!doc) return missing(read, part);
    // Footnotes and endnotes are the document's text too (a cited source was in no document).
    const notes = ['word/footnotes.xml', 'word/endnotes.xml'].flatMap((p) => read.parts.get(p) ?? []);
    return [doc, ...notes].map((b) => partText(b, 't', WORD_BREAKS)).join(' ');
  }
  if (kind === 'pptx') {
    const slides = slideOrder(read);
    if (slides.length === 0) return missing(read, 'ppt/slides/slide1.xml');
    // The speaker notes after the slides, in their files' order, their slide-number fields left out.
    const notes = [...read.parts.keys()]
      .filter((n) => NOTES_SLIDE.test(n))
      .sort((a, b) => partNumber(a) - partNumber(b));
    return [
      ...slides.map((s) => partText(read.parts.get(s) as Uint8Array, 't', SLIDE_BREAKS)),
      ...notes.map((n) => partText(read.parts.get(n) as Uint8Array, 't', SLIDE_BREAKS, 'fld')),
    ].join(' ');
  }
  return workbookText(read);
}

const NOTES_SLIDE = /^ppt\/notesSlides\/notesSlide\d+\.xml$/;
const partNumber = (name: string) => Number(/(\d+)\.xml$/.exec(name)?.[1] ?? 0);

/** Why a document has no text. */
interface Missing {
  error: string;
}

/** No text part: it was cut (the caller says by which limit) or the file is no such document. */
function missing(read: OfficeParts, part: string): Missing {
  return { error: read.names.includes(part) ? `${part} not read` : `not an Office document: no ${part}` };
}

function odfBody(read: OfficeParts): string | Missing {
  const content = read.parts.get('content.xml');
  if (!content) return missing(read, 'content.xml');
  // Text outside the body (automatic styles, font declarations) is no content, and neither is a
  // change tracked: its deleted text and its author's name were indexed (helper-53).
  const out: string[] = [];
  walk(content, {
    open: (name) => ODF_BREAKS.has(name) && out.push(' '),
    close: (name) => ODF_BREAKS.has(name) && out.push(' '),
    text: (t, open) => open.includes('body') && !open.includes('tracked-changes') && out.push(t),
  });
  return out.join('');
}

/**
 * A workbook's text: each sheet's name, then its cells in row order (shared strings resolved,
 * inline strings, numbers as written, booleans as TRUE/FALSE), sheets in the workbook's order.
 */
function workbookText(read: OfficeParts): string | Missing {
  const shared = sharedStrings(read.parts.get('xl/sharedStrings.xml'));
  const sheets = sheetOrder(read);
  if (sheets.length === 0) return missing(read, 'xl/worksheets/sheet1.xml');
  return sheets.map(({ name, part }) => `${name} ${sheetText(part, shared)}`).join(' ');
}

/** The shared string table (ECMA-376 §18.4): each `<si>`'s text, phonetic runs (`<rPh>`) left out. */
function sharedStrings(bytes: Uint8Array | undefined): string[] {
  const strings: string[] = [];
  let current: string[] | null = null;
  if (!bytes) return strings;
  walk(bytes, {
    open: (name) => {
      if (name === 'si') current = [];
    },
    close: (name) => {
      if (name === 'si' && current) strings.push(current.join(''));
    },
    text: (t, open) => open.at(-1) === 't' && !open.includes('rPh') && current?.push(t),
  });
  return strings;
}

/** The workbook's sheets in its order with their parts (through its relationships), then any other sheet part. */
function sheetOrder(read: OfficeParts): { name: string; part: Uint8Array }[] {
  const list = { part: 'xl/workbook.xml', rels: 'xl/_rels/workbook.xml.rels', base: 'xl/', element: 'sheet' };
  return listedParts(read, list, /^xl\/worksheets\/[^/]+\.xml$/).map(({ path, attrs }) => ({
    name: attrs.name ?? '',
    part: read.parts.get(path) as Uint8Array,
  }));
}

/**
 * A deck's slides as it shows them: `presentation.xml`'s slide list (a slide moved keeps its file
 * name; the file numbers read a reordered deck in the wrong order, helper-53), then any other
 * slide by its number (slide10 after slide9).
 */
function slideOrder(read: OfficeParts): string[] {
  const list = {
    part: 'ppt/presentation.xml',
    rels: 'ppt/_rels/presentation.xml.rels',
    base: 'ppt/',
    element: 'sldId',
  };
  return listedParts(read, list, /^ppt\/slides\/slide\d+\.xml$/).map((p) => p.path);
}

/**
 * The parts a list part names, in its order, through its relationships (a workbook's `<sheet>`s, a
 * deck's `<sldId>`s: their `r:id`), each with its listing element's attributes; then the other
 * parts `unlisted` matches, by the numbers in their names (sheet10 after sheet9). Only parts read.
 */
function listedParts(
  read: OfficeParts,
  list: { part: string; rels: string; base: string; element: string },
  unlisted: RegExp,
): { path: string; attrs: Record<string, string> }[] {
  const targets = relationTargets(read, list.rels, list.base);
  const listed: { path: string; attrs: Record<string, string> }[] = [];
  const part = read.parts.get(list.part);
  if (part)
    walk(part, {
      open: (name, attrs) => {
        // The relationship id is a prefixed `id` (`r:id`): a slide's own `id` is a number.
        const id = Object.entries(attrs).find(([k]) => local(k) === 'id' && k !== 'id')?.[1];
        const path = id === undefined ? undefined : targets.get(id);
        if (name === list.element && path && read.parts.has(path)) listed.push({ path, attrs });
      },
    });
  const named = new Set(listed.map((l) => l.path));
  const others = [...read.parts.keys()]
    .filter((p) => unlisted.test(p) && !named.has(p))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return [...listed, ...others.map((path) => ({ path, attrs: {} }))];
}

/** A relationships part's targets by id, as part names (`slides/slide1.xml` under `base` → `ppt/slides/slide1.xml`). */
function relationTargets(read: OfficeParts, rels: string, base: string): Map<string, string> {
  const targets = new Map<string, string>();
  const part = read.parts.get(rels);
  if (part)
    walk(part, {
      open: (name, a) => {
        if (name === 'Relationship' && a.Id && a.Target)
          targets.set(a.Id, a.Target.startsWith('/') ? a.Target.slice(1) : `${base}${a.Target}`);
      },
    });
  return targets;
}

/** One worksheet's cells (`<c t="…"><v>` or `<is><t>`), in the order written (rows, then columns). */
function sheetText(bytes: Uint8Array, shared: string[]): string {
  const out: string[] = [];
  let type = '';
  let value: string[] = [];
  walk(bytes, {
    open: (name, a) => {
      if (name !== 'c') return;
      type = a.t ?? 'n';
      value = [];
    },
    text: (t, open) => {
      const inner = open.at(-1);
      if (open.includes('c') && (inner === 'v' || (inner === 't' && open.includes('is')))) value.push(t);
    },
    close: (name) => {
      if (name !== 'c' || value.length === 0) return;
      const v = value.join('');
      out.push(type === 's' ? (shared[Number(v)] ?? '') : type === 'b' ? (v === '1' ? 'TRUE' : 'FALSE') : v);
      value = [];
    },
  });
  return out.join(' ');
}

/**
 * The document's properties: OOXML's core properties (docProps/core.xml: `dc:title`, `dc:creator`,
 * `dc:subject`, `dc:description`, `cp:keywords`, `dcterms:modified`) or ODF's meta.xml (`dc:title`,
 * `meta:initial-creator`, else `dc:creator`, `meta:keyword`s, `dc:date`).
 */
function properties(bytes: Uint8Array | undefined): Pick<OfficeText, 'title' | 'info' | 'lastModified'> {
  // Each element's text, in full (entities can split it into pieces), under its local name.
  const found = new Map<string, string[]>();
  const texts: string[][] = [];
  if (bytes)
    walk(bytes, {
      open: () => texts.push([]),
      text: (t) => texts.at(-1)?.push(t),
      close: (name) => {
        const value = collapse(texts.pop()?.join('') ?? '');
        if (value) addToGroup(found, name, value);
      },
    });
  const one = (...names: string[]) => {
    for (const n of names) {
      const value = found.get(n)?.join(', ');
      if (value) return value;
    }
    return undefined;
  };
  const info: OfficeText['info'] = {};
  const author = one('initial-creator', 'creator');
  const subject = one('subject', 'description');
  const keywords = one('keywords', 'keyword');
  if (author) info.author = author;
  if (subject) info.subject = subject;
  if (keywords) info.keywords = keywords;
  const date = one('modified', 'date');
  const ms = date === undefined ? Number.NaN : Date.parse(date);
  return {
    title: one('title') ?? null,
    info,
    lastModified: Number.isNaN(ms) ? null : new Date(ms).toISOString(),
  };
}

/** Whether `text` is written in `bytes` in UTF-16LE (an OLE directory entry's name). */
function hasUtf16(bytes: Uint8Array, text: string): boolean {
  const needle = Buffer.from(text, 'utf16le');
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(needle);
}
