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
  /**
   * its modification time, ISO: the extended timestamp (extra field 0x5455, UTC) when there is
   * one, else the MS-DOS date and time (the archiver's local time, read as UTC); undefined when unset
   */
  modified?: string;
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
    const extra = bytes.subarray(at + 46 + nameLength, at + 46 + nameLength + view.getUint16(at + 30, true));
    const modified = unixTime(extra) ?? dosTime(view.getUint16(at + 14, true), view.getUint16(at + 12, true));
    out.set(key, {
      crc: view.getUint32(at + 16, true),
      encrypted: (flags & 1) !== 0,
      name: utf8 ? key : legacyName(raw),
      ...(modified ? { modified } : {}),
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

/** The extended timestamp extra field's modification time (Info-ZIP 0x5455: flags, then mtime), ISO. */
function unixTime(extra: Uint8Array): string | undefined {
  const view = new DataView(extra.buffer, extra.byteOffset, extra.byteLength);
  for (let at = 0; at + 4 <= extra.length; at += 4 + view.getUint16(at + 2, true)) {
    if (view.getUint16(at, true) !== 0x5455 || view.getUint16(at + 2, true) < 5) continue;
    if ((view.getUint8(at + 4) & 1) === 0) return undefined;
    const seconds = view.getUint32(at + 5, true);
    return seconds > 0 ? new Date(seconds * 1000).toISOString() : undefined;
  }
  return undefined;
}

/** MS-DOS date and time (APPNOTE 4.4.6): 2-second resolution; 0 (unset) or an impossible date gives undefined. */
function dosTime(date: number, time: number): string | undefined {
  const month = (date >> 5) & 15;
  const day = date & 31;
  if (date === 0 || month < 1 || month > 12 || day < 1) return undefined;
  const ms = Date.UTC(1980 + (date >> 9), month - 1, day, time >> 11, (time >> 5) & 63, (time & 31) * 2);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
