/**
 * What a crawl with only delayed work waits for: the hosts held past the next few seconds (a
 * Retry-After, a silence, Crawl-delay slots booked ahead), in words for the progress line and as
 * JSON for `trawl status`. A long Retry-After (up to `limits.retryAfterMs`) made a local run sit
 * with "messages queued … 0.0 pages/s" and nothing saying why.
 */
import type { HeldHost, HostTable } from '../shared/aws/host-table.ts';
import type { QueueDepths } from './runner.ts';

/** Holds shorter than this are a polite crawl's ordinary gaps, not worth naming. */
export const HELD_MIN_MS = 10_000;

/** A wait the line says may be left for a later run. */
const LONG_WAIT_MS = 120_000;

const REASON: Record<HeldHost['reason'], string> = {
  'backed-off': 'a 429/503 back-off, Retry-After',
  'not-answering': 'not answering',
  politeness: 'its politeness delay',
};

/** True when work is queued but all of it is delayed: nothing to receive, nothing in flight. */
export function onlyDelayed(depths: QueueDepths): boolean {
  const all = Object.values(depths);
  return all.some((d) => d.delayed > 0) && all.every((d) => d.visible === 0 && d.inFlight === 0);
}

/** "in 59 min", "in 40 s": how far `until` is from `now`. */
function away(until: number, now: number): string {
  const s = Math.max(0, Math.round((until - now) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** One held host in words: `ra.test until 10:11:50 UTC, in 59 min (a 429/503 back-off, Retry-After)`. */
export function describeHeld(h: HeldHost, now: number): string {
  const where = h.section === undefined ? h.host : `${h.host}/${h.section}`;
  const at = new Date(h.until).toISOString().slice(11, 19);
  return `${where} until ${at} UTC, in ${away(h.until, now)} (${REASON[h.reason]})`;
}

/** The progress line's tail: which hosts the delayed work waits for, or what else it may be. */
export async function heldLine(hosts: HostTable, now: number): Promise<string> {
  const { count, hosts: held } = await hosts.heldHosts(now + HELD_MIN_MS, 2);
  if (count === 0) return 'waiting for delayed messages (retries, politeness)';
  const more = count > held.length ? `, and ${count - held.length} more host(s)` : '';
  // A long wait need not be sat through: Ctrl-C keeps the queued work for the next run.
  const long = (held[0]?.until ?? 0) - now >= LONG_WAIT_MS ? '; Ctrl-C keeps it for a later run' : '';
  return `waiting for ${held.map((h) => describeHeld(h, now)).join('; ')}${more}${long}`;
}

/** The held hosts as `trawl status` prints them (times in ISO, the crawl's clock). */
export async function heldStatus(
  hosts: HostTable,
  now: number,
): Promise<{ count: number; hosts: (Omit<HeldHost, 'until'> & { until: string })[] }> {
  const { count, hosts: held } = await hosts.heldHosts(now + HELD_MIN_MS, 20);
  return { count, hosts: held.map((h) => ({ ...h, until: new Date(h.until).toISOString() })) };
}
