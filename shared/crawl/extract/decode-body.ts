/**
 * Body decoding: the charset comes from the BOM, then the Content-Type header, then (HTML) a
 * `<meta charset>` / `<meta http-equiv=Content-Type>` in the first 64 KiB or (XML) the
 * `<?xml … encoding=…?>` declaration — the WHATWG "encoding sniffing" order — else UTF-8 when the
 * bytes are UTF-8, a Japanese, Chinese, Korean or Cyrillic encoding a detector is sure of, and
 * windows-1252 otherwise (a browser's default in Western locales).
 * Labels are read as browsers read them (the WHATWG Encoding standard's table, through Node's
 * `TextDecoder`): `iso-8859-1` and `ascii` are windows-1252, `gb2312` is GBK, `iso-8859-9`
 * windows-1254, `unicode` UTF-16LE; a label browsers do not know (`utf-7`, `utf-32`, `base64`)
 * is passed over. Never throws.
 */
import chardet from 'chardet';

/**
 * Bytes scanned for a meta charset declaration. The WHATWG prescan reads 1024; a browser also
 * changes the encoding when its parser meets a later `<meta>` (a long inline script first), so
 * more is read here: a windows-1252 page declaring itself after 5 KB was decoded as UTF-8.
 */
const META_SCAN_BYTES = 64 * 1024;
/** A `<meta>` tag; a `>` inside a quoted attribute value does not end it. */
const META_TAG = /<meta(?=[\s/])((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
const CONTENT_CHARSET = /charset\s*=\s*["']?\s*([^"'\s;]+)/i;
/** XML 1.0 §4.3.3: the encoding declaration, at the very start of the document. */
const XML_DECLARATION = /^<\?xml\s[^>]*?encoding\s*=\s*["']([^"']+)["']/;
/** Labels decoded as another encoding than the one the table gives them. */
const OVERRIDES: Record<string, string> = {
  // Browsers decode x-user-defined's high bytes to private-use characters: no text to index.
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

/** The WHATWG encoding a label names (`TextDecoder`'s table), or null when browsers know none. */
function usableCharset(label: string | null): string | null {
  const trimmed = label?.trim().toLowerCase();
  if (!trimmed) return null;
  try {
    return new TextDecoder(OVERRIDES[trimmed] ?? trimmed).encoding;
  } catch {
    return null;
  }
}

/** A declaration in an ASCII-compatible byte stream naming UTF-16 means UTF-8 (WHATWG prescan). */
const asciiCompatible = (charset: string) => (charset.startsWith('utf-16') ? 'utf-8' : charset);

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
    if (charset) return asciiCompatible(charset);
  }
  return null;
}

function xmlCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const charset = usableCharset(XML_DECLARATION.exec(head)?.[1] ?? null);
  return charset ? asciiCompatible(charset) : null;
}

/**
 * Undeclared: UTF-8 when the bytes are (a tail cut mid-character counts); else the legacy encoding
 * a detector is sure of among those that Western defaults garble completely (Japanese, Chinese,
 * Korean, Cyrillic: browsers detect these too, Chrome with its CED); else windows-1252.
 */
function sniffed(body: Uint8Array): { text: string; charset: string } {
  try {
    return {
      text: new TextDecoder('utf-8', { fatal: true }).decode(body, { stream: true }),
      charset: 'utf-8',
    };
  } catch {
    const charset = detectedLegacy(body) ?? 'windows-1252';
    return { text: new TextDecoder(charset).decode(body), charset };
  }
}

/** chardet's names of the encodings taken from detection, as WHATWG labels. */
const DETECTED: Record<string, string> = {
  Shift_JIS: 'shift_jis',
  'EUC-JP': 'euc-jp',
  'ISO-2022-JP': 'iso-2022-jp',
  GB18030: 'gb18030',
  Big5: 'big5',
  'EUC-KR': 'euc-kr',
  'windows-1251': 'windows-1251',
  'KOI8-R': 'koi8-r',
};
/** Bytes the detector reads, and the confidence (0–100) it must have. */
const DETECT_BYTES = 64 * 1024;
const DETECT_CONFIDENCE = 50;

/**
 * The encoding of undeclared non-UTF-8 bytes when a detector (chardet, ICU's algorithm) is sure
 * it is one of DETECTED; null otherwise. Western single-byte text is left to windows-1252: the
 * detector cannot tell ISO-8859-1 from -2 on a French sentence, and guessing wrong garbles it.
 */
function detectedLegacy(body: Uint8Array): string | null {
  // The markup is ASCII and drowns a single-byte text's evidence (a Russian page scored 35, its
  // text alone 50): tags are left out of the sample. No trail byte of the multi-byte encodings
  // detected is `<` or `>`.
  const sample = Buffer.from(body.buffer, body.byteOffset, Math.min(body.length, DETECT_BYTES))
    .toString('latin1')
    .replace(/<[^>]*>/g, ' ');
  const [best] = chardet.analyse(Buffer.from(sample, 'latin1'));
  const label = best ? DETECTED[best.name] : undefined;
  return label !== undefined && best !== undefined && best.confidence >= DETECT_CONFIDENCE ? label : null;
}

/** What the bytes say of their own encoding besides a BOM: HTML's meta, XML's declaration. */
export type Declared = 'html' | 'xml' | 'none';

/**
 * Decodes a response body to text, reporting the encoding used (its WHATWG name). `declared`
 * says where the document itself may name its encoding: a `<meta>` counts in HTML only.
 */
export function decodeBody(
  bytes: Uint8Array,
  contentType: string | null,
  declared: Declared = 'html',
): { text: string; charset: string } {
  const bom = bomCharset(bytes);
  const charset =
    bom?.charset ??
    usableCharset(parseContentType(contentType).charset) ??
    (declared === 'html' ? metaCharset(bytes) : declared === 'xml' ? xmlCharset(bytes) : null);
  const body = bytes.subarray(bom?.length ?? 0);
  if (!charset) return sniffed(body);
  try {
    // A BOM is stripped (the decoder's default), not read as text.
    return { text: new TextDecoder(charset).decode(body), charset };
  } catch {
    return sniffed(body);
  }
}
