/**
 * Test builders for archives and PDFs, shared by the unit and integration tests: ustar
 * archives, a zip whose central directory lies about an entry's size (a zip bomb's signature)
 * and a minimal valid PDF.
 */
import { deflateSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';

export interface TarItem {
  name: string;
  data?: string | Uint8Array;
  type?: string;
  prefix?: string;
  /** the header's mtime, seconds since 1970 (0 when absent) */
  mtime?: number;
}

/** A POSIX ustar archive: a 512-byte header per entry, data padded to 512, two zero blocks at the end. */
export function tar(items: TarItem[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const item of items) {
    const data = typeof item.data === 'string' ? strToU8(item.data) : (item.data ?? new Uint8Array());
    blocks.push(tarHeader(item, data.length), data, new Uint8Array((512 - (data.length % 512)) % 512));
  }
  blocks.push(new Uint8Array(1024));
  return Buffer.concat(blocks);
}

function tarHeader(item: TarItem, size: number): Uint8Array {
  const header = new Uint8Array(512);
  const fields: [string, number][] = [
    [item.name, 0],
    ['0000644\0', 100],
    ['0000000\0', 108],
    ['0000000\0', 116],
    [`${size.toString(8).padStart(11, '0')}\0`, 124],
    [`${(item.mtime ?? 0).toString(8).padStart(11, '0')}\0`, 136],
    ['        ', 148], // the checksum is computed with its own field as spaces
    [item.type ?? '0', 156],
    ['ustar\x0000', 257],
    [item.prefix ?? '', 345],
  ];
  for (const [value, at] of fields) header.set(strToU8(value), at);
  header.set(
    strToU8(
      `${header
        .reduce((sum, b) => sum + b, 0)
        .toString(8)
        .padStart(6, '0')}\0 `,
    ),
    148,
  );
  return header;
}

/** A ustar archive of regular text files, by name. */
export function tarFiles(files: Record<string, string>): Uint8Array {
  return tar(Object.entries(files).map(([name, data]) => ({ name, data })));
}

/** The entries' time in the zips the tests build (fflate's default is the time of the build). */
export const ZIP_MTIME = new Date('2024-05-01T10:00:00Z');
/** What a zip's MS-DOS time keeps of ZIP_MTIME: the archiver's local time, read back as UTC. */
export const ZIP_MTIME_READ = new Date(
  ZIP_MTIME.getTime() - ZIP_MTIME.getTimezoneOffset() * 60_000,
).toISOString();

/**
 * A zip whose `zeros.bin` claims `declared` bytes in the central directory (APPNOTE 4.3.12: the
 * uncompressed size at offset 24 of the entry), next to an honest `small.txt`.
 */
export function lyingZip(declared: number): Uint8Array {
  const zip = zipSync(
    { 'zeros.bin': new Uint8Array(64 * 1024), 'small.txt': strToU8('small and honest') },
    { mtime: ZIP_MTIME },
  );
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  for (let at = 0; at + 46 < zip.length; at++) {
    if (view.getUint32(at, true) !== 0x02014b50) continue;
    const nameLength = view.getUint16(at + 28, true);
    if (Buffer.from(zip.subarray(at + 46, at + 46 + nameLength)).toString() === 'zeros.bin') {
      view.setUint32(at + 24, declared, true);
    }
  }
  return zip;
}

/** A minimal PDF 1.4 with one page showing `text` in Helvetica; xref offsets computed, not guessed. */
export function minimalPdf(text: string, title?: string, info: Record<string, string> = {}): Uint8Array {
  const stream = `BT /F1 24 Tf 72 700 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Title (${title ?? ''}) /Producer (trawl test)${Object.entries(info)
      .map(([k, v]) => ` /${k} (${v})`)
      .join('')} >>`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length); // ASCII only, so string length = byte offset
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = pdf.length;
  // PDF 1.4 3.4.3: each xref entry is exactly 20 bytes, "nnnnnnnnnn ggggg n \n".
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return new TextEncoder().encode(pdf);
}

/** A PDF 1.4 with one page per text (shared Helvetica font); xref offsets computed, not guessed. */
export function multiPagePdf(texts: string[]): Uint8Array {
  const pageIds = texts.map((_, i) => 4 + 2 * i);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${texts.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  texts.forEach((text, i) => {
    const stream = `BT /F1 24 Tf 72 700 Td (${text}) Tj ET`;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${5 + 2 * i} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`,
      `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    );
  });
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = pdf.length;
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return new TextEncoder().encode(pdf);
}

/**
 * A PDF whose pages are `pages` (plain text) followed by one heavy page: a deflated content
 * stream repeating `op` `times` times (~10 KB a million operators). pdf.js parses a page's
 * whole stream without yielding to the event loop, so the heavy page is one long block.
 */
export function heavyPagePdf(op: string, times: number, pages: string[] = []): Uint8Array {
  const heavy = deflateSync(Buffer.from(`BT /F1 12 Tf 72 700 Td ${op.repeat(times)} ET`));
  const streams = [
    ...pages.map((t) => {
      const body = `BT /F1 24 Tf 72 700 Td (${t}) Tj ET`;
      return `<< /Length ${body.length} >>\nstream\n${body}\nendstream`;
    }),
    Buffer.concat([
      Buffer.from(`<< /Length ${heavy.length} /Filter /FlateDecode >>\nstream\n`),
      heavy,
      Buffer.from('\nendstream'),
    ]),
  ];
  const pageIds = streams.map((_, i) => 4 + 2 * i);
  const objects: (string | Buffer)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${streams.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  streams.forEach((stream, i) => {
    const page = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${5 + 2 * i} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`;
    objects.push(page, stream);
  });
  return pdfFile(objects);
}

/** Numbers the objects, computes the xref offsets in bytes, writes the trailer. */
function pdfFile(objects: (string | Buffer)[]): Uint8Array {
  const parts = [Buffer.from('%PDF-1.4\n')];
  let at = 9;
  const offsets = objects.map((body, i) => {
    const part = Buffer.concat([
      Buffer.from(`${i + 1} 0 obj\n`),
      Buffer.from(body),
      Buffer.from('\nendobj\n'),
    ]);
    parts.push(part);
    at += part.length;
    return at - part.length;
  });
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  const trailer = `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`;
  parts.push(Buffer.from(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}${trailer}`));
  return new Uint8Array(Buffer.concat(parts));
}
