/**
 * The fetch function's memory: what one invocation may hold, sized from the function's memory, and
 * the memory a config needs. Lambda bills memory × wall time and a fetch invocation's wall time is
 * mostly network wait, so the fetch function is as small as its worst case allows: `fetch.concurrency`
 * bodies read at once, those that grow past `largeBodyBytes` sharing `largeBodyBudget` bytes (the
 * oldest of them may always grow to `SPOOL_BYTES`), and the pages fetched but not yet written
 * (`holdBytes`). A body past `SPOOL_BYTES` goes on in a file (the function's /tmp) and to S3 as an
 * object of its own, so `fetch.maxBytes` takes disk, not memory (`spoolDiskMb`).
 * The constants are measured on the real bundle (bench/fetch-memory.ts, Node 24).
 */

const MB = 1024 * 1024;

/**
 * RSS of a fetch container once loaded and running, with slack: 80 MB measured (Node 24, AWS's
 * runtime interface client, the bundle with its SDK clients, no zod and no undici;
 * bench/fetch-memory.ts, 2026-11-29), plus 20 MB for the garbage collector's timing and what a Lambda sandbox
 * may hold that the benchmark's container does not.
 */
export const RUNTIME_MB = 100;
/** The share of the memory the plan fills: the rest is slack for the garbage collector's timing. */
const FILL = 0.8;
/** Bytes held per body byte while a body is read and encoded: the chunks, the joined body, its base64. */
export const BODY_COPIES = 3.4;
/** Bytes held per byte of base64 waiting to be written: the string and the packed, gzipped message or bundle. */
export const HOLD_COPIES = 2;
/**
 * Bodies past this many decoded bytes are read into a file and written to S3 as they are: one PUT
 * and one GET more a page ($5.40 per million such pages), so only pages rarer than typical ones
 * (HTML pages are tens to a few hundred KB) take that path, and a 10 MB page costs the memory of
 * a 1 MB one.
 */
export const SPOOL_BYTES = 1024 * 1024;
/** Memory sizes the derivation picks from (MB): Lambda takes any size from 128 MB to 10,240 MB. */
const SIZES = Array.from({ length: (10_240 - 128) / 32 + 1 }, (_, i) => 128 + 32 * i);

export interface FetchMemoryPlan {
  /** a body growing past this many (decoded) bytes reserves every byte it reads from `largeBodyBudget` */
  largeBodyBytes: number;
  /**
   * body bytes that bodies past largeBodyBytes hold together, besides the oldest of them (which may
   * always grow to spoolBytes: concurrency.ts ByteBudget)
   */
  largeBodyBudget: number;
  /** a body growing past this many (decoded) bytes goes on in a file, then to S3 on its own */
  spoolBytes: number;
  /** base64 bytes of bodies that make one write (an extract message or a page bundle) */
  flushBytes: number;
  /** base64 bytes held for writing beyond which fetches wait for a write */
  holdBytes: number;
  /** false when even one large body does not fit in the memory: raise the memory */
  fits: boolean;
}

interface FetchSizes {
  concurrency: number;
  maxBytes: number;
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));

/** What one invocation of a function of `memoryMb` may hold. */
export function fetchMemoryPlan(memoryMb: number, fetch: FetchSizes): FetchMemoryPlan {
  const budget = (memoryMb * FILL - RUNTIME_MB) * MB;
  const holdBytes = clamp(Math.floor(budget / 8), 2 * MB, 32 * MB);
  const largeBodyBytes = clamp(Math.floor(budget / 8 / fetch.concurrency / BODY_COPIES), 64 * 1024, MB);
  const rest = budget - holdBytes * HOLD_COPIES - fetch.concurrency * largeBodyBytes * BODY_COPIES;
  // Bodies past SPOOL_BYTES leave the memory (a body of fetch.maxBytes is spooled from 1 MB on).
  const spoolBytes = Math.min(SPOOL_BYTES, fetch.maxBytes);
  // The oldest large body may always grow to spoolBytes; the others share what is left.
  const shared = Math.floor(rest / BODY_COPIES) - spoolBytes;
  return {
    largeBodyBytes,
    largeBodyBudget: clamp(shared, 0, fetch.concurrency * spoolBytes),
    spoolBytes,
    flushBytes: Math.floor(holdBytes / 2),
    holdBytes,
    fits: shared >= 0,
  };
}

/**
 * The /tmp (MB) a fetch invocation's spooled bodies may take at once: every request's body at
 * `fetch.maxBytes` (decoded), with a quarter to spare. Lambda gives 512 MB unasked.
 */
export function spoolDiskMb(fetch: FetchSizes): number {
  return Math.ceil((fetch.concurrency * fetch.maxBytes * 1.25) / MB);
}

/** The smallest memory (MB) in which a config's fetch invocation fits, `fetch.memoryMb` when given. */
export function fetchMemoryMb(fetch: FetchSizes & { memoryMb?: number | null }): number {
  if (fetch.memoryMb) return fetch.memoryMb;
  return SIZES.find((mb) => fetchMemoryPlan(mb, fetch).fits) ?? (SIZES.at(-1) as number);
}
