/**
 * Compressed batches from clients nobody here wrote, against `tailbase start` as a user runs it:
 * kafkajs `CompressionTypes.GZIP` documents are stored gzip, served to `kcat -C` and applied by
 * the serve-node (a strong GET answers each at the offset kcat reads, search finds them); kcat's
 * `-z zstd`, a codec this build does not read, is refused and nothing of it is written.
 * (kcat's librdkafka 2.0.2 sends gzip, snappy and lz4 plain to a broker whose Produce starts at
 * v3, as Kafka 4's does: it checks those codecs against Produce v0.)
 */
import { CompressionTypes, Kafka, logLevel, Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODECS } from '../../shared/batch-compression.js';
import { partitionFor } from '../../shared/partitioner.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { httpJson } from '../harness/http-json.js';
import {
  kafkaBrokerOf,
  kcat,
  KCAT_CLIENT_TIMEOUT,
  kcatConsumeAll,
  kcatConsumeByKey,
  KCAT_INSTALLED,
} from '../harness/kafka.js';
import { storedCodecs } from '../harness/log-batches.js';

const PARTITIONS = 4;

function produceArgs(broker: string, topic: string, codec: string): string[] {
  return [
    '-P',
    '-b',
    broker,
    '-t',
    topic,
    '-K:',
    '-z',
    codec,
    '-X',
    'partitioner=murmur2_random',
    // One batch for all: a batch that compresses.
    '-X',
    'linger.ms=50',
    ...KCAT_CLIENT_TIMEOUT,
  ];
}

/** Documents that compress (librdkafka sends a batch plain when compressing does not pay). */
function documentLines(prefix: string, count: number): { key: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `${prefix}-${i}`,
    value: JSON.stringify({ n: i, body: `zeppelin number ${i} `.repeat(8) }),
  }));
}

describe.skipIf(!KCAT_INSTALLED)('compressed batches against tailbase start', () => {
  let node: SpawnedEmbedded;
  let broker: string;
  beforeAll(async () => {
    node = await spawnEmbedded({ partitions: PARTITIONS });
    broker = kafkaBrokerOf(node.output());
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('kafkajs GZIP documents are stored gzip and read back by kcat -C, a strong GET and search', async () => {
    const documents = documentLines('squeezed', 200);
    const kafka = new Kafka({
      clientId: 'compressed-test',
      brokers: [broker],
      logLevel: logLevel.NOTHING,
      retry: { retries: 2 },
    });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    try {
      await producer.send({
        topic: 'squeezed',
        acks: -1,
        compression: CompressionTypes.GZIP,
        messages: documents,
      });
    } finally {
      await producer.disconnect();
    }
    expect(storedCodecs(node.dataDir, 'squeezed')).toEqual(new Set([CODECS.gzip]));
    const consumed = await kcatConsumeByKey(broker, 'squeezed');
    expect(consumed.size).toBe(documents.length);
    for (const { key, value } of documents) {
      const read = consumed.get(key)!;
      expect(read.value).toBe(value);
      expect(read.partition).toBe(partitionFor(key, PARTITIONS));
    }
    for (const { key, value } of documents.slice(0, 20)) {
      const got = await httpJson(
        `${node.url}/v1/collections/squeezed/docs/${key}?consistency=strong`,
      );
      expect(got.status).toBe(200);
      expect(got.body).toEqual({
        key,
        value: JSON.parse(value),
        offset: consumed.get(key)!.offset,
      });
    }
    const search = await httpJson(
      `${node.url}/v1/collections/squeezed/search?q=zeppelin&limit=1&consistency=strong`,
    );
    expect(search.status).toBe(200);
    expect(search.body.total).toBe(documents.length);
  });

  it.each(['zstd'])(
    'kcat -z %s is refused (UNSUPPORTED_COMPRESSION_TYPE) and nothing is written',
    async (codec) => {
      const topic = `refused-${codec}`;
      const input = documentLines(topic, 50)
        .map(({ key, value }) => `${key}:${value}\n`)
        .join('');
      // kcat exits 1 once a record is not delivered; its stderr says why, per record.
      const stderr = await kcat(produceArgs(broker, topic, codec), { input }).then(
        () => 'kcat exited 0',
        (error: Error) => error.message,
      );
      expect(stderr).toMatch(/Delivery failed for message: Broker: Unsupported compression type/);
      expect(await kcatConsumeAll(broker, topic)).toEqual([]);
    },
  );
});
