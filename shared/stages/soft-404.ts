/**
 * Soft-404 detection (scope.traps.soft404): before a host's first page, one request for a random
 * path. A host that answers it with a 200 HTML page is one that answers 200 for anything: the
 * fingerprint of that answer's text (crawl/url/traps.ts) is kept in the hosts table and in the
 * container, travels with each page of the host, and the extract stage treats a page with the
 * same fingerprint as not found (`error`, code `soft-404`).
 */
import { soft404Fingerprint } from '../crawl/url/traps.ts';
import type { FetchOutcome } from '../net/fetcher.ts';
import { takeSpooled } from './body-spool.ts';
import type { FetchContext } from './fetch-context.ts';

/** The hosts table value for a host that answers unknown paths properly. */
const NONE = 'none';
const known = new Map<string, string>();
/** Probes under way: concurrent fetches of one host wait for the one probe. */
const probing = new Map<string, Promise<string | null | number>>();

type ProbeFetch = (probeUrl: string) => Promise<FetchOutcome | number | null>;

/** The host's soft-404 fingerprint, null when it has none, or seconds to wait (politeness) first. */
export function hostSoft404(
  ctx: FetchContext,
  url: string,
  fetch: ProbeFetch,
): Promise<string | null | number> {
  const origin = new URL(url).origin;
  const key = `soft404#${ctx.config.name}#${origin}`;
  const value = known.get(key);
  if (value !== undefined) return Promise.resolve(value === NONE ? null : value);
  let p = probing.get(key);
  if (!p) {
    p = probe(ctx, key, origin, fetch).finally(() => probing.delete(key));
    probing.set(key, p);
  }
  return p;
}

async function probe(ctx: FetchContext, key: string, origin: string, fetch: ProbeFetch) {
  let value = await ctx.deps.hosts.getValue(key);
  if (value === null) {
    // Random, so no cache or real page can answer it; the product token shows what it is in logs.
    const token = Math.floor(ctx.deps.random() * 2 ** 48).toString(36);
    const probeUrl = `${origin}/trawl-probe-${token}-${token.length}x`;
    const res = await fetch(probeUrl);
    if (res === null) return 1;
    if (typeof res === 'number') return res;
    value = (await fingerprintOf(ctx, probeUrl, res)) ?? NONE;
    await ctx.deps.hosts.putValue(key, value);
  }
  known.set(key, value);
  return value === NONE ? null : value;
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
