/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * A semaphore whose capacity may change between acquisitions (a host's lane: one request until
 * its politeness delay is known, then more when it has none). Waiters re-check when one leaves.
 */
export class Lane {
  private active = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly capacity: () => number) {}

  /** Runs `fn` once fewer than `capacity()` runs are in flight. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Takes a place once fewer than `capacity()` are taken; the function returned gives it back (once). */
  async acquire(): Promise<() => void> {
    while (this.active >= Math.max(1, this.capacity())) await new Promise<void>((r) => this.waiters.push(r));
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      for (const wake of this.waiters.splice(0)) wake();
    };
  }
}
