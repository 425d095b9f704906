/**
 * Body decoding: the charset comes from the BOM, then the Content-Type header, then (HTML) a
 * `<meta charset>` / `<meta http-equiv=Content-Type>` in the first 64 KiB or (XML) the
 * `<?xml … encoding=…?>` declaration — the WHATWG "encoding sniffing" order — else UTF-8 when the
 * bytes are UTF-8 (or but for a stray byte), ISO-2022-JP by its escapes, a Japanese, Chinese,
 * Korean, Cyrillic, Greek, Arabic or Hebrew encoding a detector names, and windows-1252 otherwise
 * (a browser's default in Western locales).
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
  for (const attributes of metaTags(head)) {
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

/**
 * The attribute text of each `<meta>` tag, in order; a `>` inside a quoted attribute value does
 * not end it. One pass: the regular expression it replaces scanned to the end from every `<meta`
 * of a tag left open (1.3 s on 64 KB of `<meta `).
 */
function* metaTags(head: string): Generator<string> {
  const lower = head.toLowerCase();
  for (let at = lower.indexOf('<meta'); at >= 0; ) {
    const start = at + 5;
    if (!/[\s/]/.test(head[start] ?? '')) {
      at = lower.indexOf('<meta', start);
      continue;
    }
    let quote = '';
    let end = start;
    for (; end < head.length; end++) {
      const c = head[end];
      if (quote) {
        if (c === quote) quote = '';
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '>') break;
    }
    if (end >= head.length) return;
    yield head.slice(start, end);
    at = lower.indexOf('<meta', end);
  }
}

function xmlCharset(bytes: Uint8Array): string | null {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString('latin1');
  const charset = usableCharset(XML_DECLARATION.exec(head)?.[1] ?? null);
  return charset ? asciiCompatible(charset) : null;
}

/**
 * Undeclared: UTF-8 when the bytes are (a tail cut mid-character counts), or are UTF-8 but for a
 * stray byte or two; ISO-2022-JP when its escapes are there (7-bit: it passes as UTF-8); else the
 * legacy encoding a detector names among those that Western defaults garble completely (Japanese,
 * Chinese, Korean, Cyrillic, Greek, Arabic, Hebrew: browsers detect these too, Chrome with its
 * CED); else windows-1252.
 */
function sniffed(body: Uint8Array): { text: string; charset: string } {
  const sample = body.subarray(0, DETECT_BYTES);
  // Every undeclared page comes here: the escape byte is looked for before the text is made.
  const jis =
    sample.includes(0x1b) &&
    !sample.some((b) => b >= 0x80) &&
    ISO_2022_JP.test(Buffer.from(sample).toString('latin1'));
  if (jis) {
    return { text: new TextDecoder('iso-2022-jp').decode(body), charset: 'iso-2022-jp' };
  }
  try {
    return {
      text: new TextDecoder('utf-8', { fatal: true }).decode(body, { stream: true }),
      charset: 'utf-8',
    };
  } catch {
    // One stray byte in a UTF-8 page made all its hundreds of characters windows-1252 mojibake
    // (an audit: `CafÃ© rÃ©sumÃ©`); the stray byte becomes U+FFFD instead.
    if (mostlyUtf8(sample)) return { text: new TextDecoder('utf-8').decode(body), charset: 'utf-8' };
    const charset = detectedLegacy(sample) ?? 'windows-1252';
    return { text: new TextDecoder(charset).decode(body), charset };
  }
}

/** ISO-2022-JP's escapes into JIS X 0208 (`ESC $ @`, `ESC $ B`) or JIS X 0201 Roman (`ESC ( J`). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the escapes are what is matched
const ISO_2022_JP = /\x1b\$[@B]|\x1b\(J/;

/**
 * Bytes that are UTF-8 but for a few: at least 4 well-formed multi-byte sequences and at most one
 * byte out of place per 8 of them. Windows-1252 text hardly ever forms such sequences (an
 * accented capital followed by a symbol), so this does not take a Western page for UTF-8.
 */
function mostlyUtf8(bytes: Uint8Array): boolean {
  let good = 0;
  let bad = 0;
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i] ?? 0;
    const length =
      b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (length === 1) {
      i++;
      continue;
    }
    let ok = length > 0 && i + length <= bytes.length;
    for (let k = 1; ok && k < length; k++) ok = ((bytes[i + k] ?? 0) & 0xc0) === 0x80;
    if (ok) {
      good++;
      i += length;
    } else {
      // A sequence cut by the end of the sample is not a stray byte.
      if (length === 0 || i + length <= bytes.length) bad++;
      i++;
    }
  }
  return good >= 4 && bad * 8 <= good;
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
  'ISO-8859-5': 'iso-8859-5',
  'ISO-8859-7': 'iso-8859-7',
  'windows-1256': 'windows-1256',
  'ISO-8859-6': 'iso-8859-6',
  // Hebrew in logical order, as web pages write it; windows-1255 holds ISO-8859-8's letters.
  'ISO-8859-8': 'windows-1255',
};
/** Bytes the detector reads, and the confidence (0–100) it must have. */
const DETECT_BYTES = 64 * 1024;
const DETECT_CONFIDENCE = 50;
/**
 * A text whose letters are mostly bytes above ASCII is in no Latin script: windows-1252 garbles
 * every word of it, so the detector's first answer is taken however sure it is. Real Russian
 * text scored 35–47 (an audit), never 50; Polish, the Latin script with the most accents, has a
 * fifth of its letters above ASCII, French a tenth.
 */
const NON_LATIN_SHARE = 0.4;
const NON_LATIN_MIN_BYTES = 16;

/**
 * The encoding of undeclared non-UTF-8 bytes when a detector (chardet, ICU's algorithm) names one
 * of DETECTED, sure of it or the text in no Latin script; null otherwise. Western single-byte
 * text is left to windows-1252: the detector cannot tell ISO-8859-1 from -2 on a French sentence
 * (it says -2 at 56), and guessing wrong garbles it.
 */
function detectedLegacy(sample: Uint8Array): string | null {
  // The markup (and a script's or style sheet's code) is ASCII and drowns a single-byte text's
  // evidence (a Russian page scored 35, its text alone 50): left out of the sample. No trail byte
  // of the multi-byte encodings detected is `<` or `>`.
  const text = Buffer.from(withoutMarkup(Buffer.from(sample).toString('latin1')), 'latin1');
  const [best] = chardet.analyse(text);
  const label = best ? DETECTED[best.name] : undefined;
  if (label === undefined || best === undefined) return null;
  return best.confidence >= DETECT_CONFIDENCE || nonLatinShare(text) >= NON_LATIN_SHARE ? label : null;
}

/**
 * The text between a latin1 string's tags, script and style contents left out too. One pass, no
 * regular expression: `/<[^>]*>/g` took 8.8 s on 64 KB of `<` (each one scanned to the end).
 */
export function withoutMarkup(s: string): string {
  const lower = s.toLowerCase();
  const parts: string[] = [];
  let i = 0;
  while (i < s.length) {
    const open = s.indexOf('<', i);
    if (open < 0) {
      parts.push(s.slice(i));
      break;
    }
    parts.push(s.slice(i, open), ' ');
    const close = s.indexOf('>', open);
    if (close < 0) break;
    const element = RAW_TEXT.find(
      (name) => lower.startsWith(`<${name}`, open) && !/[a-z0-9-]/.test(lower[open + name.length + 1] ?? ''),
    );
    if (element === undefined) {
      i = close + 1;
      continue;
    }
    const end = lower.indexOf(`</${element}`, close);
    if (end < 0) break;
    const endClose = s.indexOf('>', end);
    if (endClose < 0) break;
    i = endClose + 1;
  }
  return parts.join('');
}
const RAW_TEXT = ['script', 'style'];

/** The share of a text's letters (ASCII letters and bytes above ASCII) that are above ASCII. */
function nonLatinShare(bytes: Uint8Array): number {
  let high = 0;
  let letters = 0;
  for (const b of bytes) {
    if (b >= 0x80) high++;
    if (b >= 0x80 || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) letters++;
  }
  // A few accented letters are no evidence of a script (`é è` is all high bytes).
  return high < NON_LATIN_MIN_BYTES ? 0 : high / letters;
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
