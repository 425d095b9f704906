/**
 * A host's turn, as one fetch invocation sees it: the per-host gap kept across every worker (slots
 * in the hosts table), the delay a host asks for (fetch.waitBetweenRequestsMs or its robots.txt
 * Crawl-delay, capped), the back-off after 429/503 (Retry-After) and the hosts this invocation
 * already knows are not due. Lambda bills waiting like work: a turn further off than a pass through
 * the queue costs (MAX_IN_PROCESS_WAIT_MS) is not waited for, the URL goes back to its queue with a
 * delay (politeness by scheduling), unless enough other hosts' requests fill the wait.
 */
import type { Silence, SlotResult } from '../../aws/host-table.ts';
import type { CrawlConfig } from '../../config.ts';
import { crawlDelayMs, type RobotsTxt } from '../../crawl/robots/robots.ts';
import { sourceWeights, type Weights } from '../../crawl/state/scheduling.ts';
import type { SourceName } from '../../types.ts';
import type { StageDeps } from '../deps.ts';

/** A host's turn: go (sending by `sendBy` when a slot was booked), or put the URL back with a delay. */
export type Turn = { requeueSeconds: number } | { sendBy?: number };

/** Why a task goes back before it is fetched: not its host's turn, or the invocation is stopping. */
export type NotNow = { delaySeconds: number; reason: 'politeness' | 'deadline' };

/** The slot a robots.txt request took: when it starts and ends (epoch ms), and when to send by. */
export type RobotsSlot = { start: number; end: number; sendBy?: number };

/**
 * The turns robots.txt requests take (robots-cache.ts): the same slots as the host's pages, in
 * the same table, but waited for whatever their length (a robots.txt is read once a day a host,
 * and the workers that need it wait on its lease meanwhile).
 */
export interface RobotsTurns {
  /** The host's next turn, waited for until `deadline` at most; past it, how long the host stays taken (nothing may be sent). */
  robotsTurn(host: string, deadline: number): Promise<RobotsSlot | { busyForMs: number }>;
  /** Holds the host from `from` to `until` (a Crawl-delay longer than the config's wait). */
  hold(host: string, from: number, until: number): Promise<void>;
}

/** Hosts whose capped Crawl-delay this container has warned of. */
const warnedCapped = new Set<string>();

/** A limit the host's delay met (a Crawl-delay over limits.crawlDelayMs): counted and noted with the page. */
export type Capped = { limit: string; note: string };

/**
 * A host slot this close is waited for inside the invocation; a later one puts the URL (and every
 * other task of that host in the round) back with a delay. Going back is not free: SQS delays are
 * whole seconds, and each pass through the queue is a send, a wake-up call, a receive, a delete,
 * a new invocation and a document batch of its own. A lone host with a sub-second delay went
 * through the queue for every page: at 300 ms, 40 % of its politeness bound and $8.93 a million
 * pages (SQS $3.30); waiting in process, 105 % and $4.55 (SQS $0.59), Lambda $1.05 → $1.09 (bench,
 * `1,200,300`). At 500 ms Lambda costs more ($0.96 → $1.50) and the whole less ($9.69 → $6.30, 52 →
 * 99 % of the bound). A delay of a second or more still goes back (`1,200,1000`: the same figures
 * before and after), and so does a host another worker holds for a run of slots.
 */
export const MAX_IN_PROCESS_WAIT_MS = 500;
/**
 * Unless the wait is shared: while at least this many hosts of the round still have work, a host's
 * turn (up to MAX_OVERLAP_WAIT_MS) is waited for in the invocation, because the other hosts'
 * requests fill the time. Eight polite hosts are then fetched at their pace by one invocation
 * instead of a receive, a resend and a wake-up call per page; a few hosts go back to the queue.
 * Chosen by `npm run bench` (README, realistic networks).
 */
export const OVERLAP_HOSTS = 4;
const MAX_OVERLAP_WAIT_MS = 5_000;
/**
 * A slot is booked for a start time a little ahead (the lead) and used only if the request starts by
 * start + jitter. It is held for delay + margin: the margin beyond the jitter absorbs a stall between
 * that check and the request leaving, so requests stay ≥ delay apart whoever holds the next slot.
 */
export const SLOT_JITTER_MS = 50;
export const SLOT_MARGIN_MS = 2 * SLOT_JITTER_MS;
/** The lead grows (to this cap) when a slot write or timer came back too late to start on time. */
const MAX_SLOT_LEAD_MS = 2_000;
/** While slot writes are fast again, each booking keeps this share of the lead. */
const LEAD_DECAY = 0.8;

/** Slot writes whose times set the lead's floor (below SLOT_JITTER_MS). */
const LEAD_WINDOW = 16;

/**
 * How far ahead slots are booked: 1.5× the last slot write at once (a write that comes back after
 * its slot's start and the jitter lost that slot), at least the jitter after a missed slot, and a
 * fifth less a booking while writes are fast, down to a floor of 1.5× the slowest of the last 16
 * writes (at most the jitter, the floor there was before). One per container, not per invocation:
 * a lone polite host is an invocation a page, and each began at 50 ms, a sleep of 39 ms before
 * every request (bench, 1 host); where writes are fast every time (DynamoDB answers in ~10 ms)
 * that sleep is gone, where one in a while is slow the floor stays at the jitter.
 */
export class SlotLead {
  ms = SLOT_JITTER_MS;
  private readonly recent: number[] = [];

  /** A slot write took `took` ms. */
  wrote(took: number): void {
    this.recent.push(took);
    if (this.recent.length > LEAD_WINDOW) this.recent.shift();
    const floor = Math.min(SLOT_JITTER_MS, Math.ceil(Math.max(...this.recent) * 1.5));
    const next = Math.max(Math.ceil(took * 1.5), Math.floor(this.ms * LEAD_DECAY), floor);
    this.ms = Math.min(MAX_SLOT_LEAD_MS, next);
  }

  /** A slot came too late to use (a slow write, a slow connect): book further ahead. */
  late(): void {
    this.ms = Math.min(MAX_SLOT_LEAD_MS, Math.max(SLOT_JITTER_MS, this.ms * 2));
  }
}

/** This container's lead, shared by its invocations. */
const CONTAINER_LEAD = new SlotLead();

/**
 * A host whose next tasks this invocation will wait for books a run of up to this many slots in
 * one write (and gives back the unused end in one more), instead of a write per fetch: 8 polite
 * hosts fetched by one invocation cost 1.19 slot write units a page before (bench, profile-run).
 * Another worker sees the host busy until the run ends, at most RUN_SLOTS gaps ahead.
 */
export const RUN_SLOTS = 8;
/** A connect is started at most this long before its host's turn (an idle connection waits that long). */
const MAX_CONNECT_LEAD_MS = 2_000;
/**
 * A task that lost its host's turn to a lighter source's (seed 001 weights) says so on the host
 * item and comes back by its delay plus this: the lighter ones leave it the slots until then. It
 * covers a put-back task's way back (the wake-up call, a receive); one that comes later than that
 * loses the turn again and says so again.
 */
export const WAITER_GRACE_MS = 2_000;
/**
 * A host that sent nothing back to this many requests in a row (no status line within
 * fetch.timeoutMs: a server that hangs, a firewall that drops) is held for every worker, and its
 * other URLs in this invocation count the attempt unsent (`silentHost`). Each request sent to it
 * costs the invocation fetch.timeoutMs of waiting: a host that never answers cost 4 × timeoutMs
 * of Lambda per URL (every URL's attempts, one request at a time), 243 s for 6 URLs at 10 s.
 * Two, not one: a single slow page of a live host must not cost its other URLs an attempt.
 *
 * The requests in a row must come from two sections of the host (first path segments,
 * `sectionOf`) for the whole host to be held; from one section they hold that section only. A
 * site whose search pages hang and whose documents answer is not a silent host: until
 * 2026-11-28 its search pages held it whole, and 10 of 40 answering pages behind 8 hanging ones
 * ended as errors without a request ever sent (`test/integration/silent-host.test.ts`).
 */
export const SILENT_REQUESTS = 2;

/**
 * The part of a host whose silence is counted apart: the URL's first path segment (`/search` of
 * `/search?q=1`, `/` of the home page), at most 100 characters. A hung search endpoint, CGI
 * folder or API is a first segment of its own on most sites.
 */
export function sectionOf(url: string): string {
  const path = URL.parse(url)?.pathname ?? '/';
  const end = path.indexOf('/', 1);
  return (end === -1 ? path : path.slice(0, end)).slice(0, 100);
}

/**
 * Requests in a row a host or one of its sections sent nothing back to, as one invocation saw
 * them or read them on the host item: until when they are held, until when a request sent after
 * the hold (a probe) is waited for, and when the hold began. A host's row also names its sections
 * (at most two: two make it the whole host's silence; none, read on the host item: the whole host).
 */
interface SilenceRow {
  requests: number;
  until: number;
  probeUntil: number;
  heldAt: number;
  sections?: string[];
}

/** The key of a section's row beside its host's (a space is in no host name). */
const sectionKey = (host: string, section: string) => `${host} ${section}`;

/** Whether a host's row holds the whole host (not the row of one section, which its section's row holds). */
const wholeHost = (row: SilenceRow) => row.sections === undefined || row.sections.length !== 1;

/** A silence as `silentHost` answers it: held this long yet, after this many requests in a row; of one section, or the whole host. */
export type SilentHold = { forMs: number; requests: number; section?: string };
/**
 * How long a silent host is held: 2 × fetch.timeoutMs after the SILENT_REQUESTS-th request in a
 * row, twice as long after each request after the hold (a probe) that is not answered either, up
 * to this. Then one request tries it again.
 */
const SILENT_HOLD_MAX_MS = 10 * 60_000;
/** A probe of a silent host is waited for its timeout and this long before another request goes. */
const SILENT_PROBE_SLACK_MS = 1_000;

/** Without a per-host delay, another worker's back-off (429/503) is re-read this often per host. */
const BACKOFF_READ_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How a refused booking goes on: how long the task waits, and whether it says it waits for the
 * host. Lost to a lighter source's task, it says so (unless a task as heavy or heavier waits
 * already) and comes back by the next slot: a run of slots the lighter one holds is given back
 * then (yieldRun), not when the run would end. Refused for a heavier waiter, it comes back after
 * that one (afterWaiter).
 */
function afterRefusal(
  slot: Extract<SlotResult, { ok: false }>,
  weight: number | undefined,
  step: number,
  now: number,
): { waitMs: number; saysItWaits: boolean } {
  const { waitMs, heldBy, waiter } = slot;
  if (weight === undefined) return { waitMs, saysItWaits: false };
  if (heldBy !== undefined && heldBy < weight)
    return { waitMs: Math.min(waitMs, step), saysItWaits: !waiter || waiter.weight < weight };
  if (waiter && waiter.weight > weight)
    return { waitMs: afterWaiter(waitMs, waiter.until, step, now), saysItWaits: false };
  return { waitMs, saysItWaits: false };
}

/**
 * When a task lighter than the host's waiter comes for the host again: one slot after the waiter is
 * expected back (its `until` less the grace), not when its wait runs out, which left the host idle
 * ~1.8 s a heavier task (4 polite hosts, priority-politeness.test.ts). Only while that still sends
 * the task back to its queue (≥ 1 s): a waiter late beyond its expected time is waited out whole,
 * never polled for in process (a refused booking costs a write unit).
 */
function afterWaiter(waitMs: number, until: number, step: number, now: number): number {
  const expected = until - WAITER_GRACE_MS + step - now;
  return expected >= 1000 ? Math.min(waitMs, expected) : waitMs;
}

/** One invocation's view of its hosts' turns; the hosts table is the view every worker shares. */
export class HostTurns implements RobotsTurns {
  /** hosts backed off (429/503 Retry-After) as this invocation knows it: until when, and when last read */
  private readonly backoffs = new Map<string, { until: number; readAt: number }>();
  /** each host's delay as the last fetch found it (config and robots.txt Crawl-delay) */
  private readonly delays = new Map<string, number>();
  /** hosts not due in this invocation: until when, and the delay their tasks go back with */
  private readonly deferred = new Map<string, { until: number; delaySeconds: number; heldBy?: number }>();
  /** the waits this invocation said on host items (`waitFor`): one write a host, not one a task */
  private readonly waiting = new Map<string, { weight: number; until: number }>();
  /** slots booked ahead for a host in one write: the next one to use, and the end of the booking */
  private readonly runs = new Map<string, { next: number; until: number; step: number; checked?: number }>();
  /** Hosts and sections (`sectionKey`) that sent nothing back to requests in a row. */
  private readonly silences = new Map<string, SilenceRow>();
  /** how long the last connect to each host took (DNS, TCP, TLS), as this invocation saw it */
  private readonly connectMs = new Map<string, number>();
  /** how many hosts of the current round still have tasks (the fetch stage sets it per round) */
  activeHosts: () => number = () => 0;
  /** how many tasks of `host` the current round still has (the fetch stage sets it per round) */
  tasksLeft: (host: string) => number = () => 0;
  /** the hosts of the current round that still have tasks (the fetch stage sets it per round) */
  hostsLeft: () => string[] = () => [];
  /** the sources' weights (seed 001, `weights`): a heavier task waiting for a host goes first */
  private readonly weights: Weights;
  private readonly heaviest: number;

  constructor(
    private readonly deps: StageDeps,
    private readonly config: CrawlConfig,
    private readonly deadline: number,
    private readonly signal?: AbortSignal,
    /** how far ahead slots are booked (grows when DynamoDB answers slowly) */
    private readonly lead: SlotLead = CONTAINER_LEAD,
  ) {
    this.weights = sourceWeights(config.weights);
    this.heaviest = Math.max(...Object.values(this.weights));
  }

  /** Requests to one host in flight at once: fetch.connectionsPerHost once it is known to ask for no delay. */
  connectionsFor(host: string): number {
    return this.delays.get(host) === 0 ? this.config.fetch.connectionsPerHost : 1;
  }

  /** A connect to the host took `ms`: its next tasks start connecting that much before its turn. */
  connected(host: string, ms: number): void {
    this.connectMs.set(host, Math.min(MAX_CONNECT_LEAD_MS, Math.max(0, ms)));
  }

  /**
   * Before a host's task: null to go on (after a short or shared wait), else how it goes back. A
   * task of a heavier source than the one that took the host's turn says it waits (`turn`).
   */
  async notDue(host: string, source?: SourceName): Promise<NotNow | null> {
    const now = this.deps.now();
    if (now > this.deadline || this.signal?.aborted) return { delaySeconds: 0, reason: 'deadline' };
    const deferred = this.deferred.get(host);
    // Connecting (DNS, TCP, TLS) comes before the turn (fetcher.ts): it starts that much early.
    const until = deferred ? deferred.until - (this.connectMs.get(host) ?? 0) : 0;
    if (!deferred || until <= now) return null;
    const wait = until - now;
    if (!this.mayWait(now, wait)) {
      const weight = source === undefined ? undefined : this.weights[source];
      if (weight !== undefined && deferred.heldBy !== undefined && deferred.heldBy < weight)
        await this.waitForTurn(host, weight, now + deferred.delaySeconds * 1000 + WAITER_GRACE_MS, now);
      return { delaySeconds: deferred.delaySeconds, reason: 'politeness' };
    }
    return (await this.pause(wait)) ? null : { delaySeconds: 0, reason: 'deadline' };
  }

  /** Says on the host item that a task of `weight` waits for the host until `until` (once a host and invocation). */
  private async waitForTurn(host: string, weight: number, until: number, now: number): Promise<void> {
    const said = this.waiting.get(host);
    if (said && said.weight >= weight && said.until >= until - WAITER_GRACE_MS) return;
    this.waiting.set(host, { weight, until });
    await this.deps.hosts.waitFor(host, weight, until, now);
  }

  /**
   * The gap a host gets: fetch.waitBetweenRequestsMs or its robots.txt Crawl-delay, whichever is
   * longer; a Crawl-delay over limits.crawlDelayMs (a site can ask for a day) is capped, logged once
   * per host and container and noted with every page fetched under it.
   */
  delayFor(host: string, robots: RobotsTxt | null, agent: string): { delayMs: number; capped?: Capped } {
    let delayMs = this.config.fetch.waitBetweenRequestsMs;
    let capped: Capped | undefined;
    const asked = robots ? (crawlDelayMs(robots, agent) ?? 0) : 0;
    const ceiling = this.config.limits.crawlDelayMs;
    if (asked > ceiling) {
      if (!warnedCapped.has(host)) {
        // Once per host and container: each invocation warned again (8 lines for one host).
        if (warnedCapped.size >= 10_000) warnedCapped.clear();
        warnedCapped.add(host);
        this.deps.log.warn('Crawl-delay capped at limits.crawlDelayMs', { host, askedMs: asked, ceiling });
      }
      const note = `Crawl-delay ${asked / 1000} s capped at limits.crawlDelayMs (${ceiling} ms)`;
      capped = { limit: 'limit-crawl-delay', note };
    }
    delayMs = Math.max(delayMs, Math.min(asked, ceiling));
    this.delays.set(host, delayMs);
    return capped ? { delayMs, capped } : { delayMs };
  }

  /**
   * Waits for the host's turn; a delay in seconds when the URL must go back to its queue. A slot is
   * booked for a start time ahead of the write, so the write's latency never moves a request closer
   * to another worker's; a slot that cannot be used on time is left unused. Once a slot is booked,
   * the host's other tasks in this invocation know when it is next due without a write that would fail.
   *
   * Seed 001's weights hold between the URLs waiting for one host too: a task put back for its
   * host's turn comes back on its own delay, so without more the first one back took the turn,
   * whatever its source (a redirect target waited 8 s while 6 lighter pages of its host went first).
   * A task that loses the turn to a lighter source's says so on the host item (`waitFor`), and the
   * lighter ones leave it the host's slots until it is back.
   */
  async turn(host: string, delayMs: number, source?: SourceName, section = '/'): Promise<Turn> {
    if (delayMs <= 0) {
      const wait = await this.backedOff(host, section);
      return wait === null ? {} : { requeueSeconds: wait };
    }
    const weight = source === undefined ? undefined : this.weights[source];
    const step = delayMs + SLOT_MARGIN_MS;
    for (;;) {
      const booked = this.fromRun(host, step);
      if (booked !== null) {
        // A slot of a run booked earlier: a heavier task that came for the host since goes first.
        const yielded = await this.yieldRun(host, booked, weight, step);
        if (yielded !== null) {
          const requeue = await this.waitOrRequeue(this.deps.now(), yielded);
          if (requeue !== null) return { requeueSeconds: requeue };
          continue;
        }
        const early = booked - this.deps.now();
        if (early > 0) await sleep(early);
        if (this.deps.now() <= booked + SLOT_JITTER_MS) {
          this.defer(host, booked + step, weight);
          return { sendBy: booked + SLOT_JITTER_MS };
        }
        this.late();
        continue;
      }
      // This invocation's own run still holds the host (its slots missed: a booking that came
      // back past its first slot's start, a stall): a booking before the run's end is refused by
      // it, a write unit for nothing (100-135 of 500 pages of a broad crawl, bench/README.md).
      // It waits until a booking ahead by the lead starts at the run's end, as it did after that
      // refusal, or goes back to its queue.
      const ownUntil = this.runs.get(host)?.until ?? 0;
      if (ownUntil > this.deps.now() + this.lead.ms) {
        const now = this.deps.now();
        const requeue = await this.waitOrRequeue(now, ownUntil - this.lead.ms - now);
        if (requeue === null) continue;
        this.defer(host, ownUntil, weight);
        return { requeueSeconds: requeue };
      }
      const start = this.deps.now() + this.lead.ms;
      const slots = this.runLength(host, start, step);
      // More of the host's tasks in the round than slots: they go back and come for the host again,
      // so the booking says they wait (lighter tasks leave them the host; none: nothing changes).
      const more = weight !== undefined && this.tasksLeft(host) > slots;
      const slot = await this.book(
        host,
        start,
        slots * step,
        weight,
        more ? start + slots * step + WAITER_GRACE_MS : undefined,
      );
      if (slot.ok) {
        // The first slot of a run: the booking itself heeded any heavier waiter.
        this.runs.set(host, { next: start, until: start + slots * step, step, checked: start });
        // A host another worker found silent: this request is the probe, if no other is.
        const back = this.heardSilent(host, slot.silent) ? this.probeOrBack(host, section) : null;
        if (back !== null) return { requeueSeconds: back };
        continue;
      }
      const now = this.deps.now();
      this.heardSilent(host, slot.silent);
      const { waitMs, saysItWaits } = afterRefusal(slot, weight, step, now);
      // Said before waiting here too: the lighter one's run must be given back meanwhile.
      if (saysItWaits && weight !== undefined)
        await this.waitForTurn(host, weight, now + Math.ceil(waitMs / 1000) * 1000 + WAITER_GRACE_MS, now);
      const requeue = await this.waitOrRequeue(now, waitMs);
      if (requeue === null) continue;
      this.defer(host, now + slot.waitMs, slot.heldBy);
      return { requeueSeconds: requeue };
    }
  }

  /**
   * Before a slot of a run booked earlier: null to use it, or how long to wait when a heavier task
   * waits for the host (one read of the host item; none for the heaviest source). The run's slots
   * from this one on are given back, so the heavier task can book them.
   */
  private async yieldRun(
    host: string,
    slotStart: number,
    weight: number | undefined,
    step: number,
  ): Promise<number | null> {
    const run = this.runs.get(host);
    if (weight === undefined || weight >= this.heaviest || !run || run.checked === slotStart) return null;
    const now = this.deps.now();
    const waiter = await this.deps.hosts.heavierWaiter(host, weight, now);
    if (!waiter) return null;
    this.runs.delete(host);
    await this.deps.hosts.releaseSlot(host, run.until, Math.max(slotStart, now));
    return afterWaiter(Math.max(1, waiter.until - now), waiter.until, step, now);
  }

  /**
   * A robots.txt request's turn: one slot of the configured wait, booked with the same lead as a
   * page's and waited for (another worker's run of slots too, until `deadline`). The host's tasks
   * here then know it is not due before the slot ends, without a write that would only fail.
   */
  async robotsTurn(host: string, deadline: number): Promise<RobotsSlot | { busyForMs: number }> {
    const delayMs = this.config.fetch.waitBetweenRequestsMs;
    if (delayMs <= 0) return { start: this.deps.now(), end: this.deps.now() };
    const step = delayMs + SLOT_MARGIN_MS;
    for (;;) {
      const start = this.deps.now() + this.lead.ms;
      const slot = await this.book(host, start, step);
      const freeAt = slot.ok ? start : this.deps.now() + slot.waitMs;
      const wait = slot.ok ? start - this.deps.now() : Math.min(slot.waitMs, deadline - this.deps.now());
      // Not cut short by a stop: a request sent early would break the gap (the worker stops after it).
      if (wait > 0) await sleep(wait);
      if (slot.ok) {
        this.defer(host, start + step);
        return { start, end: start + step, sendBy: start + SLOT_JITTER_MS };
      }
      // Held past the deadline (a Crawl-delay, a back-off, another worker's run of slots): until
      // 2026-11-28 the request went anyway, inside the gap.
      if (this.deps.now() >= deadline) return { busyForMs: Math.max(1, freeAt - this.deps.now()) };
    }
  }

  /**
   * Books the host from `start` (the lead ahead of now) for `length` ms. A write that came back past
   * its slot's start and the jitter (a loaded table, many hosts booking at once) lost that slot:
   * the next bookings lead by more than the write takes.
   */
  private async book(host: string, start: number, length: number, weight?: number, waitUntil?: number) {
    const asked = this.deps.now();
    const slot = await this.deps.hosts.acquireSlot(host, start, length, weight, waitUntil);
    this.lead.wrote(this.deps.now() - asked);
    return slot;
  }

  /** Holds the host from `from` to `until` when no other worker booked it since (one conditional write). */
  async hold(host: string, from: number, until: number): Promise<void> {
    if ((await this.deps.hosts.acquireSlot(host, from, until - from)).ok) this.defer(host, until);
  }

  /**
   * The start of the host's next booked slot that can still be met, taken; null when none is left
   * (the run used up, missed, or never booked). A slot whose start has passed by more than the
   * jitter is skipped, never used late.
   */
  private fromRun(host: string, step: number): number | null {
    const run = this.runs.get(host);
    if (!run) return null;
    // A delay learned since the booking (a robots.txt Crawl-delay read again) spaces them wider.
    const gap = Math.max(step, run.step);
    while (run.next + SLOT_JITTER_MS < this.deps.now()) run.next += gap;
    if (run.next + gap > run.until) return null;
    const start = run.next;
    run.next += gap;
    return start;
  }

  /**
   * How many slots to book at once: one, unless the round has more of the host's tasks and this
   * invocation would wait for their turns (waits shared with other hosts); then as many as the
   * tasks, up to RUN_SLOTS and the deadline.
   */
  private runLength(host: string, start: number, step: number): number {
    const tasks = this.tasksLeft(host);
    if (tasks <= 1 || !this.mayWait(start, step)) return 1;
    const beforeDeadline = Math.floor((this.deadline - start) / step);
    return Math.max(1, Math.min(tasks, RUN_SLOTS, beforeDeadline));
  }

  /**
   * Gives back the unused end of every run of slots (one conditional write a host), so other
   * workers may take the host from its next due time instead of the end of the booking. The fetch
   * stage calls it when a round ends; a crash leaves the booking to end by itself.
   */
  async settle(): Promise<void> {
    const open = [...this.runs.entries()].filter(([, run]) => run.next < run.until);
    this.runs.clear();
    await Promise.all(
      open.map(async ([host, run]) => {
        const freeAt = Math.max(run.next, this.deps.now());
        if (await this.deps.hosts.releaseSlot(host, run.until, freeAt)) this.defer(host, freeAt);
      }),
    );
  }

  /** A slot came too late to use (a slow write, a slow connect): book further ahead next time. */
  late(): void {
    this.lead.late();
  }

  /** How far ahead slots are booked now (ms). */
  get leadMs(): number {
    return this.lead.ms;
  }

  /**
   * The host is not due before `until`: this invocation's other tasks for it go back to the queue
   * with one delay (one message) without another slot write, which would only fail.
   */
  defer(host: string, until: number, heldBy?: number): void {
    const delaySeconds = Math.max(1, Math.round((until - this.deps.now()) / 1000));
    // Who holds the turn (a source weight), when known: kept when a later deferral does not say.
    const held = heldBy ?? this.deferred.get(host)?.heldBy;
    this.deferred.set(
      host,
      held === undefined ? { until, delaySeconds } : { until, delaySeconds, heldBy: held },
    );
  }

  /**
   * A request to `host` (a URL of `section`) got no response within fetch.timeoutMs. The
   * SILENT_REQUESTS-th in a row holds the section, or the whole host when the row spans two of its
   * sections (for every worker, as a back-off; see SILENT_HOLD_MAX_MS for how long).
   */
  async unanswered(host: string, section: string, sentAt: number): Promise<void> {
    const now = this.deps.now();
    const hostRow = this.countSilent(host, sentAt, section);
    const sectionRow = this.countSilent(sectionKey(host, section), sentAt);
    if (hostRow && wholeHost(hostRow) && this.holdRow(hostRow, now)) {
      this.deps.log.warn('host held: it sent nothing back to requests in a row', {
        host,
        requests: hostRow.requests,
        timeoutMs: this.config.fetch.timeoutMs,
        heldForMs: hostRow.until - now,
      });
      this.runs.delete(host);
      await this.deps.hosts.backOff(host, hostRow.until, hostRow.requests);
      this.backoffs.set(host, { until: hostRow.until, readAt: now });
    } else if (sectionRow && this.holdRow(sectionRow, now)) {
      // The rest of the host answers (or has not been asked): only this section's URLs wait.
      this.deps.log.warn('section held: its URLs sent nothing back to requests in a row', {
        host,
        section,
        requests: sectionRow.requests,
        timeoutMs: this.config.fetch.timeoutMs,
        heldForMs: sectionRow.until - now,
      });
      await this.deps.hosts.holdSection(host, section, sectionRow.until, sectionRow.requests);
    }
  }

  /** One more request in a row of `key`'s; null when it was in flight with the ones that held it (counted already). */
  private countSilent(key: string, sentAt: number, section?: string): SilenceRow | null {
    const known = this.silences.get(key) ?? { requests: 0, until: 0, probeUntil: 0, heldAt: 0 };
    if (sentAt < known.heldAt) return null;
    const row: SilenceRow = { ...known, requests: known.requests + 1, probeUntil: 0 };
    if (section !== undefined) {
      // Read on the host item as the whole host's (no sections): it stays so.
      const sections = known.requests === 0 ? [] : known.sections;
      if (sections !== undefined)
        row.sections = sections.includes(section) || sections.length >= 2 ? sections : [...sections, section];
    }
    this.silences.set(key, row);
    return row;
  }

  /** Holds a row that has come to SILENT_REQUESTS and is not held yet: 2 × timeoutMs, doubled for each request more. */
  private holdRow(row: SilenceRow, now: number): boolean {
    if (row.requests < SILENT_REQUESTS || row.until > now) return false;
    const doublings = Math.min(20, row.requests - SILENT_REQUESTS + 1);
    row.until = now + Math.min(SILENT_HOLD_MAX_MS, this.config.fetch.timeoutMs * 2 ** doublings);
    row.heldAt = now;
    return true;
  }

  /**
   * The host answered a request (any status) of `section`: its row of requests in a row ends, and
   * the section's; each held one is forgotten for every worker. Another section's silence stays.
   */
  async answered(host: string, section: string): Promise<void> {
    const hostRow = this.silences.get(host);
    if (hostRow) {
      this.silences.delete(host);
      if (hostRow.requests >= SILENT_REQUESTS && wholeHost(hostRow))
        await this.deps.hosts.clearSilence(host, null);
    }
    const key = sectionKey(host, section);
    const sectionRow = this.silences.get(key);
    if (sectionRow) {
      this.silences.delete(key);
      if (sectionRow.requests >= SILENT_REQUESTS) await this.deps.hosts.clearSilence(host, section);
    }
  }

  /**
   * Whether a URL of `host` in `section` counts its attempt without a request (fetch-one.ts): null
   * to send, or how long it is held yet, after how many requests in a row, and whose silence it
   * is (the section's, or the whole host's). Once a hold ends one request goes (a probe: 'probe',
   * to send); the others count theirs until it is answered or times out. A probe that goes back
   * unsent says so (`probeDone`). With `claim` false nothing is claimed: null where a probe may go.
   */
  silentHost(host: string, section: string, claim = true): SilentHold | 'probe' | null {
    const now = this.deps.now();
    const rows: [SilenceRow, string | undefined][] = [];
    const hostRow = this.silences.get(host);
    if (hostRow && hostRow.requests >= SILENT_REQUESTS && wholeHost(hostRow)) rows.push([hostRow, undefined]);
    const sectionRow = this.silences.get(sectionKey(host, section));
    if (sectionRow && sectionRow.requests >= SILENT_REQUESTS) rows.push([sectionRow, section]);
    if (rows.length === 0) return null;
    for (const [row, of] of rows) {
      const heldUntil = Math.max(row.until, row.probeUntil);
      if (heldUntil > now)
        return {
          forMs: heldUntil - now,
          requests: row.requests,
          ...(of === undefined ? {} : { section: of }),
        };
    }
    if (!claim) return null;
    for (const [row] of rows) row.probeUntil = now + this.config.fetch.timeoutMs + SILENT_PROBE_SLACK_MS;
    return 'probe';
  }

  /** For a request about to go to `host`: null when it may (the probe, or no silence), else seconds to go back for. */
  private probeOrBack(host: string, section: string): number | null {
    const silent = this.silentHost(host, section);
    return silent && silent !== 'probe' ? Math.max(1, Math.ceil(silent.forMs / 1000)) : null;
  }

  /** The probe of a silent host or section is done with (answered, timed out, or gone back unsent): the next task may be one. */
  probeDone(host: string, section: string): void {
    for (const key of [host, sectionKey(host, section)]) {
      const row = this.silences.get(key);
      if (row) row.probeUntil = 0;
    }
  }

  /**
   * The host item says the host (or one of its sections) was silent (held by some worker, not
   * answered since): this invocation heeds it too. True when it was news here.
   */
  private heardSilent(host: string, heard: Silence | undefined): boolean {
    if (!heard) return false;
    const key = heard.section === undefined ? host : sectionKey(host, heard.section);
    const known = this.silences.get(key);
    const whole = known !== undefined && (heard.section !== undefined || wholeHost(known));
    if (known && whole && known.requests >= SILENT_REQUESTS && known.until >= heard.until) return false;
    this.silences.set(key, {
      requests: Math.max(heard.requests, known?.requests ?? 0),
      until: Math.max(heard.until, known?.until ?? 0),
      probeUntil: known?.probeUntil ?? 0,
      heldAt: this.deps.now(),
    });
    return true;
  }

  /** 429/503 with Retry-After (RFC 9110 §10.2.3): the whole host waits, for every worker (the host item). */
  async backOff(host: string, retryAfterMs: number): Promise<void> {
    const until = this.deps.now() + retryAfterMs;
    this.runs.delete(host); // the slots booked ahead are not used: the whole host waits
    await this.deps.hosts.backOff(host, until);
    this.backoffs.set(host, { until, readAt: this.deps.now() });
  }

  /**
   * No per-host delay, so no slot write per fetch: only a back-off holds the host, known from this
   * invocation or read from the host item now and then.
   */
  private async backedOff(host: string, section: string): Promise<number | null> {
    const now = this.deps.now();
    let known = this.backoffs.get(host);
    if (!known || now - known.readAt > BACKOFF_READ_MS) {
      const hold = await this.deps.hosts.slotHold(host);
      known = { until: Math.max(known?.until ?? 0, hold.freeAt), readAt: now };
      this.backoffs.set(host, known);
      // Held for its silence by another worker: after the hold, this request is the probe, if no other is.
      const back =
        this.heardSilent(host, hold.silent) && known.until <= now ? this.probeOrBack(host, section) : null;
      if (back !== null) return back;
    }
    return known.until > now ? this.waitOrRequeue(now, known.until - now) : null;
  }

  /** Whether a wait is done in the invocation: a short one, or one other hosts' requests overlap. */
  private mayWait(now: number, waitMs: number): boolean {
    if (now + waitMs > this.deadline || this.signal?.aborted) return false;
    // A slot is the delay plus its margin: with a fast site, a 500 ms wait is 600 ms away after
    // the answer, and it went back through the queue in whole seconds (40 % of the bound, helper-44).
    if (waitMs <= MAX_IN_PROCESS_WAIT_MS + SLOT_MARGIN_MS) return true;
    return waitMs <= MAX_OVERLAP_WAIT_MS && this.activeHosts() >= OVERLAP_HOSTS;
  }

  /** Null when the wait is done in process; else the delay in seconds for putting the URL back. */
  private async waitOrRequeue(now: number, waitMs: number): Promise<number | null> {
    if (!this.mayWait(now, waitMs)) return Math.ceil(waitMs / 1000);
    return (await this.pause(waitMs)) ? null : 0;
  }

  /** Sleeps `ms`, or less when the invocation is told to stop; false when it was. */
  private pause(ms: number): Promise<boolean> {
    const signal = this.signal;
    if (!signal) return sleep(ms).then(() => true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve(!signal.aborted);
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
