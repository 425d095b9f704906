/**
 * HTTP keep-alive: connections whose response was read to its end, kept idle for the next request
 * to the same origin by the same container (a warm Lambda container keeps them between
 * invocations). A kept connection saves the next request its DNS look-up, TCP and TLS handshakes
 * (two or three round trips: Lambda time, and load on the site). A connection is one stack of
 * sockets (TCP, a proxy's tunnel, TLS), destroyed outermost first (ip-guard.ts says why).
 */
import type net from 'node:net';
import { destroyLayers } from './ip-guard.ts';

/** A connection's sockets, innermost first; the last is the one requests are written to. */
export type ConnectionLayers = net.Socket[];

/** Idle connections kept in all, and to one origin (fetch.connectionsPerHost is at most 64). */
const MAX_IDLE = 64;
const MAX_IDLE_PER_KEY = 8;

interface Idle {
  key: string;
  layers: ConnectionLayers;
  until: number;
  forget: () => void;
}

/** Origin key → idle connections, the most recently used last. */
const idle = new Map<string, Idle[]>();
let idleCount = 0;

/**
 * Origins that closed a kept connection as a request went out, and until when their connections
 * are not kept. Once is a keep-alive timeout racing the request, and the request goes again on a
 * new connection for free (fetcher.ts); a site that does it to every request (a firewall that
 * drops what it reads, a server shorter-lived than fetch.keepAliveSeconds) would otherwise get
 * each request twice, and a polite host's free retry takes a new turn every time.
 */
const dropsKept = new Map<string, number>();
const DROPS_KEPT_MS = 10 * 60_000;
const MAX_DROPS_KEPT = 1024;

const top = (layers: ConnectionLayers) => layers[layers.length - 1];

/** Whether a connection can still carry a request: its outer socket open both ways. */
function isOpen(layers: ConnectionLayers): boolean {
  const socket = top(layers);
  return socket !== undefined && !socket.destroyed && socket.writable && !socket.readableEnded;
}

function remove(entry: Idle): boolean {
  const list = idle.get(entry.key);
  const i = list?.indexOf(entry) ?? -1;
  if (!list || i < 0) return false;
  list.splice(i, 1);
  if (list.length === 0) idle.delete(entry.key);
  idleCount--;
  entry.forget();
  return true;
}

/**
 * Keeps a connection for `keepMs` for the next request to `key` (its origin, proxy, resolution and
 * trust: whatever made the connection). It leaves the pool if the server closes it, sends anything
 * unasked, or an error occurs; it holds no event loop open.
 */
export function keepIdle(key: string, layers: ConnectionLayers, keepMs: number, now = Date.now()): void {
  const socket = top(layers);
  if (!socket || keepMs <= 0 || !isOpen(layers) || dropsKeptUntil(key, now) > now) {
    destroyLayers(layers);
    return;
  }
  const drop = () => evict(entry);
  const entry: Idle = {
    key,
    layers,
    until: now + keepMs,
    forget: () => {
      socket.off('data', drop);
      socket.off('end', drop);
      for (const s of layers) {
        s.off('close', drop);
        s.off('error', drop);
      }
    },
  };
  // A response nobody asked for, the server's FIN (its keep-alive timeout) or a reset: gone.
  socket.on('data', drop);
  socket.on('end', drop);
  for (const s of layers) {
    s.on('close', drop);
    s.on('error', drop);
    s.unref();
  }
  const list = idle.get(key) ?? [];
  idle.set(key, list);
  list.push(entry);
  idleCount++;
  if (list.length > MAX_IDLE_PER_KEY) evict(list[0] as Idle);
  if (idleCount > MAX_IDLE) {
    // The least recently kept of all.
    let oldest: Idle | undefined;
    for (const l of idle.values()) if (l[0] && (!oldest || l[0].until < oldest.until)) oldest = l[0];
    if (oldest) evict(oldest);
  }
}

function evict(entry: Idle): void {
  if (remove(entry)) destroyLayers(entry.layers);
}

/** An idle connection to `key` still open and within its keep time (the most recently used), or null. */
export function takeIdle(key: string, now = Date.now()): ConnectionLayers | null {
  const list = idle.get(key);
  while (list && list.length > 0) {
    const entry = list[list.length - 1] as Idle;
    remove(entry);
    if (entry.until < now || !isOpen(entry.layers)) {
      destroyLayers(entry.layers);
      continue;
    }
    for (const s of entry.layers) s.ref();
    return entry.layers;
  }
  return null;
}

/** Whether `key` has an idle connection open and within its keep time at `now` (it stays in the pool). */
export function hasIdle(key: string, now = Date.now()): boolean {
  return idle.get(key)?.some((e) => e.until >= now && isOpen(e.layers)) ?? false;
}

/**
 * The site closed the kept connection to `key` as a request went out: its connections are not
 * kept for the next DROPS_KEPT_MS (this container), so its next requests each open their own.
 */
export function keptConnectionDropped(key: string, now = Date.now()): void {
  dropsKept.delete(key);
  dropsKept.set(key, now + DROPS_KEPT_MS);
  // The oldest entry goes first (a Map iterates in insertion order).
  if (dropsKept.size > MAX_DROPS_KEPT) dropsKept.delete(dropsKept.keys().next().value as string);
}

function dropsKeptUntil(key: string, now: number): number {
  const until = dropsKept.get(key) ?? 0;
  if (until !== 0 && until <= now) dropsKept.delete(key);
  return until;
}

/** Closes every idle connection (tests; a process about to exit needs none of this: they are unref'd). */
export function closeIdle(): void {
  for (const list of [...idle.values()]) for (const entry of [...list]) evict(entry);
  dropsKept.clear();
}

/** How many connections are idle (tests, the bench). */
export function idleConnections(): number {
  return idleCount;
}
