/**
 * Office documents (OOXML: .docx, .xlsx, .pptx; OpenDocument: .odt, .ods, .odp) are zip files:
 * which one a body is (from its media type, its URL, or its own parts when the server says
 * `application/octet-stream` or `application/zip`), and the reading of only the parts wanted,
 * within the archive limits (an Office file is a zip: a bomb disguised as .docx is cut, not read).
 */
import { crc32 } from 'node:zlib';
import { unzipSync } from 'fflate';
import { zipDirectory } from '../archives/zip-directory.ts';

export type OfficeKind = 'docx' | 'xlsx' | 'pptx' | 'odt' | 'ods' | 'odp';

/** Each kind's media type (ECMA-376 Part 2 and OASIS ODF 1.2 Part 3 §3.3). */
export const OFFICE_MIME: Record<OfficeKind, string> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
};

/** The Office kind a media type names (OFFICE_MIME read backwards). */
export const KIND_OF_MIME: ReadonlyMap<string, OfficeKind> = new Map(
  Object.entries(OFFICE_MIME).map(([k, v]) => [v, k as OfficeKind]),
);

/** Media types that say nothing of a zip's kind: the bytes (or the URL) decide. */
const UNNAMED = new Set([
  'application/octet-stream',
  'binary/octet-stream',
  'application/x-download',
  'application/force-download',
  'application/zip',
  'application/x-zip',
  'application/x-zip-compressed',
]);

/** The part only each OOXML kind has (its main part at the path Office writes). */
const OOXML_MAIN: [string, OfficeKind][] = [
  ['word/document.xml', 'docx'],
  ['xl/workbook.xml', 'xlsx'],
  ['ppt/presentation.xml', 'pptx'],
];

/** An OLE2 compound file (MS-CFB): a legacy .doc, or an OOXML file encrypted with a password. */
export function isOleFile(bytes: Uint8Array): boolean {
  return bytes[0] === 0xd0 && bytes[1] === 0xcf && bytes[2] === 0x11 && bytes[3] === 0xe0;
}

/**
 * The Office kind of a body, or null: its declared media type when it names one, else (a download
 * or zip type, or none) its zip parts, else its URL's extension. An OLE file is an Office kind only
 * when its type or extension names one (an encrypted .docx); a legacy .doc stays unsupported.
 */
export function officeKind(url: string, mimeType: string | null, bytes: Uint8Array): OfficeKind | null {
  const named = mimeType === null ? undefined : KIND_OF_MIME.get(mimeType);
  if (named) return named;
  // A type that names another format (`text/html`, `text/plain`, `application/msword` from an old
  // server mapping) on a zip whose parts say Office: the parts win. Its bytes were indexed as text.
  if (mimeType !== null && !UNNAMED.has(mimeType)) return isZip(bytes) ? kindOfZip(bytes) : null;
  const ext = /\.(docx|xlsx|pptx|odt|ods|odp)$/i.exec(url.replace(/[?#].*$/, ''))?.[1]?.toLowerCase();
  if (isZip(bytes)) return kindOfZip(bytes) ?? (ext as OfficeKind | undefined) ?? null;
  return isOleFile(bytes) && ext ? (ext as OfficeKind) : null;
}

function isZip(bytes: Uint8Array): boolean {
  return bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

/** OOXML by its main part; ODF by its `mimetype` entry, stored first and uncompressed (ODF 1.2 Part 3 §3.3). */
function kindOfZip(bytes: Uint8Array): OfficeKind | null {
  const names = zipDirectory(bytes);
  if (names.has('[Content_Types].xml'))
    for (const [part, kind] of OOXML_MAIN) if (names.has(part)) return kind;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 30 || view.getUint16(8, true) !== 0) return null;
  const nameLength = view.getUint16(26, true);
  const start = 30 + nameLength + view.getUint16(28, true);
  const name = new TextDecoder().decode(bytes.subarray(30, 30 + nameLength));
  if (name !== 'mimetype') return null;
  const declared = new TextDecoder().decode(bytes.subarray(start, start + view.getUint32(18, true)));
  return KIND_OF_MIME.get(declared.trim()) ?? null;
}

/** Bounds on the parts read: limits.archiveEntries and limits.archiveBytes. */
export interface PartLimits {
  maxEntries: number;
  maxTotalBytes: number;
}

/** The parts read, every entry's name, and what was not read or was cut (notes), and whether a limit cut. */
export interface OfficeParts {
  parts: Map<string, Uint8Array>;
  names: string[];
  /** a limit left a wanted part out or cut it */
  cut: string[];
  /** parts that could not be read: encrypted, an unknown compression */
  unread: string[];
}

function skip(list: string[], why: string): false {
  list.push(why);
  return false;
}

/**
 * The entries `want` picks, inflated within the limits: each is charged its declared size before
 * it is inflated (fflate inflates into a buffer of that size, so a lying entry yields a prefix,
 * whose CRC-32 then fails: kept, and said cut). Throws on a corrupt zip.
 */
export function readParts(
  bytes: Uint8Array,
  want: (name: string) => boolean,
  limits: PartLimits,
): OfficeParts {
  const directory = zipDirectory(bytes);
  const out: OfficeParts = { parts: new Map(), names: [...directory.keys()], cut: [], unread: [] };
  let entries = limits.maxEntries;
  let left = limits.maxTotalBytes;
  const files = unzipSync(bytes, {
    filter: (file) => {
      if (!want(file.name)) return false;
      if (directory.get(file.name)?.encrypted) return skip(out.unread, `${file.name}: encrypted`);
      if (file.compression !== 0 && file.compression !== 8)
        return skip(out.unread, `${file.name}: compression method ${file.compression}`);
      const size = file.compression === 0 ? file.size : file.originalSize;
      if (entries <= 0) return skip(out.cut, `${file.name}: limits.archiveEntries reached`);
      if (size > left)
        return skip(
          out.cut,
          `${file.name} declares ${size} bytes, over the ${left} left of limits.archiveBytes`,
        );
      entries--;
      left -= size;
      return true;
    },
  });
  for (const [name, data] of Object.entries(files)) {
    const entry = directory.get(name);
    if (entry !== undefined && crc32(data) !== entry.crc)
      out.cut.push(`${name}: data does not match its declared size/CRC (lying size or corrupt), read as cut`);
    out.parts.set(name, data);
  }
  return out;
}
