// A gateway that fails to start after it connected to a Kafka log (its port is taken) closes the
// connections it opened to the brokers: none is left open on the listener.
import net, { type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../gateway/index.js';
import { startKafkaNode, type KafkaNode } from '../harness/kafka.js';
import { sleep } from '../harness/spawn-node.js';
import { silent } from './gateway-harness.js';

/** How long the listener may take to see the gateway's connections closed. */
const CLOSE_WAIT_MS_MAX = 3_000;

let kafka: KafkaNode | null = null;
let taken: net.Server | null = null;
afterAll(async () => {
  taken?.close();
  await kafka?.stop();
});

describe('a gateway that fails to start', () => {
  it('closes its Kafka connections', async () => {
    kafka = await startKafkaNode({ partitions: 2 });
    taken = net.createServer();
    await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    await expect(
      startGateway(
        {
          port,
          logUrls: [`kafka://${kafka.broker}`],
          serveUrls: ['http://127.0.0.1:1'],
        },
        { logger: silent },
      ),
    ).rejects.toThrow(/EADDRINUSE|in use/);
    const deadline = Date.now() + CLOSE_WAIT_MS_MAX;
    while (kafka.listener.connections() > 0 && Date.now() < deadline) await sleep(50);
    expect(kafka.listener.connections()).toBe(0);
  });
});
