/**
 * Soft-404 detection (scope.traps.soft404): before a host's first page, one request for a random
 * path. A host that answers it with a 200 HTML page is one that answers 200 for anything: the
 * fingerprint of that answer's text (crawl/url/traps.ts) is kept in the hosts table and in the
 * container, travels with each page of the host, and the extract stage treats a page with the
 * same fingerprint as not found (`error`, code `soft-404`). The answer expires after SOFT404_TTL_MS
 * (24 h of deps.now, as robots.txt's): the host is probed again, by the worker with its probe lease.
 */
import { awaitLeaseHolder } from '../aws/host-table.ts';
import { soft404Fingerprint } from '../crawl/url/traps.ts';
import type { FetchOutcome } from '../net/fetcher.ts';
import { takeSpooled } from './body-spool.ts';
import type { FetchContext } from './fetch-context.ts';

/** The fingerprint stored for a host that answers unknown paths properly. */
const NONE = 'none';
/**
 * How long a probe's answer is trusted: a site changes how it answers unknown paths (a CMS switch,
 * a new not-found template), so its host is probed again once the answer is this old, as its
 * robots.txt is read again after 24 h (politeness/robots-cache.ts ROBOTS_TTL_MS).
 */
export const SOFT404_TTL_MS = 24 * 3_600_000;
/** The probe lease: one worker probes a host; longer than a probe may take. */
const LEASE_MS = 60_000;
/**
 * A probe dated this far past the clock is from a run on a clock moved ahead (`trawl refresh
 * --now`): not trusted once the clock is back; a little skew between containers is.
 */
const AHEAD_MS = 5 * 60_000;
/** Waiting for another worker's first probe of a host (none stored yet): how long, how often. */
const WAIT_MS = 10_000;
const POLL_MS = 250;

/** A probe's answer: the fingerprint (NONE: no soft 404s) and when it was probed (epoch ms, deps.now). */
interface Probed {
  fingerprint: string;
  at: number;
}
/** Answers kept in the container, each trusted until `until` (deps.now). */
const known = new Map<string, Probed & { until: number }>();
/** Probes under way: concurrent fetches of one host wait for the one probe. */
const probing = new Map<string, Promise<string | null | number>>();
/** The probe leases this container holds, until when: a probe put off by politeness is sent by it. */
const held = new Map<string, number>();

type ProbeFetch = (probeUrl: string) => Promise<FetchOutcome | number | null>;

/** The hosts table value: `<probed at> <fingerprint>`. */
const encode = (p: Probed) => `${p.at} ${p.fingerprint}`;
/** A stored answer; one stored before answers carried their time (no space) is long expired. */
function decode(value: string | null): Probed | null {
  if (value === null) return null;
  const space = value.indexOf(' ');
  if (space < 0) return { fingerprint: value, at: 0 };
  return { fingerprint: value.slice(space + 1), at: Number(value.slice(0, space)) || 0 };
}
const fresh = (p: Probed, now: number) => p.at > now - SOFT404_TTL_MS && p.at <= now + AHEAD_MS;
const answer = (p: Probed) => (p.fingerprint === NONE ? null : p.fingerprint);

/** Keeps an answer in the container until it is SOFT404_TTL_MS old, or until `until`. */
function remember(key: string, p: Probed, until = p.at + SOFT404_TTL_MS): string | null {
  known.set(key, { ...p, until });
  return answer(p);
}

/**
 * The host's soft-404 fingerprint, null when it has none, or seconds to wait (politeness) first.
 * Memory (until the answer is SOFT404_TTL_MS old) → hosts table (one read per host and container
 * and day) → a probe, by the one worker that takes the host's probe lease.
 */
export function hostSoft404(
  ctx: FetchContext,
  url: string,
  fetch: ProbeFetch,
): Promise<string | null | number> {
  const origin = new URL(url).origin;
  const key = `soft404#${ctx.config.name}#${origin}`;
  const now = ctx.deps.now();
  const hit = known.get(key);
  if (hit && now < hit.until && hit.at <= now + AHEAD_MS) return Promise.resolve(answer(hit));
  let p = probing.get(key);
  if (!p) {
    p = probe(ctx, key, origin, fetch).finally(() => probing.delete(key));
    probing.set(key, p);
  }
  return p;
}

async function probe(ctx: FetchContext, key: string, origin: string, fetch: ProbeFetch) {
  const { hosts, now } = ctx.deps;
  const stored = decode(await hosts.getValue(key));
  if (stored && fresh(stored, now())) return remember(key, stored);
  if (!(await probeLease(ctx, key))) {
    // Another worker probes the host now. Until its answer is stored, the previous one holds (it
    // was right until a moment ago), read again after the lease; a host never probed waits for it.
    if (stored) return remember(key, stored, now() + LEASE_MS);
    const other = await awaitOther(ctx, key);
    return other ? remember(key, other) : 1;
  }
  // Random, so no cache or real page can answer it; the product token shows what it is in logs.
  const token = Math.floor(ctx.deps.random() * 2 ** 48).toString(36);
  const probeUrl = `${origin}/trawl-probe-${token}-${token.length}x`;
  const res = await fetch(probeUrl);
  if (res === null) return 1;
  if (typeof res === 'number') return res;
  held.delete(key);
  const probed = { fingerprint: (await fingerprintOf(ctx, probeUrl, res)) ?? NONE, at: now() };
  await hosts.putValue(key, encode(probed));
  return remember(key, probed);
}

/** True when this worker is to probe: it took the host's probe lease, or holds it still. */
async function probeLease(ctx: FetchContext, key: string): Promise<boolean> {
  const now = ctx.deps.now();
  if ((held.get(key) ?? 0) > now + 1_000) return true;
  if (!(await ctx.deps.hosts.lease(key, now, LEASE_MS))) return false;
  held.set(key, now + LEASE_MS);
  return true;
}

/** The answer another worker's probe stores, within WAIT_MS; a failed read is only "not yet". */
function awaitOther(ctx: FetchContext, key: string): Promise<Probed | null> {
  return awaitLeaseHolder(
    async () => {
      // A failed read is only "not yet".
      const stored = decode(await ctx.deps.hosts.getValue(key).catch(() => null));
      return stored && fresh(stored, ctx.deps.now()) ? stored : null;
    },
    WAIT_MS,
    POLL_MS,
  );
}

async function fingerprintOf(ctx: FetchContext, probeUrl: string, res: FetchOutcome): Promise<string | null> {
  if (res.kind !== 'ok') return null;
  // A large answer was read to a file (fetch-memory.ts SPOOL_BYTES): read it back, then it goes.
  const body = res.spooled ? await takeSpooled(res.spooled.path) : res.body;
  if (res.status !== 200) return null;
  // Loaded at the first probe: a crawl without scope.traps.soft404 (the default) does not carry
  // the HTML parser and the charset tables in the fetch function's memory (fetch-memory.ts).
  const [{ decodeBody }, { extractHtml }] = await Promise.all([
    import('../crawl/extract/decode-body.ts'),
    import('../crawl/extract/extract-html.ts'),
  ]);
  const contentType = res.headers['content-type'] ?? null;
  const html = decodeBody(body, contentType).text;
  const ex = extractHtml({ url: probeUrl, html, headers: res.headers, options: ctx.config.extract });
  return soft404Fingerprint(ex.title, ex.content, probeUrl);
}
