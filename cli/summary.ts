/** The summary a crawl prints when the frontier has drained. */
import type { RequestCounts } from '../shared/aws/request-counter.ts';
import type { CrawlConfig } from '../shared/config.ts';
import type { CrawlSession } from './session.ts';

export interface SummaryInput {
  kind: 'crawl' | 'refresh';
  config: CrawlConfig;
  session: CrawlSession;
  seconds: number;
  stats: Record<string, number>;
  /** a few rejected links by reason (`URL (where)`) */
  examples?: Record<string, string[]>;
  counts: RequestCounts;
  /** the config file as given, for the commands the summary points to */
  file?: string;
  /** the signal that stopped the run before its frontier drained */
  stoppedBy?: string;
}

const n = (v: number | undefined) => v ?? 0;
/** The crawler-trap stops (issue 17), also among the rejected reasons above them. */
const TRAP_STOPS = ['repeating-segments', 'path-too-deep', 'host-cap', 'query-variants', 'soft-404'];

function byPrefix(stats: Record<string, number>, prefix: string, except?: string): string {
  const parts = Object.entries(stats)
    .filter(([k]) => k.startsWith(prefix) && !(except && k.startsWith(except)))
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.slice(prefix.length)} ${v}`);
  return parts.length ? parts.join(', ') : 'none';
}

/** Prints the summary to stdout. */
export function printSummary({
  kind,
  config,
  session,
  seconds,
  stats,
  examples = {},
  counts,
  stoppedBy,
  file = '…',
}: SummaryInput): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  const fetched = n(stats.fetched);
  const indexed = n(stats.indexed) + n(stats.reindexed);
  const calls = Object.entries(counts.calls).sort((a, b) => b[1] - a[1]);
  const total = calls.reduce((s, [, v]) => s + v, 0);
  const puts = n(counts.calls['S3.PutObject']);
  out(
    `Trawl ${kind} "${config.name}" ${stoppedBy ? `stopped (${stoppedBy}) after` : 'finished in'} ${seconds.toFixed(1)} s: ${fetched} fetched, ${(fetched / Math.max(seconds, 0.001)).toFixed(1)} pages/s`,
  );
  out(
    `  documents: ${n(stats.indexed)} new, ${n(stats.reindexed)} changed, ${n(stats.unchanged)} unchanged, ${n(stats['not-modified'])} not modified (304), ${n(stats.duplicate)} duplicates folded, ${n(stats['documents:deleted'])} deleted`,
  );
  out(
    `  other URLs: ${n(stats.followed)} followed only, ${n(stats.ignored)} ignored, ${n(stats['error:permanent'])} permanent errors, ${n(stats['error:temporary'])} temporary errors`,
  );
  out(
    `  links discovered: ${n(stats.discovered)}; rejected: ${byPrefix(stats, 'rejected:', 'rejected:limit-')}`,
  );
  // A rejected link is recorded nowhere (no URL state): a few of each reason say which and where.
  for (const [reason, list] of Object.entries(examples).sort(
    ([a], [b]) => n(stats[`rejected:${b}`]) - n(stats[`rejected:${a}`]),
  ))
    for (const example of list) out(`    ${reason}: ${example}`);
  // A title cut at limits.titleChars is no rejected link: the limits that cut something have a line.
  out(`  limits applied (limits.*): ${byPrefix(stats, 'rejected:limit-')}`);
  // Past as many stops as a cap admits, a stop is counted without a row (trap-gate.ts).
  const unrecorded = (k: string) =>
    stats[`unrecorded:${k}`] ? ` (${stats[`unrecorded:${k}`]} without a row)` : '';
  const traps = TRAP_STOPS.filter((k) => stats[`rejected:${k}`]).map(
    (k) => `${k} ${stats[`rejected:${k}`]}${unrecorded(k)}`,
  );
  out(`  traps stopped (scope.traps): ${traps.length ? traps.join(', ') : 'none'}`);
  out(`  retries and delays: ${byPrefix(stats, 'requeued:')}`);
  // A frontier message delivered again (its invocation died) holds URLs recorded since it was queued.
  // Tasks queued under an older config that the current one rejects (their reasons are among the rejected).
  if (stats['skipped:out-of-scope'])
    out(`  queued under another config, out of scope now, not fetched: ${stats['skipped:out-of-scope']}`);
  if (stats['skipped:fetched-since-queued'])
    out(`  redelivered URLs already fetched, not fetched again: ${stats['skipped:fetched-since-queued']}`);
  if (stats['sitemap-changed'])
    out(
      `  known pages sitemaps list as changed since their last read (fetched again by the next refresh cycle): ${stats['sitemap-changed']}`,
    );
  if (stats['search:refused'])
    out(
      `  refused by the search engine (a value its mapping cannot take; in trawl docs and the feed, logged): ${stats['search:refused']}`,
    );
  out(`  AWS requests: ${total} (${(total / Math.max(fetched, 1)).toFixed(2)} per fetched page)`);
  for (const [op, v] of calls) out(`    ${op.padEnd(34)} ${String(v).padStart(7)}`);
  out(
    `  S3 PUTs per indexed page: ${indexed ? (puts / indexed).toFixed(3) : 'n/a'} (${puts} PUTs, ${indexed} documents written)`,
  );
  const inv = Object.entries(session.runner.stats)
    .filter(([, s]) => s.invocations > 0)
    .map(([stage, s]) => `${stage} ${s.invocations} (avg ${(s.totalMs / s.invocations).toFixed(0)} ms)`);
  out(`  Lambda invocations: ${inv.join(', ')}`);
  const failed = Object.entries(session.runner.stats).reduce((s, [, v]) => s + v.failedRecords, 0);
  if (failed) out(`  failed SQS records (retried when their lease ends): ${failed}`);
  const c = `-c ${/\s/.test(file) ? JSON.stringify(file) : file}`;
  out(
    `  next: trawl docs ${c} | trawl urls ${c} | trawl explain ${c} URL --state | trawl report ${c} -o report.html`,
  );
}
