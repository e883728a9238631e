// Proves one partition failing on the log-node (corruption before its tail) does not stop a
// serve-node's other partitions over the Kafka transport, though one fetcher reads them all: the
// failed one reports KAFKA_STORAGE_ERROR and backs off, the gateway's metrics mark it failed, the
// healthy one keeps applying new writes, and kcat consumes it.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway, type GatewayHandle } from '../../gateway/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { logAndServeNodes, partitionDirOf, sleep } from '../harness/index.js';
import { kcat, KCAT_INSTALLED, RawKafkaConnection } from '../harness/kafka.js';
import { ApiKey, ErrorCode } from '../../shared/kafka/index.js';
import { keysIn } from '../harness/keys.js';
import { createLogger } from '../../shared/logger.js';

const nodes = logAndServeNodes('partition-failure');
let gateway: GatewayHandle | undefined;

afterAll(async () => {
  await gateway?.stop();
});

/** Keys of each partition, as Kafka's partitioner places them (the listener refuses others). */
const P0 = keysIn(0, 2, 3, 'p0-');
const [P1A, P1B] = keysIn(1, 2, 2, 'p1-');

const doc = (key: string) =>
  encodeBatch([{ key, value: Buffer.from(`{"text":"${key}"}`), timestampMs: 1 }]);

describe('a failed partition on the log-node', () => {
  it('leaves the other partitions of the same fetcher applying', async () => {
    let log = await nodes.startLog({ partitions: 2 });
    for (const key of P0) await log.append('c', 0, doc(key));
    await log.append('c', 1, doc(P1A));
    await nodes.logNode!.stop();

    // A flipped bit in the first batch's CRC-covered bytes, with batches after it: not a torn tail.
    const segment = path.join(
      partitionDirOf(nodes.logDir.path, 'c', 0),
      `${'0'.padStart(20, '0')}.log`,
    );
    const bytes = fs.readFileSync(segment);
    bytes[40] ^= 0x04;
    fs.writeFileSync(segment, bytes);
    log = await nodes.startLog({ partitions: 2 });

    // Over the log-node's Kafka listener (`--log kafka://`), as a cluster's serve-nodes reach it.
    const serve = await nodes.startServe({ limits: { retryMsMax: 200 } });
    expect((await serve.get('c', P1A, { waitFor: { 1: 0 }, waitMs: 10_000 })).doc?.key).toBe(P1A);
    const later = await log.append('c', 1, doc(P1B));
    const got = await serve.get('c', P1B, { waitFor: { 1: later.lastOffset }, waitMs: 10_000 });
    expect(got.doc?.key).toBe(P1B);

    const ofC = async () => (await serve.status()).partitions.filter((p) => p.topic === 'c');
    let partitions = await ofC();
    for (let i = 0; i < 100 && partitions[0].error === undefined; i++) {
      await sleep(20);
      partitions = await ofC();
    }
    expect(partitions[0]).toMatchObject({ partition: 0, applied: 0 });
    expect(partitions[0].error).toMatch(/partition 0 of topic c stopped/);
    // Kafka's word for a partition on a failed log, not a leadership error to refresh metadata on.
    expect(partitions[0].error).toMatch(/^KAFKA_STORAGE_ERROR/);
    expect(partitions[1]).toMatchObject({ partition: 1, applied: 2, state: 'tailing' });
    expect(partitions[1].error).toBeUndefined();
    const status = await serve.status();
    expect(status.ready).toBe(false);

    // A gateway on the same log and serve-node shows the failed partition in its metrics.
    gateway = await startGateway(
      { port: 0, logUrls: [nodes.logUrl()], serveUrls: [nodes.serveNode!.url] },
      { logger: createLogger('gateway', 'silent') },
    );
    const failedOf = async (partition: number) => {
      const metrics = await (await fetch(`${gateway!.url}/metrics`)).text();
      const line = `tailbase_gateway_partition_failed{topic="c",partition="${partition}",node="0"}`;
      return metrics.split('\n').find((entry) => entry.startsWith(line));
    };
    let failed = await failedOf(0);
    for (let i = 0; i < 100 && failed === undefined; i++) {
      await sleep(50);
      failed = await failedOf(0);
    }
    expect(failed).toMatch(/ 1$/);
    expect(await failedOf(1)).toMatch(/ 0$/);

    // A strong read needs each partition's end offset: one touching the failed partition is
    // refused (an answer without it could miss an acknowledged write), one that does not is served.
    const strong = 'consistency=strong&wait_ms=5000';
    const scan = await fetch(`${gateway.url}/v1/collections/c/docs?${strong}`);
    expect(scan.status).toBe(503);
    expect(((await scan.json()) as { error: unknown }).error).toMatchObject({
      code: 'partition_unavailable',
      topic: 'c',
      partitions: [0],
    });
    const key = await fetch(`${gateway.url}/v1/collections/c/docs/${P1B}?${strong}`);
    expect(key.status).toBe(200);
    expect(((await key.json()) as { key: string }).key).toBe(P1B);
  });

  // On the log-node the first test left with partition 0 failed and P1A first in partition 1.
  it.skipIf(!KCAT_INSTALLED)('leaves kcat (librdkafka) consuming the whole topic', async () => {
    const out = await kcat([
      '-C',
      '-b',
      `127.0.0.1:${nodes.logNode!.kafkaPort}`,
      '-t',
      'c',
      '-o',
      'beginning',
      // Exits after the healthy partition's first record; were it held up, the timeout fails it.
      '-c',
      '1',
      '-f',
      '%p %k\n',
      '-X',
      'socket.timeout.ms=10000',
    ]);
    expect(out.trim()).toBe(`1 ${P1A}`);
  });

  // Kafka's protocol, asked directly of the same log-node (P1A and P1B in partition 1 by now):
  // the failed partition's error is its own.
  it('answers ListOffsets and Fetch per partition, the failed one KAFKA_STORAGE_ERROR', async () => {
    const connection = await RawKafkaConnection.open(nodes.logNode!.kafkaPort!);
    try {
      const listed = await connection.request(ApiKey.ListOffsets, 6, {
        replicaId: -1,
        isolationLevel: 0,
        topics: [
          {
            name: 'c',
            partitions: [0, 1].map((partitionIndex) => ({ partitionIndex, timestamp: -1 })),
          },
        ],
      });
      expect(listed.topics[0].partitions.map((p) => [p.errorCode, Number(p.offset)])).toEqual([
        [ErrorCode.KAFKA_STORAGE_ERROR, -1],
        [ErrorCode.NONE, 2],
      ]);
      const startedMs = performance.now();
      const fetched = await connection.request(
        ApiKey.Fetch,
        12,
        {
          // A long poll: the failed partition's error answers it at once, as Kafka's does.
          maxWaitMs: 20_000,
          minBytes: 1,
          maxBytes: 1_000_000,
          topics: [
            {
              topic: 'c',
              partitions: [0, 1].map((partition) => ({
                partition,
                fetchOffset: 2n,
                partitionMaxBytes: 1_000_000,
              })),
            },
          ],
        },
        // Past the long poll, so an answer that waited it out is seen as late, not as a timeout.
        30_000,
      );
      expect(performance.now() - startedMs).toBeLessThan(10_000);
      const [failed, healthy] = fetched.responses[0].partitions;
      expect(failed.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
      expect(healthy).toMatchObject({ errorCode: ErrorCode.NONE, highWatermark: 2n });
    } finally {
      connection.socket.destroy();
    }
  });
});
