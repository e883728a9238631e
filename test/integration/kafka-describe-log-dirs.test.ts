/**
 * DescribeLogDirs on a log-node process's Kafka listener, read by @platformatic/kafka 1.35's
 * admin client (a client nobody here wrote, the one of those installed that speaks it): the
 * answer parses, names the node's data dir, and each partition's size is its segment files'
 * bytes on disk; tailbase's own Kafka client (shared/kafka-log) reads the same sizes, and they
 * grow with a write.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Admin, ProduceAcks, Producer, stringSerializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { partitionFor } from '../../shared/partitioner.js';
import { kafkaBrokerOf } from '../harness/kafka.js';
import { spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { silent } from './gateway-harness.js';

const PARTITIONS = 3;
const TOPIC = 'sized';
const RECORDS = 300;
const CLIENT_WAIT_MS = 15_000;

/** Each partition's `.log` segment files' bytes under DATA/topics/<topic>/<p>/. */
function segmentBytesOnDisk(dataDir: string, topic: string): number[] {
  return Array.from({ length: PARTITIONS }, (_, p) => {
    const dir = path.join(dataDir, 'topics', topic, String(p));
    if (!fs.existsSync(dir)) return 0;
    return fs
      .readdirSync(dir)
      .filter((name) => name.endsWith('.log'))
      .reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
  });
}

describe('DescribeLogDirs on the Kafka listener', () => {
  const dir = tempDir('describe-log-dirs');
  let logNode: SpawnedNode;
  let broker: string;
  let admin: Admin;

  beforeAll(async () => {
    logNode = await spawnNode('log-node', [
      '--data',
      dir.path,
      '--port',
      '0',
      '--partitions',
      String(PARTITIONS),
    ]);
    broker = kafkaBrokerOf(logNode.output());
    admin = new Admin({ clientId: 'log-dirs-probe', bootstrapBrokers: [broker], retries: 0 });
  });

  afterAll(async () => {
    await admin?.close();
    await logNode?.stop();
    dir.cleanup();
  });

  async function describeSizes(): Promise<{ logDir: string; sizes: number[] }> {
    const brokers = await admin.describeLogDirs({
      topics: [{ name: TOPIC, partitions: [0, 1, 2] }],
    });
    expect(brokers).toHaveLength(1);
    const [result] = brokers[0].results;
    const topic = result.topics.find((t) => t.name === TOPIC);
    const sizes = Array.from({ length: PARTITIONS }, (_, p) =>
      Number(topic?.partitions.find((entry) => entry.partitionIndex === p)?.partitionSize ?? -1),
    );
    expect(result.totalBytes).toBeGreaterThan(0n);
    expect(result.usableBytes).toBeGreaterThan(0n);
    return { logDir: result.logDir, sizes };
  }

  it("answers each partition's segment bytes, which @platformatic/kafka parses and tailbase's client reads", async () => {
    const producer = new Producer({
      clientId: 'log-dirs-producer',
      bootstrapBrokers: [broker],
      serializers: stringSerializers,
      idempotent: true,
      acks: ProduceAcks.ALL,
      autocreateTopics: true,
      retries: 10,
      retryDelay: 200,
      timeout: CLIENT_WAIT_MS,
      partitioner: (_message, key) => partitionFor(key!.toString('utf8'), PARTITIONS),
    });
    const write = (from: number) =>
      producer.send({
        messages: Array.from({ length: RECORDS }, (_, i) => ({
          topic: TOPIC,
          key: `k${from + i}`,
          value: JSON.stringify({ text: 'v'.repeat(200) }),
        })),
      });
    try {
      await write(0);
      const before = await describeSizes();
      expect(before.logDir).toBe(path.resolve(dir.path));
      expect(before.sizes).toEqual(segmentBytesOnDisk(dir.path, TOPIC));
      expect(before.sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(RECORDS * 200);

      const client = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
      try {
        const ours = (await client.diskBytes()).filter((entry) => entry.topic === TOPIC);
        expect(ours.map((entry) => entry.bytes)).toEqual(before.sizes);
      } finally {
        client.close();
      }

      await write(RECORDS);
      const after = await describeSizes();
      expect(after.sizes).toEqual(segmentBytesOnDisk(dir.path, TOPIC));
      for (let p = 0; p < PARTITIONS; p++) expect(after.sizes[p]).toBeGreaterThan(before.sizes[p]);
    } finally {
      await producer.close();
    }
  });
});
