// The link proxy the chaos runner puts between nodes: a cut resets every connection and refuses
// new ones, a stall holds bytes both ways (and new connections) and delivers them on heal; in
// front of a Kafka listener, a client bootstrapped on it reaches the listener only through it.
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { startLinkProxy, type LinkProxy } from '../harness/link-proxy.js';
import { tempDir } from '../harness/temp-dir.js';

/** An echo server: answers every byte with itself. */
async function echoServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * A client connection that collects what it receives and how it ended. A reset may come before
 * the connect event, so nothing waits for it: writes before it are queued.
 */
function dial(proxy: LinkProxy) {
  const socket: Socket = connect(proxy.port, '127.0.0.1');
  let received = '';
  const ended = new Promise<string>((resolve) => {
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    socket.on('close', () => resolve('close'));
  });
  socket.on('data', (chunk) => (received += chunk.toString()));
  return { socket, ended, received: () => received };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('link proxy', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function setup() {
    const echo = await echoServer();
    const proxy = await startLinkProxy({ target: () => echo.url });
    cleanups.push(() => proxy.close());
    cleanups.push(() => new Promise((resolve) => echo.server.close(() => resolve())));
    return proxy;
  }

  it('cut resets open connections and every new one until healed', async () => {
    const proxy = await setup();
    const open = dial(proxy);
    open.socket.write('a');
    await until(() => open.received() === 'a');
    proxy.cut();
    expect(await open.ended).toBe('ECONNRESET');
    const refused = dial(proxy);
    expect(await refused.ended).toBe('ECONNRESET');
    proxy.heal();
    const again = dial(proxy);
    again.socket.write('b');
    await until(() => again.received() === 'b');
    again.socket.destroy();
  });

  it('stall holds bytes both ways and new connections, and delivers all of it on heal', async () => {
    const proxy = await setup();
    const open = dial(proxy);
    open.socket.write('x');
    await until(() => open.received() === 'x');
    proxy.stall();
    open.socket.write('yz');
    const late = dial(proxy);
    late.socket.write('late');
    // The echo cannot answer through a stalled link: wait past several round trips to be sure.
    const roundTrip = dial(await setup());
    for (let i = 0; i < 20; i++) {
      roundTrip.socket.write('.');
      await until(() => roundTrip.received().length === i + 1);
    }
    roundTrip.socket.destroy();
    expect(open.received()).toBe('x');
    expect(late.received()).toBe('');
    proxy.heal();
    await until(() => open.received() === 'xyz' && late.received() === 'late');
    open.socket.destroy();
    late.socket.destroy();
  });

  it('in front of a Kafka listener, names itself: a cut link fails every call of its client', async () => {
    const silent = createLogger('test', 'silent');
    const dir = tempDir('link-kafka');
    const node = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
    });
    const proxy = await startLinkProxy({
      target: () => `kafka://127.0.0.1:${node.kafkaPort}`,
      kafka: true,
    });
    const client = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${proxy.port}`],
      logger: silent,
      answerMsMax: 500,
    });
    cleanups.push(async () => {
      client.close();
      await proxy.close();
      await node.stop();
      dir.cleanup();
    });
    const batch = encodeBatch([{ key: 'k', value: Buffer.from('{}'), timestampMs: 1 }]);
    expect((await client.append('t', 0, batch)).baseOffset).toBe(0);
    expect((await client.read('t', 0, 0)).endOffset).toBe(1);
    proxy.cut();
    // Had Metadata named the listener, these would go around the proxy and succeed.
    await expect(client.append('t', 0, batch)).rejects.toMatchObject({ status: 503 });
    await expect(client.read('t', 0, 0)).rejects.toMatchObject({ status: 503 });
    proxy.heal();
    expect((await client.read('t', 0, 0)).endOffset).toBe(1);
  });
});
