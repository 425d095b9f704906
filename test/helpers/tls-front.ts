// Real TLS for loopback sites, with a real network's handshake time: the fixture certificate
// (test/fixtures/tls, *.tls.test), trusted in this process only, and a TCP front that holds each
// new connection's first bytes for a while before passing them to the TLS server behind it, so the
// handshake takes that long (loopback connects at once; DNS, TCP and TLS take a few round trips on
// the internet). Used by the TLS tests and the bench's https profile. No test-framework imports.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

const FIXTURE = new URL('../fixtures/tls/', import.meta.url);

/** The fixture's certificate and key (a loopback test site's, not a secret). */
export const TLS_FIXTURE = {
  cert: readFileSync(new URL('cert.pem', FIXTURE), 'utf8'),
  key: readFileSync(new URL('key.pem', FIXTURE), 'utf8'),
};

/**
 * Trusts the fixture's certificate besides the system's, in this process only (Node ≥ 22.15 / 24.5);
 * returns what undoes it, or null where Node cannot set the default CAs.
 */
export function trustTlsFixture(): (() => void) | null {
  if (typeof tls.setDefaultCACertificates !== 'function') return null;
  const defaults = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...defaults, TLS_FIXTURE.cert]);
  return () => tls.setDefaultCACertificates(defaults);
}

export interface HandshakeFront {
  port: number;
  /** connections accepted so far */
  readonly connections: number;
  close(): void;
}

/** A TCP front on loopback for the TLS server on `innerPort`, each connection's bytes held `delayMs` first. */
export async function startHandshakeFront(innerPort: number, delayMs: number): Promise<HandshakeFront> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const front = net.createServer((client) => {
    connections++;
    client.pause();
    sockets.add(client);
    client.on('error', () => client.destroy()).on('close', () => sockets.delete(client));
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = net.connect(innerPort, '127.0.0.1', () => {
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
    }, delayMs);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  return {
    port: (front.address() as net.AddressInfo).port,
    get connections() {
      return connections;
    },
    close() {
      for (const s of sockets) s.destroy();
      front.close();
    },
  };
}
