/** A raw TCP server on loopback for one test: the handler owns each socket. */
import { once } from 'node:events';
import net from 'node:net';

/** A raw TCP server: the handler owns the socket. */
export async function withTcp(handler: (socket: net.Socket) => void, run: (port: number) => Promise<void>) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    handler(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await run((server.address() as net.AddressInfo).port);
  } finally {
    for (const s of sockets) s.destroy();
    server.close();
  }
}
