/** Options that name a time on the command line. */
import { ConfigError } from '../shared/errors.ts';

/**
 * `--now`, `--since`: an ISO 8601 date or date-time that names a real day. `new Date` alone took "1" (the
 * year 2001) and "2026-02-30" (2 March).
 */
export function isoTime(text: string, option = '--now'): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?$/.exec(
    text,
  );
  const at = new Date(text);
  const sameDay =
    m &&
    !Number.isNaN(at.getTime()) &&
    new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!)).toISOString().slice(0, 10) === text.slice(0, 10);
  if (!sameDay) throw new ConfigError(`${option}: not an ISO time (e.g. 2026-03-01T12:00:00Z): ${text}`);
  return at;
}
