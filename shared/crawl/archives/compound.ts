/**
 * Compound files (archives): detection and zip-bomb-safe extraction of zip, tar, tar.gz and gzip
 * (seed 003 WebExtractor: an element's URL is `<archive url>/<element path>`, its `_compoundPath`
 * the URLs of the compounds needed to reach it; nested compounds are extracted in turn).
 */

import { crc32 } from 'node:zlib';
import { Gunzip, unzipSync } from 'fflate';
import { OFFICE_MIME } from '../extract/office-zip.ts';
import { MAX_STORED_URL_BYTES } from '../url/scope.ts';
import { looksLikeTar, readTar, type TarEntry } from './tar.ts';
import { zipDirectory } from './zip-directory.ts';

/** Bounds on one extraction, shared by all nesting levels (zip-bomb safety). */
export interface CompoundLimits {
  /** elements (and nested archives) taken over all levels */
  maxEntries: number;
  /** bytes extracted over all levels; a nested archive counts with its own size and its elements' */
  maxTotalBytes: number;
  /** nested archive levels opened below the top one (0: nested archives are skipped) */
  maxDepth: number;
}

/** One extracted file: SMILA's element record (`httpUrl`, `_compoundPath`, content). */
export interface CompoundElement {
  url: string;
  compoundPath: string[];
  bytes: Uint8Array;
  /** the entry's path inside the archive that holds it */
  name: string;
  /** when the archive says the entry was last modified, ISO (the element's `lastModified`) */
  modified?: string;
}

/** The elements, whether a limit cut the extraction short, and why entries were skipped. */
export interface CompoundExtraction {
  elements: CompoundElement[];
  truncated: boolean;
  warnings: string[];
}

/** The container formats `extractCompound` reads. */
export type ArchiveFormat = 'zip' | 'gzip' | 'tar';

const ARCHIVE_MIME = /^application\/(zip|x-zip|x-zip-compressed|x-tar|x-gtar|gzip|x-gzip|x-compressed-tar)$/;
/** Zip containers that are documents, not compounds (OOXML, ODF, EPUB, Java archives). */
const ZIP_DOC_MIME = /^application\/(vnd\.openxmlformats-|vnd\.oasis\.opendocument\.|epub\+zip|java-archive)/;
const ZIP_DOC_EXT = /\.(docx|docm|xlsx|xlsm|pptx|pptm|odt|ods|odp|odg|epub|jar|war|apk)$/i;
const ZIP_DOC_FIRST_ENTRY = new Set(['[Content_Types].xml', 'mimetype', 'META-INF/MANIFEST.MF']);

/** Element types worth indexing, by file extension: an archive element has no Content-Type of its own. */
// biome-ignore format: a lookup table
const ELEMENT_MIME: Record<string, string> = {
  html: 'text/html', htm: 'text/html', xhtml: 'application/xhtml+xml', txt: 'text/plain', text: 'text/plain',
  md: 'text/markdown', markdown: 'text/markdown', csv: 'text/csv', tsv: 'text/tab-separated-values',
  xml: 'text/xml', pdf: 'application/pdf', rst: 'text/plain', adoc: 'text/plain', asciidoc: 'text/plain',
  org: 'text/plain', tex: 'text/plain', log: 'text/plain', json: 'text/plain', yaml: 'text/plain',
  yml: 'text/plain', ini: 'text/plain', cfg: 'text/plain', conf: 'text/plain', properties: 'text/plain',
  ...OFFICE_MIME, // an Office document's extension is its kind
};

/**
 * The mime type of an archive element from its name (SMILA's WebExtractor sets none; a search
 * index wants one), or null for anything else (binaries are not indexed as text). A name without
 * an extension (`README`, `LICENSE`, `CHANGELOG`) is text when its start is: UTF-8 without
 * control characters but tabs and line ends (Tika detects text by its content too).
 */
export function elementMimeType(name: string, bytes?: Uint8Array): string | null {
  const base = name.split('/').pop() ?? name;
  const ext = /\.([a-z0-9]+)$/i.exec(base)?.[1]?.toLowerCase();
  if (ext !== undefined) return ELEMENT_MIME[ext] ?? null;
  return bytes !== undefined && looksLikeText(bytes.subarray(0, 4096)) ? 'text/plain' : null;
}

function looksLikeText(head: Uint8Array): boolean {
  if (head.length === 0) return false;
  let text: string;
  try {
    // stream: a multi-byte character cut at the end of the sample is held back, not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
  } catch {
    return false;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what binary data shows
  return !/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text);
}

/** The archive format named by the magic bytes (`PK\x03\x04`, `\x1f\x8b`, `ustar` at 257), or null. */
export function archiveFormat(bytes: Uint8Array): ArchiveFormat | null {
  if (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) return 'zip';
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'gzip';
  const magic = String.fromCharCode(...bytes.subarray(257, 262));
  return magic === 'ustar' ? 'tar' : null;
}

/**
 * True for zip, tar and gzip content, but not for zip-based documents (.docx, .odt, .epub …).
 * The bytes decide when there are any (a mislabelled HTML error page is no archive); the
 * Content-Type only when the body is not at hand.
 */
export function isCompound(url: string, mimeType: string | null, bytes: Uint8Array): boolean {
  const mime = mimeType?.split(';')[0]?.trim().toLowerCase() ?? null;
  if (isZipDocument(url, mime, bytes)) return false;
  if (bytes.length > 0) return archiveFormat(bytes) !== null || looksLikeTar(bytes);
  return mime !== null && ARCHIVE_MIME.test(mime);
}

/** A .docx, .odt, .epub or .jar is a document whose parts must not be indexed one by one. */
function isZipDocument(url: string, mime: string | null, bytes: Uint8Array): boolean {
  if (mime !== null && ZIP_DOC_MIME.test(mime)) return true;
  if (ZIP_DOC_EXT.test(url.replace(/[?#].*$/, ''))) return true;
  if (archiveFormat(bytes) !== 'zip') return false;
  // Local file header: name length at 26, name at 30 (APPNOTE 4.3.7).
  const nameLength = (bytes[26] ?? 0) | ((bytes[27] ?? 0) << 8);
  const first = new TextDecoder().decode(bytes.subarray(30, 30 + nameLength));
  return ZIP_DOC_FIRST_ENTRY.has(first);
}

/** Inflates gzip (all members) but stops once more than `maxBytes` came out: a gzip bomb yields a prefix. */
export function gunzipCapped(bytes: Uint8Array, maxBytes: number): { bytes: Uint8Array; truncated: boolean } {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  const stream = new Gunzip((chunk) => {
    const room = maxBytes - total;
    if (chunk.length > room) truncated = true;
    const kept = chunk.length > room ? chunk.subarray(0, Math.max(room, 0)) : chunk;
    chunks.push(kept);
    total += kept.length;
  });
  // Deflate expands at most ~1032:1, so an input step of (room left / 1032) cannot overshoot the cap;
  // steps stay between 1 KiB (overshoot < 1.1 MiB) and 64 KiB (fflate's per-push overhead).
  for (let at = 0; at < bytes.length && !truncated; ) {
    const step = Math.min(64 * 1024, Math.max(1024, Math.floor((maxBytes - total) / 1032)));
    stream.push(bytes.subarray(at, at + step), at + step >= bytes.length);
    at += step;
  }
  return { bytes: chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, total), truncated };
}

interface Extraction extends CompoundExtraction {
  limits: CompoundLimits;
  entriesLeft: number;
  bytesLeft: number;
}

interface Level {
  url: string;
  compoundPath: string[];
  depth: number;
}

/** Extracts the elements of an archive, recursing into nested archives, within the given limits. */
export function extractCompound(
  bytes: Uint8Array,
  archiveUrl: string,
  limits: CompoundLimits,
): CompoundExtraction {
  const state: Extraction = {
    elements: [],
    truncated: false,
    warnings: [],
    limits,
    entriesLeft: limits.maxEntries,
    bytesLeft: limits.maxTotalBytes,
  };
  extractLevel(state, bytes, { url: archiveUrl, compoundPath: [archiveUrl], depth: 0 });
  return { elements: state.elements, truncated: state.truncated, warnings: state.warnings };
}

function extractLevel(state: Extraction, bytes: Uint8Array, level: Level): void {
  const format = archiveFormat(bytes) ?? (looksLikeTar(bytes) ? 'tar' : null);
  try {
    if (format === 'zip') extractZip(state, bytes, level);
    else if (format === 'tar') extractTar(state, bytes, level);
    else if (format === 'gzip') extractGzip(state, bytes, level);
    else state.warnings.push(`${level.url}: not a zip, tar or gzip archive`);
  } catch (error) {
    state.warnings.push(`${level.url}: corrupt ${format} archive (${(error as Error).message})`);
  }
}

function extractZip(state: Extraction, bytes: Uint8Array, level: Level): void {
  const directory = zipDirectory(bytes);
  const files = unzipSync(bytes, {
    // Runs on the central directory's declared sizes BEFORE anything is inflated. fflate inflates
    // into a buffer of the declared size, so an entry lying about its size cannot exceed it either.
    filter: (file) => {
      const entry = directory.get(file.name);
      const name = entry?.name ?? file.name;
      if (!acceptName(state, name, level)) return false;
      // Ciphertext is no text, and inflating it throws: the whole archive was lost to one entry.
      if (entry?.encrypted) {
        state.warnings.push(`${level.url}: ${name}: encrypted (password-protected), not read`);
        return false;
      }
      if (file.compression !== 0 && file.compression !== 8) {
        state.warnings.push(`${level.url}: ${name}: compression method ${file.compression} not supported`);
        return false;
      }
      return charge(state, name, file.compression === 0 ? file.size : file.originalSize, level);
    },
  });
  for (const [key, data] of Object.entries(files)) {
    const entry = directory.get(key);
    const name = entry?.name ?? key;
    // fflate stops at the declared size: an entry whose data is longer lies about its size, and
    // what came out is a prefix; its CRC-32 no longer matches. Kept (what fits), but counted as cut.
    if (entry !== undefined && crc32(data) !== entry.crc) {
      state.warnings.push(
        `${level.url}: ${name}: data does not match its declared size/CRC (lying size or corrupt), kept as cut`,
      );
      state.truncated = true;
    }
    emit(state, normalizeEntryPath(name) ?? name, data, level, entry?.modified);
  }
}

function extractTar(state: Extraction, bytes: Uint8Array, level: Level): void {
  for (const entry of readTar(bytes, state.warnings)) {
    if (!acceptTarEntry(state, entry, level)) continue;
    if (!charge(state, entry.path, entry.data.length, level)) {
      if (state.entriesLeft <= 0) return;
      continue;
    }
    emit(state, normalizeEntryPath(entry.path) ?? entry.path, entry.data, level, entry.modified);
  }
}

function acceptTarEntry(state: Extraction, entry: TarEntry, level: Level): boolean {
  if (entry.type === 'directory') return acceptName(state, `${entry.path.replace(/\/$/, '')}/`, level);
  if (entry.type !== 'file') {
    state.warnings.push(`${level.url}: ${entry.path}: ${entry.type} entry skipped (regular files only)`);
    return false;
  }
  return acceptName(state, entry.path, level);
}

/** A .gz holds one file: a tar (tar.gz) or a single element named by the gzip header or the URL. */
function extractGzip(state: Extraction, bytes: Uint8Array, level: Level): void {
  // Tar headers and padding take < 1 KiB per entry on top of the element bytes themselves.
  const cap = state.bytesLeft + 1024 * (state.entriesLeft + 2);
  const inflated = gunzipCapped(bytes, cap);
  if (inflated.truncated) {
    state.truncated = true;
    state.warnings.push(
      `${level.url}: inflates to more than ${cap} bytes (limits.archiveBytes), stopped there`,
    );
  }
  if (archiveFormat(inflated.bytes) === 'tar' || looksLikeTar(inflated.bytes)) {
    extractTar(state, inflated.bytes, level);
    return;
  }
  if (inflated.truncated) return; // a cut-off single file is not the document
  const name = gzipMemberName(bytes) ?? (urlBaseName(level.url).replace(/\.(gz|gzip)$/i, '') || 'content');
  if (acceptName(state, name, level) && charge(state, name, inflated.bytes.length, level)) {
    emit(state, normalizeEntryPath(name) ?? name, inflated.bytes, level);
  }
}

/** RFC 1952 2.3: FNAME, the original file name, follows FEXTRA when flag bit 3 is set. */
function gzipMemberName(bytes: Uint8Array): string | null {
  const flags = bytes[3] ?? 0;
  if ((flags & 0x08) === 0) return null;
  let at = 10;
  if (flags & 0x04) at += 2 + ((bytes[10] ?? 0) | ((bytes[11] ?? 0) << 8));
  const end = bytes.indexOf(0, at);
  if (end < 0) return null;
  const name = new TextDecoder('latin1').decode(bytes.subarray(at, end));
  return name.split(/[\\/]/).pop() || null;
}

function urlBaseName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '') || 'content';
  } catch {
    return 'content';
  }
}

/**
 * Directories and unsafe names (absolute, `..` segments, control characters) are skipped with a
 * warning; macOS's AppleDouble files (`__MACOSX/…`, `._name`: a file's resource fork and Finder
 * data, binary) without one: they are no documents, and read as text they were junk hits.
 */
function acceptName(state: Extraction, name: string, level: Level): boolean {
  if (/[\\/]$/.test(name)) {
    state.warnings.push(`${level.url}: ${name}: directory entry skipped`);
    return false;
  }
  if (/(^|[\\/])(__MACOSX[\\/]|\._[^\\/]*$)/.test(name)) return false;
  if (normalizeEntryPath(name) === null) {
    state.warnings.push(`${level.url}: ${name}: unsafe entry name (path traversal) skipped`);
    return false;
  }
  return true;
}

/** `./a//b` -> `a/b`; null for absolute paths, `..` segments, control characters or an empty name. */
function normalizeEntryPath(name: string): string | null {
  const unified = name.replace(/\\/g, '/');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/^\/|^[a-zA-Z]:|[\u0000-\u001f]/.test(unified)) return null;
  const segments = unified.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.length === 0 || segments.includes('..')) return null;
  return segments.join('/');
}

/** Takes an entry out of the budget; false (and `truncated`) when a limit forbids it. */
function charge(state: Extraction, name: string, size: number, level: Level): boolean {
  if (state.entriesLeft <= 0) {
    if (state.entriesLeft === 0) {
      state.warnings.push(
        `maxEntries: limits.archiveEntries (${state.limits.maxEntries}) reached, rest skipped`,
      );
      state.entriesLeft = -1; // warn once
    }
    state.truncated = true;
    return false;
  }
  if (size > state.bytesLeft) {
    state.warnings.push(
      `${level.url}: ${name}: declares ${size} bytes, over the ${state.bytesLeft} left of limits.archiveBytes (maxTotalBytes)`,
    );
    state.truncated = true;
    return false;
  }
  state.entriesLeft -= 1;
  state.bytesLeft -= size;
  return true;
}

/** An element, or a nested archive to open one level deeper (its elements keep the path to it). */
function emit(state: Extraction, path: string, bytes: Uint8Array, level: Level, modified?: string): void {
  const url = `${level.url}/${encodeURI(path).replace(/[?#]/g, encodeURIComponent)}`;
  if (url.length > MAX_STORED_URL_BYTES) {
    // Its URL could not be kept: its state write failed the whole index batch (helper-51).
    state.warnings.push(
      `${level.url}: an entry's name makes a URL of ${url.length} characters, over ${MAX_STORED_URL_BYTES}: skipped`,
    );
    return;
  }
  const nested = archiveFormat(bytes) !== null && !isZipDocument(path, null, bytes);
  if (!nested) {
    state.elements.push({
      url,
      compoundPath: level.compoundPath,
      bytes,
      name: path,
      ...(modified ? { modified } : {}),
    });
    return;
  }
  if (level.depth >= state.limits.maxDepth) {
    state.warnings.push(
      `${url}: nested archive beyond limits.archiveDepth (${state.limits.maxDepth}) skipped`,
    );
    state.truncated = true;
    return;
  }
  extractLevel(state, bytes, { url, compoundPath: [...level.compoundPath, url], depth: level.depth + 1 });
}
