/**
 * Counts events over time in bounded memory: buckets start at one minute and double in width
 * whenever there are more than `maxBuckets`, so a crawl of a year keeps a few hundred numbers.
 */

export interface TimeBucket {
  /** ISO start of the bucket */
  t: string;
  /** one count per series */
  values: number[];
}

const MINUTE = 60_000;

/** A histogram of `series` counters over time. */
export class TimeHistogram {
  private widthMs = MINUTE;
  private readonly buckets = new Map<number, number[]>();

  constructor(
    private readonly series: number,
    private readonly maxBuckets = 240,
  ) {}

  /** Adds `n` to series `s` at the ISO time `at`; an unparsable time is ignored (returns false). */
  add(at: string | null | undefined, s: number, n = 1): boolean {
    const ms = at ? Date.parse(at) : Number.NaN;
    if (!Number.isFinite(ms)) return false;
    const start = Math.floor(ms / this.widthMs) * this.widthMs;
    let counts = this.buckets.get(start);
    if (!counts) {
      counts = new Array<number>(this.series).fill(0);
      this.buckets.set(start, counts);
    }
    counts[s] = (counts[s] ?? 0) + n;
    if (this.buckets.size > this.maxBuckets) this.coarsen();
    return true;
  }

  /** The bucket width in ms (a minute, or a power-of-two multiple of it). */
  get bucketMs(): number {
    return this.widthMs;
  }

  /** Buckets in time order. */
  toArray(): TimeBucket[] {
    return [...this.buckets.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([t, values]) => ({ t: new Date(t).toISOString(), values }));
  }

  private coarsen(): void {
    this.widthMs *= 2;
    const old = [...this.buckets.entries()];
    this.buckets.clear();
    for (const [t, values] of old) {
      const start = Math.floor(t / this.widthMs) * this.widthMs;
      const into = this.buckets.get(start) ?? new Array<number>(this.series).fill(0);
      values.forEach((v, i) => {
        into[i] = (into[i] ?? 0) + v;
      });
      this.buckets.set(start, into);
    }
  }
}

/** A counter over string keys that keeps at most `limit` keys, folding the rest into "(other)". */
export class BoundedCounter {
  readonly counts = new Map<string, number>();

  constructor(private readonly limit = 500) {}

  add(key: string, n = 1): void {
    const k = this.counts.has(key) || this.counts.size < this.limit ? key : '(other)';
    this.counts.set(k, (this.counts.get(k) ?? 0) + n);
  }

  /** The `n` largest, largest first (ties by key). */
  top(n = Number.POSITIVE_INFINITY): [string, number][] {
    return [...this.counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, n);
  }

  /**
   * The `n` largest as `top` gives them, but when more keys are counted the last row sums the rest
   * (`(12 more)`): a table cut at 15 rows without a word lost a crawl's robots.txt reasons (an audit).
   */
  topAndRest(n: number): [string, number][] {
    const all = this.top();
    if (all.length <= n) return all;
    const rest = all.slice(n - 1);
    return [...all.slice(0, n - 1), [`(${rest.length} more)`, rest.reduce((sum, [, c]) => sum + c, 0)]];
  }

  toObject(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort((a, b) => a[0].localeCompare(b[0])));
  }
}
