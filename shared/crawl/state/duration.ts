/** Durations as configs write them: "90s", "15m", "1h", "48h", "2d". */
export const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses "90s", "1h", "48h", "2d" into milliseconds. */
export function parseDuration(text: string): number {
  const m = DURATION.exec(text.trim());
  if (!m) throw new Error(`not a duration: ${JSON.stringify(text)} (use e.g. "30s", "1h", "48h", "2d")`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/** The longest duration a config may give (ten years): times past it leave the dates a crawl can store. */
export const MAX_DURATION_MS = 3650 * 86_400_000;
