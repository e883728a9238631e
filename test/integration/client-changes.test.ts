// Proves the typed client's change feed resumes by token after its connection is cut: a consumer
// reading through a TCP proxy has every connection cut twice while a writer keeps writing, and it
// still receives every write exactly once, in offset order per partition. And that a view's reset
// line reaches the consumer as its own kind (`isReset`), not as a document's change: a feed
// resumed with a token of a view's version replaced since yields the reset, then the new
// version's documents, `limit` counting only those.
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isReset, Tailbase, type ChangeEvent, type ChangeLine } from '../../client/sdk/index.js';
import { sleep, spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

const WRITES = 300;
const CUT_AFTER = [60, 180];
/** How long a redefined view may take to be swapped in. */
const SWAP_MS_MAX = 30_000;

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
        if (isReset(event)) throw new Error(`a collection's feed sent a reset: ${event.token}`);
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

  it("yields a view's reset as a kind of its own, then the new version's documents", async () => {
    const db = new Tailbase({ url: node.url });
    await db.collection('reset_orders').bulk([
      { key: 'o1', value: { country: 'FR', status: 'paid' } },
      { key: 'o2', value: { country: 'DE', status: 'open' } },
    ]);
    const view = db.view('reset_view');
    await view.define({ from: 'reset_orders', groupBy: ['country'], aggregates: { n: 'count()' } });
    let oldToken: string | undefined;
    for await (const line of view.changes({ from: 'start', limit: 1 })) oldToken = line.token;
    const first = (await view.info()).version;

    await view.define({ from: 'reset_orders', groupBy: ['status'], aggregates: { n: 'count()' } });
    const deadline = Date.now() + SWAP_MS_MAX;
    let info = await view.info();
    while ((info.version === first || info.rebuilding !== null) && Date.now() < deadline) {
      await sleep(50);
      info = await view.info();
    }
    expect(info.version).not.toBe(first);

    const lines: ChangeLine[] = [];
    for await (const line of view.changes({ token: oldToken, limit: 2 })) lines.push(line);
    expect(lines).toHaveLength(3);
    const [reset, ...changes] = lines;
    expect(isReset(reset)).toBe(true);
    expect(reset).toMatchObject({ collection: 'reset_view', reset: true, version: info.version });
    const keys = changes.map((line) => (isReset(line) ? 'reset' : line.key)).sort();
    expect(keys).toEqual(['["open"]', '["paid"]']);
  });
});
