/**
 * The zip central directory's CRC-32 per entry: fflate inflates an entry into a buffer of its
 * declared size and does not check the CRC, so a lying size is only seen by comparing them.
 */
/** Entry name -> CRC-32 from the zip's central directory (APPNOTE 4.3.12); empty when unreadable. */
export function centralDirectoryCrcs(bytes: Uint8Array): Map<string, number> {
  const out = new Map<string, number>();
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
    const nameLength = view.getUint16(at + 28, true);
    const skip = nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength));
    out.set(name, view.getUint32(at + 16, true));
    at += 46 + skip;
  }
  return out;
}
