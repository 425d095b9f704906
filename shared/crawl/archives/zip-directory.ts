/**
 * What the zip central directory says of each entry that fflate does not: its CRC-32 (fflate
 * inflates an entry into a buffer of its declared size and does not check the CRC, so a lying
 * size is only seen by comparing them), whether it is encrypted, and its name as the archiver
 * meant it.
 */

/** One central directory entry (APPNOTE 4.3.12). */
export interface ZipEntryInfo {
  crc: number;
  /** general purpose flag bit 0: password-protected (ZipCrypto or AES); its bytes are ciphertext */
  encrypted: boolean;
  /** the entry's name: UTF-8 when flagged (bit 11) or when its bytes are UTF-8, else code page 437 */
  name: string;
}

/** Entry name as fflate gives it (UTF-8 when flagged, else Latin-1) -> what the directory says. */
export function zipDirectory(bytes: Uint8Array): Map<string, ZipEntryInfo> {
  const out = new Map<string, ZipEntryInfo>();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // End of central directory record: signature 0x06054b50, within the last 64 KiB + 22 bytes.
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 65_557); at--) {
    if (view.getUint32(at, true) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) return out;
  const entries = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  for (let i = 0; i < entries && at + 46 <= bytes.length; i++) {
    if (view.getUint32(at, true) !== 0x02014b50) break;
    const flags = view.getUint16(at + 8, true);
    const nameLength = view.getUint16(at + 28, true);
    const skip = nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const raw = bytes.subarray(at + 46, at + 46 + nameLength);
    const utf8 = (flags & 0x800) !== 0;
    const key = new TextDecoder(utf8 ? 'utf-8' : 'latin1').decode(raw);
    out.set(key, {
      crc: view.getUint32(at + 16, true),
      encrypted: (flags & 1) !== 0,
      name: utf8 ? key : legacyName(raw),
    });
    at += 46 + skip;
  }
  return out;
}

// biome-ignore format: one string, 0x80 to 0xFF
const CP437 = 'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';

/**
 * A name without the UTF-8 flag: APPNOTE Appendix D says code page 437, but many archivers
 * (macOS, Info-ZIP on Linux, 7-Zip's default) write UTF-8 without setting the flag: bytes that
 * are valid UTF-8 are read as UTF-8, the others as code page 437.
 */
function legacyName(raw: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    return Array.from(raw, (b) => (b < 0x80 ? String.fromCharCode(b) : (CP437[b - 0x80] ?? '?'))).join('');
  }
}
