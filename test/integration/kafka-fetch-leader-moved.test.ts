/**
 * A fetch whose positions have records is not held back by one whose leader moved: on
 * librdkafka's mock cluster partition 1's leader moves while the client still has the old one,
 * and one fetch of both answers partition 0's records at once with partition 1's leadership
 * error (retrying it first cost a back-off and a metadata refresh a try); the next fetch reads
 * partition 1 from its new leader.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { mockClusterAvailable, startMockCluster } from '../harness/kafka-mock.js';
import { keysIn } from '../harness/keys.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const record = (key: string) => encodeBatch([{ key, value: Buffer.from('{}'), timestampMs: 1 }]);

describe.skipIf(!mockClusterAvailable())('a fetch while a leader moves', () => {
  it("answers the other positions' records without waiting for the new leader", async () => {
    const mock = await startMockCluster(3);
    cleanups.push(() => mock.stop());
    await mock.command('topic c 2 3');
    await mock.command('leader c 0 1');
    await mock.command('leader c 1 1');
    const log = await KafkaLogClient.connect({
      bootstrap: mock.bootstrap.split(','),
      allowUnverifiedTopics: true,
      logger: createLogger('kafka-log', 'silent'),
    });
    cleanups.push(() => log.close());
    const [inZero] = keysIn(0, 2, 1, 'zero-');
    const [inOne] = keysIn(1, 2, 1, 'one-');
    await log.append('c', 0, record(inZero));
    await log.append('c', 1, record(inOne));
    const both = [
      { topic: 'c', partition: 0, offset: 0 },
      { topic: 'c', partition: 1, offset: 0 },
    ];
    const before = await log.fetch(both);
    expect(before.every((outcome) => 'batches' in outcome && outcome.batches.length > 0)).toBe(
      true,
    );

    await mock.command('leader c 1 2');
    const [zero, one] = await log.fetch(both);
    expect('batches' in zero && zero.batches.length).toBeGreaterThan(0);
    expect('error' in one && one.error.code).toBe('partition_not_hosted');

    // Partition 0 read to its end: nothing new there, so the moved one is followed to its leader.
    const [, again] = await log.fetch([{ ...both[0], offset: 1 }, both[1]]);
    expect('batches' in again && again.batches.length).toBeGreaterThan(0);
  });
});
