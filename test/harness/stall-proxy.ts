import { createServer, connect, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a node that can be made to stall: while stalled it keeps every
 * connection open and reads nothing from either side, so the node looks alive but never answers
 * (a hung process, not a crashed one). What is sent meanwhile waits in the sockets' buffers, as
 * it would in a hung process's kernel, and flows once the stall ends: no byte is lost, so a
 * stream resumes whole rather than cut mid-frame.
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
      if (stalled) from.pause();
      from.on('data', (chunk) => to.write(chunk));
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
      for (const socket of sockets) {
        if (on) socket.pause();
        else socket.resume();
      }
    },
    async close(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
