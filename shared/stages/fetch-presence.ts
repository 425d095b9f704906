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
/** Hosts a presence names at most; past that it says "many" and every batch starts a fetcher. */
const MAX_HOSTS = 256;

type Said = { until: number; by?: string; hosts?: string[] | null };

/** One fetcher's presence: said while it runs, taken back as it ends. */
export class FetchPresence {
  private said: string | null = null;
  private until = 0;
  private readonly hosts = new Set<string>();
  private many = false;

  constructor(private readonly deps: StageDeps) {}

  /** Says this fetcher runs and works these hosts too (a write when it names new ones, or half of the last is gone). */
  async renew(hosts: Iterable<string>): Promise<void> {
    let added = false;
    for (const h of hosts)
      if (!this.hosts.has(h)) {
        this.hosts.add(h);
        added = true;
      }
    if (this.hosts.size > MAX_HOSTS) this.many = true;
    const now = this.deps.now();
    if (!(added && !this.many) && this.until - now > PRESENCE_MS / 2) return;
    this.until = now + PRESENCE_MS;
    const value: Said = { until: this.until, by: randomUUID(), hosts: this.many ? null : [...this.hosts] };
    this.said = JSON.stringify(value);
    await this.deps.hosts.putValue(KEY, this.said);
  }

  /** Takes it back (unless another fetcher said its own since): the next batch starts a fetcher. */
  async end(): Promise<void> {
    const said = this.said;
    if (!said) return;
    this.said = null;
    this.until = 0;
    await this.deps.hosts.swapValue(KEY, said, JSON.stringify({ until: 0 }));
  }
}

/** What a running fetcher said, if it runs for PRESENCE_MARGIN_MS yet (an eventually consistent read). */
async function runningFetcher(deps: StageDeps): Promise<Said | null> {
  const raw = await deps.hosts.getValue(KEY);
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
