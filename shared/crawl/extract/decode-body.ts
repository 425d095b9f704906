/**
 * Body decoding: the charset comes from the BOM, then the Content-Type header, then a
 * `<meta charset>` / `<meta http-equiv=Content-Type>` in the first 4 KiB (the WHATWG
 * "encoding sniffing" order), else UTF-8. Never throws: unknown charsets fall back to UTF-8.
 */
import iconv from 'iconv-lite';

/** Bytes scanned for a meta charset declaration (WHATWG prescan reads 1024; we allow 4 KiB). */
const META_SCAN_BYTES = 4096;
/** Matches both `<meta charset="x">` and `<meta http-equiv=Content-Type content="text/html; charset=x">`. */
const META_CHARSET = /<meta\s[^>]*?charset\s*=\s*["']?\s*([a-z0-9_:.+-]+)/i;
/** Browser label aliases (WHATWG Encoding): Latin-1 and ASCII labels decode as windows-1252. */
const ALIASES: Record<string, string> = {
  'iso-8859-1': 'windows-1252',
  'iso8859-1': 'windows-1252',
  latin1: 'windows-1252',
  'us-ascii': 'windows-1252',
  ascii: 'windows-1252',
  'x-user-defined': 'windows-1252',
};

/** Splits a Content-Type header into a lower-case mime type and charset (SMILA httpMimetype / httpCharset). */
export function parseContentType(header: string | null): { mimeType: string | null; charset: string | null } {
  if (header === null) return { mimeType: null, charset: null };
  const [type = '', ...params] = header.split(';');
  const mime = type.trim().toLowerCase();
  let charset: string | null = null;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const value = param
      .slice(eq + 1)
      .trim()
      .replace(/^["']|["']$/g, '')
      .trim()
      .toLowerCase();
    if (value !== '') charset = value;
    break;
  }
  return { mimeType: /^[^\s/]+\/[^\s/]+$/.test(mime) ? mime : null, charset };
}

function bomCharset(bytes: Uint8Array): { charset: string; length: number } | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { charset: 'utf-8', length: 3 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { charset: 'utf-16be', length: 2 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { charset: 'utf-16le', length: 2 };
  return null;
}

/** Maps a declared label to one iconv-lite can decode, or null when unknown. */
function usableCharset(label: string | null): string | null {
  if (label === null) return null;
  const lower = label.trim().toLowerCase();
  const name = ALIASES[lower] ?? lower;
  return name !== '' && iconv.encodingExists(name) ? name : null;
}

function metaCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, META_SCAN_BYTES));
  const label = META_CHARSET.exec(head.toString('latin1'))?.[1] ?? null;
  const charset = usableCharset(label);
  // WHATWG prescan: a meta declaring UTF-16 in an ASCII-compatible byte stream means UTF-8.
  return charset?.startsWith('utf-16') || charset?.startsWith('utf16') ? 'utf-8' : charset;
}

/** Decodes a response body to text, reporting the charset actually used. */
export function decodeBody(bytes: Uint8Array, contentType: string | null): { text: string; charset: string } {
  const bom = bomCharset(bytes);
  const charset =
    bom?.charset ?? usableCharset(parseContentType(contentType).charset) ?? metaCharset(bytes) ?? 'utf-8';
  const body = bytes.subarray(bom?.length ?? 0);
  try {
    return { text: iconv.decode(body, charset, { stripBOM: true }), charset };
  } catch {
    return { text: iconv.decode(body, 'utf-8'), charset: 'utf-8' };
  }
}
