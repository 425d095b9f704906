/** Every value an async generator yields (the session's `documents`, `urlStates`, …), in order. */
export async function collect<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}
