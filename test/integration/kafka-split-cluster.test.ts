/**
 * Three log-nodes that split six partitions are one Kafka cluster: bootstrapped on any one of
 * them, a Kafka client (kafkajs, which nobody here wrote, and tailbase's own KafkaLogClient)
 * produces to and consumes from every partition; Metadata names every broker and each
 * partition's leader, and a log-node asked for a partition it does not store answers
 * NOT_LEADER_OR_FOLLOWER.
 */
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { ApiKey, ErrorCode } from '../../shared/kafka/index.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { partitionFor } from '../../shared/partitioner.js';
import { freePort } from '../harness/free-port.js';
import { keysIn } from '../harness/keys.js';
import { RawKafkaConnection } from '../harness/kafka.js';
import { tempDir } from '../harness/temp-dir.js';

const PARTITIONS = 6;
const SPLIT = [
  [0, 3],
  [1, 4],
  [2, 5],
];
const CLUSTER_ID = '01JFBK3ZQ8Y5V6N7W2X4C9D0E1';
const TOPIC = 'split';
const WAIT_MS_MAX = 20_000;
/** A long poll's wait, far beyond how long an append takes to wake it. */
const POLL_WAIT_MS = 8_000;

let nodes: OpenLogNode[] = [];
let ports: number[] = [];
const dirs: { cleanup(): void }[] = [];

beforeAll(async () => {
  ports = [await freePort(), await freePort(), await freePort()];
  nodes = await Promise.all(
    SPLIT.map((hostedPartitions, i) => {
      const dir = tempDir(`split-${i}`);
      dirs.push(dir);
      return openLogNode({
        dataDir: dir.path,
        partitions: PARTITIONS,
        hostedPartitions,
        clusterId: CLUSTER_ID,
        logger: createLogger('log-node', 'silent'),
        kafka: {
          host: '127.0.0.1',
          port: ports[i],
          peers: ports.filter((_, j) => j !== i).map((port) => `127.0.0.1:${port}`),
        },
      });
    }),
  );
});

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.stop()));
  for (const dir of dirs) dir.cleanup();
});

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS_MAX;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('log-nodes that split the partitions, as one Kafka cluster', () => {
  it('Metadata names every broker and each partition’s leader; another node’s partition is NOT_LEADER_OR_FOLLOWER', async () => {
    // Every log-node knows every topic (KafkaLogClient's ensureTopic asks each of them).
    for (const node of nodes) await node.client.ensureTopic(TOPIC);
    const connection = await RawKafkaConnection.open(ports[2]);
    try {
      const metadata = await connection.request(ApiKey.Metadata, 9, {
        topics: [{ name: TOPIC }],
        allowAutoTopicCreation: false,
      });
      expect(metadata.brokers.map((b) => [b.nodeId, b.port]).sort()).toEqual(
        [
          [0, ports[0]],
          [1, ports[1]],
          [2, ports[2]],
        ].sort(),
      );
      expect(metadata.controllerId).toBe(0);
      const leaders = metadata.topics[0].partitions
        .sort((a, b) => a.partitionIndex - b.partitionIndex)
        .map((p) => p.leaderId);
      expect(leaders).toEqual([0, 1, 2, 0, 1, 2]);

      const key = keysIn(0, PARTITIONS)[0];
      const produced = await connection.request(ApiKey.Produce, 9, {
        acks: -1,
        timeoutMs: 5_000,
        topicData: [
          {
            name: TOPIC,
            partitionData: [
              {
                index: 0,
                records: encodeBatch([{ key, value: Buffer.from('{}'), timestampMs: 1 }]),
              },
            ],
          },
        ],
      });
      expect(produced.responses[0].partitionResponses[0].errorCode).toBe(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
      );
      const listed = await connection.request(ApiKey.ListOffsets, 6, {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 3, timestamp: -1 }] }],
      });
      expect(listed.topics[0].partitions[0].errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    } finally {
      connection.socket.destroy();
    }
  });

  it('kafkajs bootstrapped on one log-node produces (idempotent, acks=all) to and consumes from every partition', async () => {
    const kafka = new Kafka({
      clientId: 'split-test',
      brokers: [`127.0.0.1:${ports[1]}`],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 5_000,
      requestTimeout: 10_000,
      retry: { retries: 5 },
    });
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    const keys = Array.from({ length: 60 }, (_, i) => `k-${i}`);
    try {
      await producer.send({
        topic: TOPIC,
        acks: -1,
        messages: keys.map((key) => ({ key, value: JSON.stringify({ key }) })),
      });
    } finally {
      await producer.disconnect();
    }
    // Each log-node stores exactly the records of its own partitions.
    for (const [i, hosted] of SPLIT.entries()) {
      const stored = (await nodes[i].client.offsets()).filter((o) => o.topic === TOPIC);
      expect(stored.map((o) => o.partition).sort()).toEqual(hosted);
      for (const { partition, endOffset } of stored) {
        expect(endOffset).toBeGreaterThanOrEqual(
          keys.filter((key) => partitionFor(key, PARTITIONS) === partition).length,
        );
      }
    }

    const consumer = kafka.consumer({
      groupId: 'split-group',
      sessionTimeout: 10_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 300,
    });
    const consumed = new Map<number, Set<string>>();
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          const seen = consumed.get(partition) ?? new Set<string>();
          seen.add(message.key!.toString());
          consumed.set(partition, seen);
        },
      });
      await until('every key consumed', () =>
        keys.every((key) => consumed.get(partitionFor(key, PARTITIONS))?.has(key)),
      );
    } finally {
      await consumer.disconnect();
    }
    expect([...consumed.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('KafkaLogClient bootstrapped on one log-node appends to and reads every partition', async () => {
    const log = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${ports[2]}`],
      bootstrapWaitMs: 5_000,
    });
    try {
      expect((await log.cluster()).partitions).toBe(PARTITIONS);
      const producer = await log.initProducerId();
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const batch = encodeBatch(
          [
            {
              key: keysIn(partition, PARTITIONS)[0],
              value: Buffer.from('{"a":1}'),
              timestampMs: 1,
            },
          ],
          { ...producer, baseSequence: 0 },
        );
        const appended = await log.append('viaclient', partition, batch);
        expect(appended).toMatchObject({ baseOffset: 0, lastOffset: 0, duplicate: false });
        const read = await log.read('viaclient', partition, 0);
        expect(read.endOffset).toBe(1);
      }
      const offsets = (await log.offsets()).filter((o) => o.topic === 'viaclient');
      expect(offsets.map((o) => o.endOffset)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(log.fetchGroups([0, 1, 2, 3, 4, 5])).toEqual([
        [0, 3],
        [1, 4],
        [2, 5],
      ]);
    } finally {
      log.close();
    }
  });

  it('a long-polling fetch of partitions on several log-nodes answers once one of them has records', async () => {
    const log = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${ports[0]}`],
      bootstrapWaitMs: 5_000,
    });
    try {
      await log.ensureTopic('polled');
      const started = Date.now();
      // Partitions 0, 1 and 2 live on three log-nodes; only partition 1 gets a record.
      const polling = log.fetch(
        [0, 1, 2].map((partition) => ({ topic: 'polled', partition, offset: 0 })),
        { waitMs: POLL_WAIT_MS },
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const record = { key: keysIn(1, PARTITIONS)[0], value: Buffer.from('{}'), timestampMs: 1 };
      await log.append('polled', 1, encodeBatch([record]));
      const outcomes = await polling;
      expect(Date.now() - started).toBeLessThan(POLL_WAIT_MS / 2);
      expect(outcomes.map((o) => ('batches' in o ? o.batches.length > 0 : o.error.code))).toEqual([
        false,
        true,
        false,
      ]);
      expect(outcomes.map((o) => 'endOffset' in o && o.endOffset)).toEqual([0, 1, 0]);
    } finally {
      log.close();
    }
  });
});
