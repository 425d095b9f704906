/**
 * The merge half of an external sort (cli/external-sort.ts writes the runs to disk): sorted
 * sources merged into one sorted stream, and a sorted stream cut into groups of one key. Memory
 * is one value per source, whatever the sources hold. Pure: the sources are given.
 */

export type Compare<T> = (a: T, b: T) => number;

/** Code-unit order: a total order in which only equal strings tie (grouping needs exact ties). */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Merges sorted sources into one sorted stream; on a tie the earlier source comes first, so runs
 * cut from one stream in order merge back stably. A linear scan per value: the callers merge at
 * most a few dozen runs at once.
 */
export async function* mergeSorted<T>(sources: AsyncIterable<T>[], cmp: Compare<T>): AsyncGenerator<T> {
  const its = sources.map((s) => s[Symbol.asyncIterator]());
  const heads: (IteratorResult<T> | undefined)[] = await Promise.all(its.map((it) => it.next()));
  try {
    for (;;) {
      let min = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i];
        if (h && !h.done && (min === -1 || cmp(h.value, (heads[min] as IteratorYieldResult<T>).value) < 0)) {
          min = i;
        }
      }
      if (min === -1) return;
      yield (heads[min] as IteratorYieldResult<T>).value;
      heads[min] = await (its[min] as AsyncIterator<T>).next();
    }
  } finally {
    // A consumer that stops early closes every source (their open files).
    await Promise.all(its.map((it, i) => (heads[i]?.done ? undefined : it.return?.())));
  }
}

/** Consecutive values with the same key, as one array each (the input is sorted by that key). */
export async function* groupSorted<T>(sorted: AsyncIterable<T>, key: (v: T) => string): AsyncGenerator<T[]> {
  let group: T[] = [];
  let current: string | undefined;
  for await (const v of sorted) {
    const k = key(v);
    if (group.length > 0 && k !== current) {
      yield group;
      group = [];
    }
    current = k;
    group.push(v);
  }
  if (group.length > 0) yield group;
}
