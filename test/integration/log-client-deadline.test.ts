// Proves a log-node that hangs (alive, never answering) fails the log client's calls within its
// bound instead of holding them forever: offsets, topics, reads and a serve-node's fetch over the
// Kafka protocol all reject as log_unreachable once answerMsMax (plus the wait they asked for) has
// passed. The calls go through a TCP proxy the log-node advertises, which stops forwarding bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { INTERNAL_TOPICS } from '../../shared/topics.js';
import { freePort } from '../harness/free-port.js';
import { logAndServeNodes, startStallProxy } from '../harness/index.js';

const ANSWER_MS_MAX = 200;
const nodes = logAndServeNodes('log-deadline');
let proxy: Awaited<ReturnType<typeof startStallProxy>>;
let broker = '';

beforeAll(async () => {
  const kafkaPort = await freePort();
  proxy = await startStallProxy(() => `kafka://127.0.0.1:${kafkaPort}`);
  const proxyPort = Number(new URL(proxy.url).port);
  await nodes.startLog({
    partitions: 2,
    kafka: { host: '127.0.0.1', port: kafkaPort, advertisedPort: proxyPort },
  });
  broker = `127.0.0.1:${proxyPort}`;
});

afterAll(async () => {
  await proxy.close();
});

describe('log client against a hung log-node', () => {
  it('rejects each call as log_unreachable within its bound', async () => {
    const client = await KafkaLogClient.connect({
      bootstrap: [broker],
      answerMsMax: ANSWER_MS_MAX,
    });
    await client.ensureTopic('events');
    // The two partitions of events, and the one of each internal topic.
    expect((await client.offsets()).length).toBe(2 + INTERNAL_TOPICS.length);
    // Two fetch connections open before the stall: the read and the fetch below each wait on
    // one that is already open, so their bound is answerMsMax plus their wait.
    await Promise.all(
      [0, 1].map((partition) => client.read('events', partition, 0, { waitMs: 50 })),
    );
    proxy.stall(true);
    for (const [call, waitMs] of [
      [() => client.offsets(), 0],
      [() => client.topics(), 0],
      [() => client.read('events', 0, 0, { waitMs: 100 }), 100],
      [() => client.fetch([{ topic: 'events', partition: 0, offset: 0 }], { waitMs: 100 }), 100],
    ] as const) {
      const started = performance.now();
      await expect(call()).rejects.toMatchObject({ status: 503, code: 'log_unreachable' });
      const tookMs = performance.now() - started;
      expect(tookMs).toBeGreaterThanOrEqual(ANSWER_MS_MAX + waitMs - 5);
      expect(tookMs).toBeLessThan(ANSWER_MS_MAX + waitMs + 1000);
    }
    client.close();
  });
});
