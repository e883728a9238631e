/**
 * kcat (librdkafka 2.0.2, a client nobody here wrote) against the Kafka listener over a real
 * log-node: -L lists the topics, -P -K produces keyed JSON that the log holds byte for byte (in
 * the partition Kafka's murmur2 partitioner names), -C reads back exactly what the log holds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { CONSUMER_OFFSETS_TOPIC, SETTINGS_TOPIC } from '../../shared/topics.js';
import { readPartition, recordsOf } from '../harness/log-batches.js';
import { kcat, KCAT_INSTALLED, startKafkaNode, type KafkaNode } from '../harness/kafka.js';

const PARTITIONS = 4;
/** librdkafka gives up on a record after this, so a broken listener fails the test, not hangs it. */
const CLIENT_TIMEOUT = ['-X', 'message.timeout.ms=10000', '-X', 'socket.timeout.ms=10000'];

describe.skipIf(!KCAT_INSTALLED)('kcat against the Kafka listener', () => {
  let kafka: KafkaNode;
  beforeAll(async () => {
    kafka = await startKafkaNode({ partitions: PARTITIONS });
  });
  afterAll(async () => {
    await kafka?.stop();
  });

  it('kcat -L lists the collection topics and marks the internal ones', async () => {
    await kafka.node.client.ensureTopic('books');
    const metadata = JSON.parse(await kcat(['-L', '-J', '-b', kafka.broker, ...CLIENT_TIMEOUT]));
    expect(metadata.brokers).toEqual([expect.objectContaining({ id: 0, name: `${kafka.broker}` })]);
    const topics = new Map(
      (metadata.topics as { topic: string; partitions: unknown[] }[]).map((topic) => [
        topic.topic,
        topic.partitions.length,
      ]),
    );
    expect(topics.get('books')).toBe(PARTITIONS);
    expect(topics.get(SETTINGS_TOPIC)).toBe(1);
    expect(topics.get(CONSUMER_OFFSETS_TOPIC)).toBe(1);
  });

  it('kcat -P -K produces keyed JSON the log holds exactly, in the murmur2 partition', async () => {
    const documents = Array.from({ length: 40 }, (_, i) => ({
      key: `doc-${i}`,
      value: JSON.stringify({ n: i, title: `é ${i}`, big: '12345678901234567890' }),
    }));
    const input = documents.map(({ key, value }) => `${key}\t${value}\n`).join('');
    await kcat(
      [
        '-P',
        '-b',
        kafka.broker,
        '-t',
        'papers',
        '-K',
        '\t',
        '-X',
        'partitioner=murmur2_random',
      ].concat(CLIENT_TIMEOUT),
      { input },
    );
    const stored = new Map<string, { value: string; partition: number }>();
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const { batches } = await readPartition(kafka.node.client, 'papers', partition);
      for (const record of recordsOf(batches)) {
        stored.set(record.key, { value: Buffer.from(record.value!).toString('utf8'), partition });
      }
    }
    expect(stored.size).toBe(documents.length);
    for (const { key, value } of documents) {
      expect(stored.get(key)).toEqual({ value, partition: partitionFor(key, PARTITIONS) });
    }
  });

  it('kcat -C -e reads back what was appended through the log, keys and values exact', async () => {
    const records = Array.from({ length: 25 }, (_, i) => ({
      key: `k${i}`,
      value: Buffer.from(JSON.stringify({ i, text: `line ${i} ✓` })),
      timestampMs: Date.now(),
    }));
    await kafka.node.client.append('letters', 2, encodeBatch(records.slice(0, 10)));
    await kafka.node.client.append('letters', 2, encodeBatch(records.slice(10)));
    await kafka.node.client.append('letters', 0, encodeBatch([{ ...records[0], value: null }]));
    const out = await kcat([
      '-C',
      '-b',
      kafka.broker,
      '-t',
      'letters',
      '-e',
      '-Z',
      '-f',
      '%p %o %k %s\n',
      ...CLIENT_TIMEOUT,
    ]);
    const lines = out.trimEnd().split('\n').sort();
    const expected = [
      '0 0 k0 NULL',
      ...records.map(({ key, value }, offset) => `2 ${offset} ${key} ${value.toString()}`),
    ].sort();
    expect(lines).toEqual(expected);
  });
});
