/**
 * kafkajs 2.2.4 (a client nobody here wrote) against the Kafka listener over a real log-node: an
 * idempotent producer with acks=-1 writes each record once, in Kafka's default (murmur2)
 * partition, and the admin client's topic creation and deletion, configs and offset lookups
 * answer what the log holds. Consuming without a group is not in kafkajs; group consumers are tested beside the
 * group coordinator (kafka-groups*.test.ts).
 */
import { CompressionTypes, Kafka, logLevel, Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchCodec, encodeBatch } from '../../shared/batch-codec.js';
import { CODECS, inflateCount } from '../../shared/batch-compression.js';
import { partitionFor } from '../../shared/partitioner.js';
import { readPartition, recordsOf } from '../harness/log-batches.js';
import { startKafkaNode, type KafkaNode } from '../harness/kafka.js';

const PARTITIONS = 3;

describe('kafkajs against the Kafka listener', () => {
  let kafka: KafkaNode;
  let client: Kafka;
  beforeAll(async () => {
    kafka = await startKafkaNode({ partitions: PARTITIONS });
    client = new Kafka({
      clientId: 'kafkajs-test',
      brokers: [kafka.broker],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 5_000,
      requestTimeout: 10_000,
      retry: { retries: 2 },
    });
  });
  afterAll(async () => {
    await kafka?.stop();
  });

  it('an idempotent producer (acks=-1) writes each record once, in the murmur2 partition', async () => {
    const producer = client.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    try {
      const messages = Array.from({ length: 30 }, (_, i) => ({
        key: `key-${i}`,
        value: JSON.stringify({ i, text: `doc ${i}` }),
      }));
      await producer.send({ topic: 'orders', acks: -1, messages: messages.slice(0, 10) });
      await producer.send({ topic: 'orders', acks: -1, messages: messages.slice(10) });
      const stored = new Map<string, { value: string; partition: number }[]>();
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const { batches } = await readPartition(kafka.node.client, 'orders', partition);
        expect(batches.every(({ header }) => header.producerId >= 0)).toBe(true);
        for (const record of recordsOf(batches)) {
          const seen = stored.get(record.key) ?? [];
          seen.push({ value: Buffer.from(record.value!).toString('utf8'), partition });
          stored.set(record.key, seen);
        }
      }
      expect(stored.size).toBe(messages.length);
      for (const { key, value } of messages) {
        expect(stored.get(key)).toEqual([{ value, partition: partitionFor(key, PARTITIONS) }]);
      }
    } finally {
      await producer.disconnect();
    }
  });

  it('a value that is not a JSON document is refused and nothing of its batch is written', async () => {
    const producer = client.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 0 },
    });
    await producer.connect();
    try {
      await expect(
        producer.send({ topic: 'strict', acks: -1, messages: [{ key: 'k', value: 'not json' }] }),
      ).rejects.toThrow();
      const offsets = await kafka.node.client.offsets();
      expect(offsets.filter((o) => o.topic === 'strict').every((o) => o.endOffset === 0)).toBe(
        true,
      );
    } finally {
      await producer.disconnect();
    }
  });

  it('a GZIP batch is stored as sent (gzip) and reads back as the records sent', async () => {
    const producer = client.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 0 },
    });
    await producer.connect();
    try {
      const messages = Array.from({ length: 40 }, (_, i) => ({
        key: `squeezed-${i}`,
        value: JSON.stringify({ i, text: `the same words again ${i} `.repeat(5) }),
      }));
      await producer.send({
        topic: 'squeezed',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages,
      });
      const stored = new Map<string, string>();
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const { batches } = await readPartition(kafka.node.client, 'squeezed', partition);
        expect(batches.every(({ bytes }) => batchCodec(bytes) === CODECS.gzip)).toBe(true);
        for (const record of recordsOf(batches)) {
          expect(partitionFor(record.key, PARTITIONS)).toBe(partition);
          stored.set(record.key, Buffer.from(record.value!).toString('utf8'));
        }
      }
      expect(stored).toEqual(new Map(messages.map(({ key, value }) => [key, value])));
    } finally {
      await producer.disconnect();
    }
  });

  it('a GZIP batch with a value that is not a document is refused, naming the record, and nothing is written', async () => {
    const producer = client.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 0 },
    });
    await producer.connect();
    try {
      const sent = producer.send({
        topic: 'squeezed-strict',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: [
          { key: 'k', value: '{"n":1}' },
          { key: 'k', value: 'not json' },
        ],
      });
      await expect(sent).rejects.toMatchObject({ type: 'INVALID_RECORD' });
      const offsets = await kafka.node.client.offsets();
      expect(
        offsets.filter((o) => o.topic === 'squeezed-strict').every((o) => o.endOffset === 0),
      ).toBe(true);
    } finally {
      await producer.disconnect();
    }
  });

  it('the admin client creates topics, describes configs and lists offsets (latest, earliest, by time)', async () => {
    const admin = client.admin();
    await admin.connect();
    try {
      expect(
        await admin.createTopics({
          topics: [
            { topic: 'ledger', configEntries: [{ name: 'retention.ms', value: '3600000' }] },
          ],
        }),
      ).toBe(true);
      expect(await admin.createTopics({ topics: [{ topic: 'ledger' }] })).toBe(false);
      expect(await admin.listTopics()).toEqual(expect.arrayContaining(['ledger']));
      const configs = await admin.describeConfigs({
        resources: [{ type: 2, name: 'ledger' }],
        includeSynonyms: false,
      });
      const retention = configs.resources[0].configEntries.find(
        (c) => c.configName === 'retention.ms',
      );
      expect(retention).toMatchObject({ configValue: '3600000', isDefault: false });

      const { client: log } = kafka.node;
      await log.append(
        'ledger',
        1,
        encodeBatch([{ key: 'a', value: Buffer.from('{}'), timestampMs: 1_000 }]),
      );
      await log.append(
        'ledger',
        1,
        encodeBatch([{ key: 'b', value: Buffer.from('{}'), timestampMs: 5_000 }]),
      );
      const latest = await admin.fetchTopicOffsets('ledger');
      expect(latest.find((p) => p.partition === 1)).toMatchObject({
        high: '2',
        low: '0',
        offset: '2',
      });
      const byTime = await admin.fetchTopicOffsetsByTimestamp('ledger', 2_000);
      expect(byTime.find((p) => p.partition === 1)?.offset).toBe('1');
    } finally {
      await admin.disconnect();
    }
  });

  it('the admin client deletes a topic: its records go, and the name starts empty', async () => {
    const admin = client.admin();
    await admin.connect();
    try {
      const { client: log } = kafka.node;
      await log.append(
        'scrap',
        0,
        encodeBatch([{ key: 'a', value: Buffer.from('{}'), timestampMs: 1_000 }]),
      );
      await admin.deleteTopics({ topics: ['scrap'] });
      expect(await admin.listTopics()).not.toContain('scrap');
      const missing = await admin.deleteTopics({ topics: ['scrap'] }).catch((e: unknown) => e);
      expect(missing).toMatchObject({ cause: { type: 'UNKNOWN_TOPIC_OR_PARTITION' } });
      const again = await log.append(
        'scrap',
        0,
        encodeBatch([{ key: 'b', value: Buffer.from('{}'), timestampMs: 2_000 }]),
      );
      expect(again.baseOffset).toBe(0);
      expect((await log.topics()).find((t) => t.name === 'scrap')?.incarnation).toBe(1);
    } finally {
      await admin.disconnect();
    }
  });
});

/** A kafkajs producer that never retries: a refusal is the answer the test reads. */
async function connectedProducer(kafka: KafkaNode, clientId: string) {
  const client = new Kafka({
    clientId,
    brokers: [kafka.broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const producer = client.producer({ retry: { retries: 0 } });
  await producer.connect();
  return producer;
}

describe('kafkajs GZIP past the listener batchInflatedBytesMax', () => {
  it('a batch whose records inflate past the bound is refused (MESSAGE_TOO_LARGE) and nothing is written', async () => {
    const kafka = await startKafkaNode({ partitions: 1, batchInflatedBytesMax: 256 * 1024 });
    const producer = await connectedProducer(kafka, 'kafkajs-bomb');
    try {
      // 512 KiB of one JSON document (within recordBytesMax) gzip to a few KB, past the bound inflated.
      const value = JSON.stringify({ text: 'z'.repeat(512 * 1024) });
      const sent = producer.send({
        topic: 'bombs',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: [{ key: 'k', value }],
      });
      await expect(sent).rejects.toMatchObject({ type: 'MESSAGE_TOO_LARGE' });
      const offsets = await kafka.node.client.offsets();
      expect(offsets.filter((o) => o.topic === 'bombs').every((o) => o.endOffset === 0)).toBe(true);
      await producer.send({
        topic: 'bombs',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: [{ key: 'k', value: JSON.stringify({ text: 'small' }) }],
      });
      const { batches } = await readPartition(kafka.node.client, 'bombs', 0);
      expect(recordsOf(batches).map((r) => r.key)).toEqual(['k']);
    } finally {
      await producer.disconnect();
      await kafka.stop();
    }
  });
});

describe('kafkajs GZIP past recordCount x recordBytesMax', () => {
  it('a batch whose one record inflates past recordBytesMax is refused (MESSAGE_TOO_LARGE) after one bounded inflate', async () => {
    const kafka = await startKafkaNode({ partitions: 1 });
    const producer = await connectedProducer(kafka, 'kafkajs-record-bomb');
    try {
      // 2 MiB of one document gzip to a few KB: past the 1 MiB recordBytesMax, within 64 MiB.
      const value = JSON.stringify({ text: 'z'.repeat(2 * 1024 * 1024) });
      const before = inflateCount();
      const sent = producer.send({
        topic: 'record-bombs',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: [{ key: 'k', value }],
      });
      await expect(sent).rejects.toMatchObject({ type: 'MESSAGE_TOO_LARGE' });
      // Produce refuses it at its own inflate, capped by the header's count: the append never runs.
      expect(inflateCount() - before, 'inflates').toBe(1);
      const offsets = await kafka.node.client.offsets();
      expect(
        offsets.filter((o) => o.topic === 'record-bombs').every((o) => o.endOffset === 0),
      ).toBe(true);
    } finally {
      await producer.disconnect();
      await kafka.stop();
    }
  });
});
