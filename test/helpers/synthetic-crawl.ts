/**
 * A synthetic crawl of N URLs for the readers' memory measurements (bench/state-memory.ts and
 * test/unit/state-memory.test.ts): table items and manifest lines generated on the fly, in the
 * orders the real reads give (the scan in hash order, the lines in manifest objects), so only the
 * reader under test holds anything. Most URLs have their state in a line (as url-state.ts decides),
 * one in 20 is an error kept in the table, one in 10 has an older line too.
 */
import type { PageStore } from '../../shared/aws/page-store.ts';
import type { UrlTable } from '../../shared/aws/url-table.ts';
import type { UrlItem } from '../../shared/types.ts';

const LINES_PER_OBJECT = 500;

/** The i-th of a permutation of 0..n-1 (7,919 is a prime, coprime with n unless n is its multiple). */
function scrambled(i: number, n: number): number {
  return (i * 7_919 + 13) % n;
}

export function syntheticUrl(i: number): string {
  return `https://site${i % 997}.example/section/${i % 31}/page-${i}.html`;
}

function item(i: number): UrlItem {
  const url = syntheticUrl(i);
  const base = { url, depth: 1 + (i % 4), queue: 'index_follow', discoveredAt: '2026-11-01T00:00:00.000Z' };
  if (i % 20 === 0) {
    const error = { state: 'error', errorKind: 'permanent', errorCode: 'http-404', httpStatus: 404 };
    return { ...base, ...error, stored: 'table', lastFetched: '2026-11-02T00:00:00.000Z' } as UrlItem;
  }
  return { ...base, state: 'pending' } as UrlItem;
}

function line(i: number, fetched: string): UrlItem {
  return {
    url: syntheticUrl(i),
    state: 'indexed',
    httpStatus: 200,
    depth: 1 + (i % 4),
    queue: 'index_follow',
    lastFetched: fetched,
    at: fetched,
    nextRefreshAt: '2026-12-01T00:00:00.000Z',
    docBulk: `docs/bulk/${Math.floor(i / 100)}.jsonl.gz`,
    docLine: i % 100,
  } as UrlItem;
}

/** The parts of a session the state readers use, over `n` synthetic URLs; `onRead` sees each record read. */
export function syntheticCrawl(
  n: number,
  onRead: () => void = () => {},
): { urls: UrlTable; store: PageStore } {
  const objects = Math.ceil(n / LINES_PER_OBJECT);
  const urls = {
    async *scan() {
      for (let i = 0; i < n; i++) {
        onRead();
        yield item(scrambled(i, n));
      }
    },
  } as unknown as UrlTable;
  const store = {
    async *list(prefix: string) {
      for (let o = 0; o < objects; o++) yield `${prefix}2026-12-01/${String(o).padStart(8, '0')}.jsonl.gz`;
    },
    async getLines(key: string) {
      const o = Number(key.slice(-17, -9));
      const out: UrlItem[] = [];
      for (let j = o * LINES_PER_OBJECT; j < Math.min(n, (o + 1) * LINES_PER_OBJECT); j++) {
        const i = scrambled(j, n);
        if (i % 20 === 0) continue;
        if (i % 10 === 1) out.push(line(i, '2026-11-01T12:00:00.000Z'));
        out.push(line(i, '2026-11-02T12:00:00.000Z'));
      }
      for (const _ of out) onRead();
      return out;
    },
  } as unknown as PageStore;
  return { urls, store };
}
