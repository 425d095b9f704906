/**
 * The crawl report's figures, aggregated one URL state, change record and run record at a time
 * in bounded memory (counters, capped example lists, time histograms): a million URLs make a
 * report of the same size as a thousand. Pure: the time and the max age come in as arguments.
 */
import { UNSENT_ERRORS } from '../errors.ts';
import type { ChangeRecord } from '../stages/change-feed.ts';
import type { UrlItem } from '../types.ts';
import { priceRunRecord, type RunRecord } from './run-record.ts';
import { BoundedCounter, type TimeBucket, TimeHistogram } from './time-histogram.ts';

export interface HostErrors {
  host: string;
  permanent: number;
  temporary: number;
  examples: { url: string; code: string | null; httpStatus: number | null }[];
}

export interface RunSummary {
  kind: string;
  startedAt: string;
  seconds: number;
  pages: number;
  pagesPerSecond: number;
  awsRequests: number;
  /** dollars per million pages at list prices; null when the run fetched nothing */
  costPerMillion: number | null;
  costByService: Record<string, number> | null;
  /** stopped by a signal before the frontier drained (Ctrl-C; resumed by the next run) */
  interrupted: boolean;
  /**
   * URLs the run recorded in error (a URL it forgot since is still counted here); null for a
   * deployed stack's hour, whose usage item counts requests and time, not outcomes
   */
  errors: number | null;
  /** documents the run wrote and deleted (null as `errors`) */
  upserted: number | null;
  deleted: number | null;
}

export interface ReportData {
  crawl: string;
  generatedAt: string;
  where: string;
  totals: { urls: number; documents: number; errors: number; upserts: number; deletes: number };
  states: Record<string, number>;
  httpStatus: Record<string, number>;
  errorCodes: Record<string, number>;
  errorsByHost: HostErrors[];
  /** hosts with errors (past 10,000 the rest are one "(other hosts)" line): errorsByHost is the top 25 */
  errorHosts: number;
  docsByDepth: Record<string, number>;
  docsByQueue: Record<string, number>;
  freshness: { maxAgeHours: number; buckets: { label: string; count: number }[]; overdue: number };
  changes: { bucketMinutes: number; buckets: TimeBucket[]; deletesByReason: [string, number][] };
  fetches: { bucketMinutes: number; buckets: TimeBucket[] };
  runs: RunSummary[];
  skipped: [string, number][];
  /** limits.* that cut something (a page read to fetch.maxBytes, a title cut…), summed over the runs */
  limits: [string, number][];
}

export interface ReportOptions {
  crawl: string;
  /** where the crawl runs, e.g. "local emulator" or the stack name */
  where: string;
  nowMs: number;
  maxAgeMs: number;
}

const TOP_HOSTS = 25;
const EXAMPLES_PER_HOST = 3;
/** Error codes of a fetch decided without a request: robots.txt unavailable, and the unsent ones. */
const NO_REQUEST_ERRORS = new Set(['robots-unavailable', ...UNSENT_ERRORS]);

/** Freshness classes as fractions of a document's refresh interval; the last is "overdue". */
const AGE_EDGES = [0.25, 0.5, 0.75, 1];

const bump = (o: Record<string, number>, k: string, n = 1) => {
  o[k] = (o[k] ?? 0) + n;
};

/** Trap caps that record the URLs they stop (`ignored`, note `trap: …`) as far as they admit. */
const RECORDED_TRAPS = ['host-cap', 'query-variants'];

/**
 * Notes of a `followed` page that say why it is no document: robots noindex, a rule's noIndex,
 * extract.honorCanonical. Others (a sitemap read, a meta refresh) are no skip.
 */
const NOT_INDEXED = /^(noindex \(|rule: noIndex|canonical is )/;

/** Strips the URL-specific tail of a skip note ("mime-type video/mp4" stays, a URL does not). */
export function skipReason(note: string | null | undefined): string {
  if (!note) return '(no reason recorded)';
  // The first of joined notes is the reason; a limit that also cut the page follows it.
  const [first = note] = note.split('; ');
  // A trap stop's note names the configured cap: grouped by the trap, as its unrecorded stops.
  if (first.startsWith('trap: ')) return first.replace(/ \(.*$/, '');
  return first
    .replace(/https?:\/\/\S+/g, '…')
    .replace(/\(\d[\d,.]*\s*\w*\)/g, '')
    .trim()
    .slice(0, 80);
}

/** Accumulates the report's figures. */
export class ReportAggregate {
  private readonly states: Record<string, number> = {};
  private readonly httpStatus: Record<string, number> = {};
  private readonly errorCodes = new BoundedCounter();
  private readonly hosts = new Map<string, HostErrors>();
  private readonly docsByDepth: Record<string, number> = {};
  private readonly docsByQueue: Record<string, number> = {};
  private readonly ages = new Array<number>(AGE_EDGES.length + 1).fill(0);
  private readonly skipped = new BoundedCounter();
  private readonly limits = new BoundedCounter();
  private readonly deleteReasons = new BoundedCounter();
  private readonly changeTimes = new TimeHistogram(2);
  private readonly fetchTimes = new TimeHistogram(1);
  private readonly runs: RunSummary[] = [];
  private readonly totals = { urls: 0, documents: 0, errors: 0, upserts: 0, deletes: 0 };

  constructor(private readonly opts: ReportOptions) {}

  /** One URL in the `trawl urls` state (current state, forgotten URLs already left out). */
  addState(s: UrlItem): void {
    this.totals.urls++;
    // As `trawl status` counts them: an error is permanent or temporary.
    bump(this.states, s.state === 'error' && s.errorKind ? `error/${s.errorKind}` : s.state);
    bump(this.httpStatus, s.httpStatus ? String(s.httpStatus) : 'none');
    // A fetch: robots.txt stopped it, or the address guard refused it, without a request.
    if (!s.note?.startsWith('robots.txt') && !NO_REQUEST_ERRORS.has(s.errorCode ?? ''))
      this.fetchTimes.add(s.lastFetched, 0);
    if (s.state === 'error') this.addError(s);
    this.addSkip(s);
    // A document is what `trawl docs` lists: a state with a document pointer.
    if (s.docBulk && s.docLine !== undefined && s.docLine !== null) {
      this.totals.documents++;
      bump(this.docsByDepth, String(s.depth ?? 'unknown'));
      bump(this.docsByQueue, s.queue ?? 'unknown');
      this.addAge(s.lastFetched ?? s.indexedAt, s.nextRefreshAt);
    }
  }

  /** One change-feed record (`trawl changes`). */
  addChange(c: ChangeRecord): void {
    if (c.type === 'upsert') this.totals.upserts++;
    else {
      this.totals.deletes++;
      this.deleteReasons.add(c.reason ? c.reason.replace(/\(.*\)$/, '').trim() : '(none)');
    }
    this.changeTimes.add(c.at, c.type === 'upsert' ? 0 : 1);
  }

  /** One run record (local `trawl crawl` / `trawl refresh`); `rejected:<reason>` counters are skips. */
  addRun(r: RunRecord): void {
    for (const [k, v] of Object.entries(r.stats)) {
      if (k.startsWith('rejected:')) this.addRejected(k.slice(9), v, r.stats);
    }
    const cost = r.pages > 0 ? priceRunRecord(r) : null;
    const { total, ...byService } = cost?.perMillion ?? { total: 0 };
    this.runs.push({
      kind: r.kind,
      startedAt: r.startedAt,
      seconds: r.seconds,
      pages: r.pages,
      pagesPerSecond: r.seconds > 0 ? r.pages / r.seconds : 0,
      awsRequests: Object.values(r.counts.calls).reduce((a, b) => a + b, 0),
      costPerMillion: cost ? total : null,
      costByService: cost ? byService : null,
      interrupted: r.interrupted === true,
      ...outcomeCounts(r),
    });
  }

  /**
   * A URL that is no document, as its state says: ignored, a page followed for its links only
   * (noindex, canonical elsewhere), or a duplicate. Grouped by the note's kind, not per URL.
   */
  private addSkip(s: UrlItem): void {
    if (s.state === 'ignored') this.skipped.add(skipReason(s.note));
    else if (s.state === 'followed' && NOT_INDEXED.test(s.note ?? ''))
      this.skipped.add(`followed, not indexed: ${skipReason(s.note)}`);
    else if (s.state === 'duplicate') this.skipped.add('duplicate: same content as another URL');
  }

  /**
   * A run's `rejected:<reason>` counter, each URL counted once: a limit is no rejected link (its
   * own table, as the crawl summary's "limits applied"), a soft 404 is an error already, and
   * rejections a URL state records (a trap stop's row, an out-of-scope page, a redirect's
   * rejected target) are counted from that state; only a trap's stops past its rows add to it.
   */
  private addRejected(reason: string, n: number, stats: Record<string, number>): void {
    if (reason.startsWith('limit-')) this.limits.add(reason, n);
    if (reason.startsWith('limit-') || reason === 'soft-404') return;
    if (RECORDED_TRAPS.includes(reason)) {
      const unrecorded = stats[`unrecorded:${reason}`] ?? 0;
      if (unrecorded > 0) this.skipped.add(`trap: ${reason}`, unrecorded);
      return;
    }
    const links = n - (stats[`recorded:${reason}`] ?? 0);
    if (links > 0) this.skipped.add(`link rejected: ${reason}`, links);
  }

  private addError(s: UrlItem): void {
    this.totals.errors++;
    this.errorCodes.add(s.errorCode ?? 'unknown');
    const host = hostOf(s.url);
    let h = this.hosts.get(host);
    if (!h) {
      // Bounded: past 10,000 hosts the rest count under one line.
      const key = this.hosts.size < 10_000 ? host : '(other hosts)';
      h = this.hosts.get(key) ?? { host: key, permanent: 0, temporary: 0, examples: [] };
      this.hosts.set(key, h);
    }
    if (s.errorKind === 'temporary') h.temporary++;
    else h.permanent++;
    if (h.examples.length < EXAMPLES_PER_HOST) {
      h.examples.push({ url: s.url, code: s.errorCode ?? null, httpStatus: s.httpStatus ?? null });
    }
  }

  /**
   * A document's age as a share of its own refresh interval: the time from its fetch to its next
   * refresh (refresh.maxAge, a rule's, or its adaptive interval), else maxAge. Against maxAge
   * alone, a page the adaptive schedule refreshes every 30 days showed as overdue after 48 h.
   */
  private addAge(at: string | null | undefined, nextRefreshAt: string | null | undefined): void {
    const t = at ? Date.parse(at) : Number.NaN;
    if (!Number.isFinite(t)) return;
    const due = nextRefreshAt ? Date.parse(nextRefreshAt) : Number.NaN;
    const interval = Number.isFinite(due) && due > t ? due - t : this.opts.maxAgeMs;
    const fraction = (this.opts.nowMs - t) / interval;
    const i = AGE_EDGES.findIndex((edge) => fraction < edge);
    this.ages[i === -1 ? AGE_EDGES.length : i] = (this.ages[i === -1 ? AGE_EDGES.length : i] ?? 0) + 1;
  }

  /** The figures, ready for the page. */
  finish(): ReportData {
    const maxAgeHours = this.opts.maxAgeMs / 3_600_000;
    const labels = ['< 25 %', '25–50 %', '50–75 %', '75–100 %', 'overdue (past its refresh time)'];
    return {
      crawl: this.opts.crawl,
      generatedAt: new Date(this.opts.nowMs).toISOString(),
      where: this.opts.where,
      totals: { ...this.totals },
      states: this.states,
      httpStatus: this.httpStatus,
      errorCodes: this.errorCodes.toObject(),
      errorsByHost: [...this.hosts.values()]
        .sort(
          (a, b) => b.permanent + b.temporary - (a.permanent + a.temporary) || a.host.localeCompare(b.host),
        )
        .slice(0, TOP_HOSTS),
      errorHosts: this.hosts.size,
      docsByDepth: this.docsByDepth,
      docsByQueue: this.docsByQueue,
      freshness: {
        maxAgeHours,
        buckets: labels.map((label, i) => ({ label, count: this.ages[i] ?? 0 })),
        overdue: this.ages[AGE_EDGES.length] ?? 0,
      },
      changes: {
        bucketMinutes: this.changeTimes.bucketMs / 60_000,
        buckets: this.changeTimes.toArray(),
        deletesByReason: this.deleteReasons.topAndRest(15),
      },
      fetches: { bucketMinutes: this.fetchTimes.bucketMs / 60_000, buckets: this.fetchTimes.toArray() },
      runs: [...this.runs].sort((a, b) => a.startedAt.localeCompare(b.startedAt)),
      skipped: this.skipped.topAndRest(15),
      limits: this.limits.topAndRest(15),
    };
  }
}

/**
 * A run's errors and documents written and deleted. A deployed hour (usage-record.ts) has no
 * outcome counts: "n/a", not a misleading 0 beside the feed's upserts and the URLs in error
 * (helper-43's audit).
 */
function outcomeCounts(r: RunRecord): Pick<RunSummary, 'errors' | 'upserted' | 'deleted'> {
  if (r.kind === 'deployed') return { errors: null, upserted: null, deleted: null };
  return {
    errors: (r.stats['error:permanent'] ?? 0) + (r.stats['error:temporary'] ?? 0),
    upserted: r.stats['documents:upserted'] ?? 0,
    deleted: r.stats['documents:deleted'] ?? 0,
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(malformed)';
  }
}
