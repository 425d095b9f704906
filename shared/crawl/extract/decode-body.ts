/**
 * Body decoding: the charset comes from the BOM, then the Content-Type header, then a
 * `<meta charset>` / `<meta http-equiv=Content-Type>` in the first 64 KiB (the WHATWG
 * "encoding sniffing" order), else UTF-8. Never throws: unknown charsets fall back to UTF-8.
 */
import iconv from 'iconv-lite';

/**
 * Bytes scanned for a meta charset declaration. The WHATWG prescan reads 1024; a browser also
 * changes the encoding when its parser meets a later `<meta>` (a long inline script first), so
 * more is read here: a windows-1252 page declaring itself after 5 KB was decoded as UTF-8.
 */
const META_SCAN_BYTES = 64 * 1024;
const META_TAG = /<meta(?=[\s/])([^>]*)>/gi;
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
const CONTENT_CHARSET = /charset\s*=\s*["']?\s*([^"'\s;]+)/i;
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

/**
 * The WHATWG prescan, on the tags it reads: comments are skipped, and a `<meta>` declares a charset
 * with its `charset` attribute, or with `content` when its `http-equiv` is `content-type`. A
 * `charset=` anywhere in a meta (a description's text, a commented-out old declaration) used to
 * win, and decoded the page wrongly without a word.
 */
function metaCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, META_SCAN_BYTES))
    .toString('latin1')
    .replace(/<!--[\s\S]*?(?:-->|$)/g, '');
  for (const [, attributes = ''] of head.matchAll(META_TAG)) {
    const attrs = new Map<string, string>();
    for (const [, name = '', ...values] of attributes.matchAll(ATTRIBUTE)) {
      const key = name.toLowerCase();
      if (!attrs.has(key)) attrs.set(key, values.find((v) => v !== undefined) ?? '');
    }
    const declared = attrs.has('charset')
      ? attrs.get('charset')
      : attrs.get('http-equiv')?.trim().toLowerCase() === 'content-type'
        ? CONTENT_CHARSET.exec(attrs.get('content') ?? '')?.[1]
        : undefined;
    const charset = usableCharset(declared ?? null);
    if (!charset) continue;
    // A meta declaring UTF-16 in an ASCII-compatible byte stream means UTF-8.
    return charset.startsWith('utf-16') || charset.startsWith('utf16') ? 'utf-8' : charset;
  }
  return null;
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
