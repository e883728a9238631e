import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a node that can be made to stall: while stalled it keeps every
 * connection open and drops what either side sends, so the node looks alive but never answers
 * (a hung process, not a crashed one).
 */
export async function startStallProxy(target: () => string) {
  let stalled = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const { hostname, port } = new URL(target());
    const upstream = connect(Number(port), hostname);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => {
        if (!stalled) to.write(chunk);
      });
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
      from.on('error', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stall(on: boolean): void {
      stalled = on;
    },
    async close(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
