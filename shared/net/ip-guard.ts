/**
 * SSRF guard: which resolved addresses a crawler must not connect to (unless the crawl config sets
 * `fetch.allowPrivateNetworks`). Allow-list logic: only global unicast passes; anything unparseable fails closed.
 */
import dns from 'node:dns/promises';
import { once } from 'node:events';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { normalizeHostname } from '../crawl/url/normalize-url.ts';
import { FetchError } from '../errors.ts';

/** IPv6 ranges that embed an IPv4 address the packet may end up at (RFC 4291 §2.5.5, RFC 6052, RFC 3056). */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = addr.range();
  const bytes = addr.toByteArray();
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (RFC 6145 translated), 64:ff9b::a.b.c.d (RFC 6052 NAT64)
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052') {
    return new ipaddr.IPv4(bytes.slice(12, 16));
  }
  // 2002:AABB:CCDD::/48 (6to4) routes to the IPv4 address AA.BB.CC.DD
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

function isGlobalIPv4(addr: ipaddr.IPv4): boolean {
  // unspecified 0/8, loopback 127/8, private, linkLocal 169.254/16 (cloud metadata), carrierGradeNat 100.64/10,
  // multicast, broadcast, reserved, as112, amt: everything but 'unicast' is refused.
  return addr.range() === 'unicast';
}

function isGlobalIPv6(addr: ipaddr.IPv6): boolean {
  const v4 = embeddedIPv4(addr);
  if (v4) return isGlobalIPv4(v4);
  // ::a.b.c.d (deprecated IPv4-compatible, RFC 4291 §2.5.5.1) is not in ipaddr.js's table: refuse ::/96.
  const parts = addr.parts;
  if (parts.slice(0, 6).every((p) => p === 0)) return false;
  // unspecified, loopback, linkLocal fe80::/10, uniqueLocal fc00::/7, multicast, teredo, reserved … are refused.
  return addr.range() === 'unicast';
}

/** True when `ip` is not a global unicast address (loopback, private, link-local, CGNAT, ULA, mapped, …). */
export function isPrivateAddress(ip: string): boolean {
  const text = unbracket(ip);
  if (!ipaddr.isValid(text)) return true;
  try {
    const addr = ipaddr.parse(text);
    return addr.kind() === 'ipv4' ? !isGlobalIPv4(addr as ipaddr.IPv4) : !isGlobalIPv6(addr as ipaddr.IPv6);
  } catch {
    return true;
  }
}

function unbracket(host: string): string {
  return host.trim().replace(/^\[(.*)\]$/, '$1');
}

/**
 * `fetch.allowPrivateNetworks`: false refuses every non-public address, true allows them all, a
 * list allows only the private addresses inside its CIDRs / equal to its IPs, or those a listed
 * host name resolves to (names compared case-insensitively, without a trailing dot, IDN as punycode).
 */
export type PrivateAllow = boolean | readonly string[];

/** Whether the guard lets `host`, resolved to the private `address`, through. */
export function privateAllowed(host: string, address: string, allow: PrivateAllow): boolean {
  if (typeof allow === 'boolean') return allow;
  const name = normalizeHostname(unbracket(host));
  return allow.some((entry) => {
    const text = unbracket(entry);
    if (text.includes('/')) return inCidr(address, text);
    if (net.isIP(text)) return sameAddress(text, address);
    return normalizeHostname(text) === name;
  });
}

function inCidr(address: string, cidr: string): boolean {
  try {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    const addr = ipaddr.process(unbracket(address)); // ::ffff:10.0.0.1 is compared as 10.0.0.1
    return addr.kind() === range.kind() && addr.match(range, bits);
  } catch {
    return false;
  }
}

function sameAddress(a: string, b: string): boolean {
  try {
    return ipaddr.process(a).toNormalizedString() === ipaddr.process(unbracket(b)).toNormalizedString();
  } catch {
    return false;
  }
}

/** A config entry of the list form: a CIDR, an IP or a host name; the reason when it is none. */
export function allowEntryProblem(entry: string): string | null {
  const text = unbracket(entry);
  if (text.includes('/')) return ipaddr.isValidCIDR(text) ? null : 'not a valid CIDR (e.g. "10.0.0.0/8")';
  if (net.isIP(text)) return null;
  // A Unicode (IDN) name is checked as the punycode host it stands for.
  return /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(normalizeHostname(text))
    ? null
    : 'neither a CIDR, an IP address nor a host name';
}

/** The `resolve` override for a host (keys compared case-insensitively, trailing dot ignored, IDN as punycode). */
export function overrideFor(host: string, overrides: Record<string, string>): string | undefined {
  const want = normalizeHostname(host);
  for (const [key, ip] of Object.entries(overrides)) {
    // A key written as people write host names ("bücher.test") names the punycode host URLs carry.
    if (normalizeHostname(key) === want) return ip;
  }
  return undefined;
}

async function lookupAddresses(host: string, overrides: Record<string, string>): Promise<string[]> {
  if (net.isIP(host)) return [host];
  const override = overrideFor(host, overrides);
  if (override !== undefined) {
    const ip = unbracket(override);
    if (!net.isIP(ip)) {
      throw new FetchError(
        `fetch.resolve maps ${host} to ${override}, not an IP address`,
        'permanent',
        'bad-resolve',
      );
    }
    return [ip];
  }
  const found = await dns.lookup(host, { all: true });
  return found.map((entry) => entry.address);
}

/**
 * Resolves a host (IP literal, `fetch.resolve` override, else DNS) to the addresses to connect to; with
 * `guard`, refuses the lot if any is private. The caller connects to exactly these addresses, so a second
 * DNS answer (rebinding) never reaches the socket.
 */
export async function resolveGuarded(host: string, overrides: Record<string, string>, allow: PrivateAllow) {
  const addresses = await lookupAddresses(unbracket(host), overrides);
  const refused = addresses.find((a) => isPrivateAddress(a) && !privateAllowed(host, a, allow));
  if (refused !== undefined) {
    const why = `is not a public address and fetch.allowPrivateNetworks ${allow === false ? 'is false' : 'does not list it'}`;
    throw new FetchError(`refused ${host}: ${refused} ${why}`, 'permanent', 'private-address');
  }
  return addresses;
}

/** Destroys a connection's sockets (innermost first in `sockets`) outermost first: see destroyOnAbort. */
export function destroyLayers(sockets: net.Socket[]): void {
  for (const s of [...sockets].reverse()) s.destroy();
}

/** Each fetch's sockets, innermost first (TCP, then a CONNECT tunnel, then TLS over them). */
const layers = new WeakMap<AbortSignal, net.Socket[]>();

/**
 * Destroys the socket when the fetch ends or times out; its errors surface through the HTTP layer.
 * A fetch's sockets go outermost first: a TCP socket destroyed under the TLS socket that wraps it
 * crashes Node (a segfault in SSL_read, Node 20 and 24) when TLS data still arrives, such as a
 * TLS 1.3 session ticket after a handshake whose request is not sent (a missed politeness slot).
 */
export function destroyOnAbort(socket: net.Socket, signal: AbortSignal): void {
  // Never an unhandled 'error' event (the request/response reports it); once per socket, which a
  // kept-alive connection brings to many fetches.
  if (!guarded.has(socket)) {
    guarded.add(socket);
    socket.on('error', () => {});
  }
  if (signal.aborted) {
    socket.destroy();
    return;
  }
  let stack = layers.get(signal);
  if (!stack) {
    const sockets: net.Socket[] = [];
    stack = sockets;
    layers.set(signal, sockets);
    signal.addEventListener('abort', () => destroyLayers(sockets), { once: true });
  }
  stack.push(socket);
}

const guarded = new WeakSet<net.Socket>();

/**
 * The sockets registered on `signal` that are still open, innermost first, taken off it: its
 * abort no longer destroys them (a connection kept alive for the next fetch).
 */
export function detachSockets(signal: AbortSignal): net.Socket[] {
  const stack = layers.get(signal) ?? [];
  const open = stack.filter((s) => !s.destroyed);
  stack.length = 0;
  return open;
}

export interface GuardedConnectOptions {
  resolve: Record<string, string>;
  /** fetch.allowPrivateNetworks: which private addresses may be connected to */
  allow: PrivateAllow;
  signal: AbortSignal;
}

/** TCP-connects to `host` trying its checked addresses in order: the address connected is the address checked. */
export async function connectGuarded(
  host: string,
  port: number,
  opts: GuardedConnectOptions,
): Promise<net.Socket> {
  const addresses = await resolveGuarded(host, opts.resolve, opts.allow);
  let lastError: unknown = new Error(`no address for ${host}`);
  for (const address of addresses) {
    const own = ownService(address, port);
    if (own)
      throw new FetchError(
        `refused ${host}:${port}: ${own}, never a crawl target`,
        'permanent',
        'private-address',
      );
    const socket = net.connect({ host: address, port });
    destroyOnAbort(socket, opts.signal);
    try {
      await once(socket, 'connect', { signal: opts.signal });
      return socket;
    } catch (err) {
      socket.destroy();
      if (opts.signal.aborted) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

/**
 * The crawl's own services on this machine — the AWS emulator or local cloud (AWS_ENDPOINT_URL),
 * the embedded search engine (TRAWL_SEARCH_ENDPOINT) — named when `address`:`port` is one of them.
 * With `fetch.allowPrivateNetworks: true` (a loopback test site, the demo), a hostile page's link to
 * the emulator's port read its dashboard and its secrets' values (helper-51). Only loopback
 * endpoints count: a remote one is any host's to reach as the config allows.
 */
function ownService(address: string, port: number): string | null {
  const services: [string, string | undefined][] = [
    ["the crawl's AWS endpoint", process.env.AWS_ENDPOINT_URL],
    ["the crawl's search engine", process.env.TRAWL_SEARCH_ENDPOINT],
  ];
  for (const [what, endpoint] of services) {
    const u = endpoint ? URL.parse(endpoint) : null;
    if (!u || portOf(u) !== port) continue;
    const host = unbracket(u.hostname);
    const local = host === 'localhost' || (net.isIP(host) !== 0 && isLoopback(host));
    if (local && isLoopback(address)) return `${what} (${u.host})`;
  }
  return null;
}

/** A URL's port, its scheme's default when it names none. */
export function portOf(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** 127.0.0.0/8, ::1, and IPv4-mapped loopback. */
function isLoopback(ip: string): boolean {
  const parsed = ipaddr.process(ip);
  return parsed.range() === 'loopback';
}
