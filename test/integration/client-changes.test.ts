// Proves the typed client's change feed resumes by token after its connection is cut: a consumer
// reading through a TCP proxy has every connection cut twice while a writer keeps writing, and it
// still receives every write exactly once, in offset order per partition.
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase, type ChangeEvent } from '../../client/sdk/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

const WRITES = 300;
const CUT_AFTER = [60, 180];

/** A TCP proxy whose open connections can be cut (both sockets destroyed) at any moment. */
async function startCuttingProxy(target: string) {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => open.forEach((socket) => socket.destroy()),
    close: async () => {
      open.forEach((socket) => socket.destroy());
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let node: SpawnedEmbedded;
beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 4 });
});
afterAll(() => node.stop());

describe('typed client change feed', () => {
  it('resumes after a cut connection: every write once, in order per partition', async () => {
    const proxy = await startCuttingProxy(node.url);
    try {
      const writer = new Tailbase({ url: node.url }).collection('feed');
      const consumer = new Tailbase({ url: proxy.url });
      const reconnects: unknown[] = [];
      const writing = (async () => {
        for (let i = 0; i < WRITES; i++) await writer.put(`k${i}`, { i });
      })();
      const received: ChangeEvent[] = [];
      const events = consumer.collection('feed').changes({
        from: 'start',
        backoffMsFirst: 10,
        onReconnect: (_attempt, error) => reconnects.push(error),
      });
      for await (const event of events) {
        received.push(event);
        if (CUT_AFTER.includes(received.length)) proxy.cut();
        if (received.length === WRITES) break;
      }
      await writing;
      expect(reconnects.length).toBeGreaterThanOrEqual(CUT_AFTER.length);
      expect(new Set(received.map((event) => event.key)).size).toBe(WRITES);
      const last = new Map<number, number>();
      for (const { partition, offset } of received) {
        expect(offset).toBeGreaterThan(last.get(partition) ?? -1);
        last.set(partition, offset);
      }
    } finally {
      await proxy.close();
    }
  });
});
