/**
 * Whether a fetcher runs that polls every source, and which hosts it works: it says so on the
 * hosts table (one value, written when it takes new hosts and every PRESENCE_MS / 2), and the
 * extract stage leaves it new URLs of those hosts instead of starting a fetcher for them. Started
 * for hosts another fetcher holds, a fetcher found their turns taken: it put the URLs back with a
 * wake-up call, and a site where a third of the links redirect took 32 fetch invocations instead
 * of 3 (an audit, 6 polite hosts; Lambda $0.70 a million pages). Under a politeness wait only:
 * without one, a fetcher started for a host fetches it at once.
 */
import { randomUUID } from 'node:crypto';
import type { CrawlConfig } from '../config.ts';
import type { UrlTask } from '../types.ts';
import type { StageDeps } from './deps.ts';

const KEY = 'fetch-presence';
/** How long a presence lasts unless said again; it is said again once half of it is gone. */
export const PRESENCE_MS = 30_000;
/** A presence ending sooner than this is not counted on: that fetcher may be about to end. */
const PRESENCE_MARGIN_MS = 5_000;
/**
 * Hosts a presence names at most (a write unit a kilobyte: ~30 bytes a host); past that it says
 * "many", and every batch starts a fetcher: work that wide spreads over fetchers anyway.
 */
const MAX_HOSTS = 32;

type Said = { until: number; by?: string; hosts?: string[] | null };

/**
 * One fetcher's presence: said while it runs, taken back as it ends. It names the hosts of its
 * last two rounds (not every host it ever worked: a URL of a host it is done with would wait for
 * its next round instead of a fetcher of its own), and lasts no longer than the invocation.
 * Advisory: a failed write or read is logged, and the extract stage then starts a fetcher.
 */
export class FetchPresence {
  private said: string | null = null;
  private until = 0;
  /** the hosts said (null: "many") */
  private hosts: string[] | null = [];
  private previous: string[] = [];

  constructor(
    private readonly deps: StageDeps,
    private readonly deadline: number,
  ) {}

  /**
   * Says this fetcher runs and works `round`'s hosts (and the last round's): a write when the
   * hosts it names change, or half of the last presence is gone.
   */
  async renew(round: Iterable<string> = []): Promise<void> {
    const current = [...new Set(round)];
    let hosts = this.hosts;
    if (current.length > 0) {
      const both = [...new Set([...current, ...this.previous])].sort();
      hosts = both.length > MAX_HOSTS ? null : both;
      this.previous = current;
    }
    const now = this.deps.now();
    const same = JSON.stringify(hosts) === JSON.stringify(this.hosts);
    if (same && this.until - now > PRESENCE_MS / 2) return;
    this.until = Math.min(now + PRESENCE_MS, this.deadline);
    this.hosts = hosts;
    this.said = JSON.stringify({ until: this.until, by: randomUUID(), hosts } satisfies Said);
    await this.deps.hosts.putValue(KEY, this.said).catch((err) => {
      this.said = null;
      this.until = 0;
      this.deps.log.warn('saying the fetch presence failed', { err });
    });
  }

  /**
   * Says it works `hosts` only (those its round still waits on): an extract batch of any other
   * host starts a fetcher. Taken back when there are none.
   */
  async narrow(hosts: string[]): Promise<void> {
    if (hosts.length === 0) return this.end();
    this.previous = [];
    this.hosts = [];
    await this.renew(hosts);
  }

  /** Takes it back (unless another fetcher said its own since): the next batch starts a fetcher. */
  async end(): Promise<void> {
    const said = this.said;
    this.said = null;
    this.until = 0;
    this.hosts = [];
    if (!said) return;
    await this.deps.hosts
      .swapValue(KEY, said, JSON.stringify({ until: 0 }))
      .catch((err) => this.deps.log.warn('taking the fetch presence back failed', { err }));
  }
}

/**
 * What a running fetcher said, if it runs for PRESENCE_MARGIN_MS yet. A strongly consistent read:
 * an older value could show a presence already taken back, after the fetcher's last look, and
 * the URLs just sent would wait for the next tick.
 */
async function runningFetcher(deps: StageDeps): Promise<Said | null> {
  const raw = await deps.hosts.getValue(KEY, true).catch((err) => {
    deps.log.warn('reading the fetch presence failed', { err });
    return null;
  });
  try {
    const said = JSON.parse(raw ?? '{}') as Said;
    return Number(said.until) - deps.now() >= PRESENCE_MARGIN_MS ? said : null;
  } catch {
    return null; // not a presence this code wrote
  }
}

/**
 * Starts a fetcher for new URLs (deps.kickFetch), unless a running one takes them: under a
 * politeness wait, every URL of a host that a fetcher polling every source works.
 */
export async function kickFor(deps: StageDeps, config: CrawlConfig, tasks: UrlTask[]): Promise<void> {
  if (config.fetch.waitBetweenRequestsMs > 0) {
    const running = await runningFetcher(deps);
    const worked = new Set(running?.hosts ?? []);
    if (running?.hosts && tasks.every((t) => worked.has(new URL(t.url).host))) return;
  }
  await deps.kickFetch();
}
