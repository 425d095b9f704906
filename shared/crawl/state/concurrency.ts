/**
 * Runs `fn` over `items` with at most `limit` in flight; results keep the input order. On a
 * failure it starts no more items and rejects with the first error once those under way settled.
 */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const failed: { error?: unknown } = {};
  async function worker(): Promise<void> {
    while (next < items.length && !('error' in failed)) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (error) {
        if (!('error' in failed)) failed.error = error;
      }
    }
  }
  // After a failure no item starts, and the call settles only once those under way have: a
  // handler that fails leaves no work running behind it (a Lambda sandbox would resume it,
  // frozen, in a later invocation; the local runner would run it past the invocation's end).
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if ('error' in failed) throw failed.error;
  return results;
}

/**
 * A semaphore whose capacity may change between acquisitions (a host's lane: one request until
 * its politeness delay is known, then more when it has none). Waiters re-check when one leaves.
 */
export class Lane {
  private active = 0;
  private waiters: (() => void)[] = [];
  /** waiters that go first: a request whose host's turn has come (it is lost past its jitter) */
  private urgent: (() => void)[] = [];

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

  /**
   * Takes a place once fewer than `capacity()` are taken; the function returned gives it back
   * (once). An `urgent` waiter is woken before the others, so it takes the next place given back.
   */
  async acquire(urgent = false): Promise<() => void> {
    while (this.active >= Math.max(1, this.capacity()))
      await new Promise<void>((r) => (urgent ? this.urgent : this.waiters).push(r));
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      for (const wake of [...this.urgent.splice(0), ...this.waiters.splice(0)]) wake();
    };
  }
}

/** Runs work within a bound (a {@link Lane}, or one task's {@link TaskPlace} in it). */
export interface Places {
  /** `urgent`: the place is taken before those of non-urgent waiters (a {@link TaskPlace}'s) */
  run<T>(fn: () => Promise<T>, urgent?: boolean): Promise<T>;
  /** gives back a place held past its run (a {@link TaskPlace}) */
  release?(): void;
}

/**
 * One task's place among `places`: taken by a `run` and kept after it, by later runs too (what
 * the run made is still being worked on), until `release`; a run after that takes a place again.
 */
export class TaskPlace implements Places {
  /** the place being granted or held: resolves with its give-back */
  private taken: Promise<() => void> | null = null;

  constructor(private readonly lane: Lane) {}

  async run<T>(fn: () => Promise<T>, urgent = false): Promise<T> {
    this.taken ??= this.lane.acquire(urgent);
    await this.taken;
    return fn();
  }

  /** Gives the place back, if one was taken (a place still being granted, as soon as it is). */
  release(): void {
    const taken = this.taken;
    this.taken = null;
    void taken?.then((giveBack) => giveBack());
  }
}

/** One reader's share of a {@link ByteBudget}. */
export interface BudgetShare {
  /** Resolves once `bytes` more may be held: room in the budget, or this share is the oldest holding. */
  reserve(bytes: number): Promise<void>;
  /** Gives back everything this share reserved (idempotent). */
  release(): void;
}

/**
 * Bytes that concurrent readers share (the fetch invocation's large bodies). A reader reserves as
 * it grows and waits while the budget is full, except the oldest reader holding bytes, which
 * always goes on: two readers each waiting for the other's bytes cannot stall each other, and the
 * most held is the capacity plus one reader's whole size.
 */
export class ByteBudget {
  private used = 0;
  /** bytes held per share, oldest first (Map keeps insertion order) */
  private readonly held = new Map<symbol, number>();
  private waiters: (() => void)[] = [];

  constructor(private readonly capacity: () => number) {}

  share(): BudgetShare {
    const id = Symbol('share');
    return {
      reserve: (bytes) => this.reserve(id, bytes),
      release: () => this.release(id),
    };
  }

  /** Bytes reserved now (diagnostics and tests). */
  get reserved(): number {
    return this.used;
  }

  private oldest(id: symbol): boolean {
    const first = this.held.keys().next();
    return first.done === true || first.value === id;
  }

  private async reserve(id: symbol, bytes: number): Promise<void> {
    while (!this.oldest(id) && this.used + bytes > this.capacity())
      await new Promise<void>((r) => this.waiters.push(r));
    this.used += bytes;
    this.held.set(id, (this.held.get(id) ?? 0) + bytes);
  }

  private release(id: symbol): void {
    const bytes = this.held.get(id);
    if (bytes === undefined) return;
    this.held.delete(id);
    this.used -= bytes;
    for (const wake of this.waiters.splice(0)) wake();
  }
}
