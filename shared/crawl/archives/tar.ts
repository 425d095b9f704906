/**
 * A small tar reader for compound extraction: POSIX ustar and v7 headers (512-byte blocks, data
 * padded to 512), ustar name prefixes, GNU `L` and pax `path` long names. Entries are views of
 * the input, nothing is copied; the caller decides which ones it keeps.
 */

/** Old (pre-POSIX) tar files have no `ustar` magic; a valid header checksum identifies them. */
export function looksLikeTar(bytes: Uint8Array): boolean {
  return bytes.length >= 512 && bytes.subarray(0, 512).some((b) => b !== 0) && validChecksum(bytes);
}

/** One tar member; `data` is a view of the archive bytes. */
export interface TarEntry {
  path: string;
  /** 'file', 'directory', or the type flag of anything else (links, devices, FIFOs) */
  type: string;
  data: Uint8Array;
  /** the entry's modification time (header field mtime, seconds since 1970), ISO; undefined when unset */
  modified?: string;
}

const TAR_TYPES: Record<string, string> = { '0': 'file', '\0': 'file', '7': 'file', '5': 'directory' };

/** POSIX ustar / v7 reader: 512-byte headers, data padded to 512; GNU `L` and pax `path` long names. */
export function* readTar(bytes: Uint8Array, warnings: string[]): Generator<TarEntry> {
  let longName: string | null = null;
  for (let at = 0; at + 512 <= bytes.length; ) {
    const header = bytes.subarray(at, at + 512);
    if (header.every((b) => b === 0)) return; // end-of-archive blocks
    const size = tarNumber(header.subarray(124, 136));
    if (!validChecksum(header) || !Number.isSafeInteger(size) || size < 0) {
      warnings.push(`tar header at byte ${at} is invalid, rest skipped`);
      return;
    }
    const data = bytes.subarray(at + 512, at + 512 + size);
    if (data.length < size) warnings.push(`tar entry at byte ${at} is cut off, rest skipped`);
    if (data.length < size) return;
    at += 512 + Math.ceil(size / 512) * 512;
    const flag = String.fromCharCode(header[156] ?? 0);
    if (flag === 'L' || flag === 'x' || flag === 'g') {
      longName = flag === 'L' ? cString(data) : flag === 'x' ? (paxPath(data) ?? longName) : longName;
      continue;
    }
    const magic = cString(header.subarray(257, 263));
    const prefix = magic.startsWith('ustar') ? cString(header.subarray(345, 500)) : '';
    const name = cString(header.subarray(0, 100));
    const mtime = tarNumber(header.subarray(136, 148));
    yield {
      path: longName ?? (prefix ? `${prefix}/${name}` : name),
      type: TAR_TYPES[flag] ?? `type ${JSON.stringify(flag)}`,
      data,
      ...(mtime > 0 && mtime < 253_402_300_800 ? { modified: new Date(mtime * 1000).toISOString() } : {}),
    };
    longName = null;
  }
}

/** The header checksum: the byte sum with the checksum field itself read as eight spaces. */
function validChecksum(header: Uint8Array): boolean {
  let sum = 8 * 0x20;
  for (let i = 0; i < 512; i += 1) if (i < 148 || i >= 156) sum += header[i] ?? 0;
  return tarNumber(header.subarray(148, 156)) === sum;
}

/** Octal ASCII, or GNU base-256 when the high bit of the first byte is set. */
function tarNumber(field: Uint8Array): number {
  if ((field[0] ?? 0) & 0x80) return field.subarray(1).reduce((n, b) => n * 256 + b, (field[0] ?? 0) & 0x7f);
  const text = cString(field).trim();
  return /^[0-7]+$/.test(text) ? Number.parseInt(text, 8) : Number.NaN;
}

function cString(field: Uint8Array): string {
  const end = field.indexOf(0);
  return new TextDecoder().decode(end < 0 ? field : field.subarray(0, end));
}

/** pax extended header records: "<length> <key>=<value>\n". */
function paxPath(data: Uint8Array): string | null {
  const match = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(new TextDecoder().decode(data));
  return match?.[1] ?? null;
}
