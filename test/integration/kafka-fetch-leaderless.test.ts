/**
 * Proves a partition without a leader fails alone in a KafkaLogClient fetch: a log-node that
 * stores partition 0 of 2, its peer with partition 1 never up (Metadata gives partition 1 no
 * leader), answers partition 0's records in the same fetch, and partition 1 its own error.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { freePort } from '../harness/free-port.js';
import { keysIn } from '../harness/keys.js';
import { tempDir } from '../harness/temp-dir.js';

const dir = tempDir('leaderless');
let node: OpenLogNode | undefined;
let log: KafkaLogClient | undefined;

afterAll(async () => {
  log?.close();
  await node?.stop();
  dir.cleanup();
});

describe('a fetch with a leaderless partition', () => {
  it('answers the led partitions and gives the leaderless one its own error', async () => {
    const [port, peerPort] = [await freePort(), await freePort()];
    node = await openLogNode({
      dataDir: dir.path,
      partitions: 2,
      hostedPartitions: [0],
      clusterId: '01JFBK3ZQ8Y5V6N7W2X4C9D0E2',
      logger: createLogger('log-node', 'silent'),
      kafka: { host: '127.0.0.1', port, peers: [`127.0.0.1:${peerPort}`] },
    });
    log = await KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${port}`] });
    await log.ensureTopic('c');
    const [key] = keysIn(0, 2, 1, 'p0-');
    await log.append('c', 0, encodeBatch([{ key, value: Buffer.from('{}'), timestampMs: 1 }]));

    const [led, leaderless] = await log.fetch([
      { topic: 'c', partition: 0, offset: 0 },
      { topic: 'c', partition: 1, offset: 0 },
    ]);
    expect(led).toMatchObject({ topic: 'c', partition: 0, endOffset: 1 });
    expect('batches' in led && led.batches.length).toBeGreaterThan(0);
    expect(leaderless).toMatchObject({ topic: 'c', partition: 1 });
    expect('error' in leaderless && leaderless.error.code).toBe('partition_not_hosted');
  });
});
