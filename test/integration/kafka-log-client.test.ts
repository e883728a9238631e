/**
 * The log contract over the Kafka protocol (shared/kafka-log) against a real log-node's Kafka
 * listener: every LogClient call answers what the log-node's own client answers, batches travel
 * byte for byte both ways, a retried batch is a duplicate with its original offsets, and a
 * broker that refuses connections is told apart from one that went silent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import { connectionRefused } from '../../shared/internal-http.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { startKafkaNode, type KafkaNode } from '../harness/kafka.js';
import { keysIn } from '../harness/keys.js';

const PARTITIONS = 3;

/** `count` documents whose keys (prefix + a number) lie in the partition. */
function documents(prefix: string, partition: number, count: number) {
  return keysIn(partition, PARTITIONS, count, prefix).map((key) => ({
    key,
    value: Buffer.from(JSON.stringify({ key })),
    timestampMs: 1,
  }));
}

describe('KafkaLogClient against a log-node', () => {
  let kafka: KafkaNode;
  let log: KafkaLogClient;
  beforeAll(async () => {
    kafka = await startKafkaNode({ partitions: PARTITIONS });
    log = await KafkaLogClient.connect({ bootstrap: [kafka.broker], bootstrapWaitMs: 5_000 });
  });
  afterAll(async () => {
    log?.close();
    await kafka?.stop();
  });

  it('names the cluster and its partition count before any collection exists', async () => {
    const ours = await log.cluster();
    const node = await kafka.node.client.cluster();
    expect(ours.clusterId).toBe(node.clusterId);
    expect(ours.partitions).toBe(PARTITIONS);
    expect(ours.hostedPartitions).toEqual([0, 1, 2]);
    // One broker stores them all: one fetch reads them all, though no collection says so yet.
    expect(log.fetchGroups([0, 1, 2])).toEqual([[0, 1, 2]]);
  });

  it('creates a topic with configs and lists it as the log-node does', async () => {
    const created = await log.ensureTopic('events', {
      cleanupPolicy: 'delete',
      retentionMs: 60_000,
    });
    expect(created).toMatchObject({ name: 'events', partitions: PARTITIONS });
    expect(created.configs).toMatchObject({ cleanupPolicy: 'delete', retentionMs: 60_000 });
    const again = await log.ensureTopic('events');
    expect(again.configs).toEqual(created.configs);
    // An existing topic's configs change (IncrementalAlterConfigs); a bad value changes nothing.
    const changed = await log.ensureTopic('events', { retentionMs: 120_000 });
    expect(changed.configs).toEqual({ ...created.configs, retentionMs: 120_000 });
    const refused = await log
      .ensureTopic('events', { retentionMs: 'soon' as unknown as number })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, code: 'invalid_topic_config' });
    expect((await kafka.node.client.topics()).find((t) => t.name === 'events')?.configs).toEqual(
      changed.configs,
    );
    const ours = await log.topics();
    const node = await kafka.node.client.topics();
    expect(ours).toEqual(node.sort((a, b) => (a.name < b.name ? -1 : 1)));
  });

  it('appends the batch as built, answers duplicates with the original offsets, fetches it back byte for byte', async () => {
    const producer = await log.initProducerId();
    const records = documents('a', 1, 5);
    const batch = encodeBatch(records, { ...producer, baseSequence: 0 });
    const first = await log.append('docs', 1, batch);
    expect(first).toEqual({ baseOffset: 0, lastOffset: records.length - 1, duplicate: false });
    const retried = await log.append(
      'docs',
      1,
      encodeBatch(records, { ...producer, baseSequence: 0 }),
    );
    expect(retried).toEqual({ ...first, duplicate: true });

    const read = await log.read('docs', 1, 0);
    expect(read.endOffset).toBe(records.length);
    const stored = [...iterateBatches(read.batches)];
    expect(stored).toHaveLength(1);
    // The log stamps the base offset (outside the CRC); every other byte is the producer's.
    expect(Buffer.from(stored[0].bytes).subarray(12)).toEqual(batch.subarray(12));

    const [fetched, empty] = await log.fetch([
      { topic: 'docs', partition: 1, offset: 0 },
      { topic: 'docs', partition: 2, offset: 0 },
    ]);
    expect(fetched).toMatchObject({ logStartOffset: 0, endOffset: records.length });
    expect('batches' in fetched && fetched.batches).toEqual(read.batches);
    expect(empty).toMatchObject({ topic: 'docs', partition: 2, endOffset: 0 });

    const offsets = await log.offsets();
    expect(offsets).toEqual(
      (await kafka.node.client.offsets()).filter((o) => offsets.some((x) => x.topic === o.topic)),
    );
    expect(offsets).toContainEqual({
      topic: 'docs',
      partition: 1,
      logStartOffset: 0,
      endOffset: records.length,
    });
  });

  it('answers a sequence gap and an offset past the end with the log contract’s codes', async () => {
    const producer = await log.initProducerId();
    const records = documents('x', 0, 3);
    await log.append('gaps', 0, encodeBatch(records, { ...producer, baseSequence: 0 }));
    const gap = await log
      .append('gaps', 0, encodeBatch(records, { ...producer, baseSequence: 50 }))
      .catch((error: unknown) => error);
    expect(gap).toBeInstanceOf(TailbaseError);
    expect((gap as TailbaseError).code).toBe('sequence_gap');

    const [outcome] = await log.fetch([{ topic: 'gaps', partition: 0, offset: 99 }]);
    expect('error' in outcome && outcome.error.code).toBe('offset_out_of_range');
  });

  it('a long-polling fetch wakes when a batch is appended, and appends do not wait behind it', async () => {
    await log.ensureTopic('polled');
    const started = Date.now();
    const polling = log.fetch([{ topic: 'polled', partition: 2, offset: 0 }], { waitMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const records = documents('p', 2, 2);
    await log.append('polled', 2, encodeBatch(records));
    const [outcome] = await polling;
    expect(Date.now() - started).toBeLessThan(4_000);
    expect('batches' in outcome && outcome.batches.length).toBeGreaterThan(0);
  });

  it('reads the settings topic, which every log-node holds from the start', async () => {
    const read = await log.read(SETTINGS_TOPIC, 0, 0);
    expect(read.logStartOffset).toBe(0);
  });

  it('a stopped broker is unreachable, and refused connections say so', async () => {
    const lone = await startKafkaNode({ partitions: 1 });
    const client = await KafkaLogClient.connect({
      bootstrap: [lone.broker],
      bootstrapWaitMs: 5_000,
    });
    try {
      await client.ensureTopic('gone');
      await lone.stop();
      // The broker's close reaches the client's idle connection first: what follows is refused.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const error = await client
        .append('gone', 0, encodeBatch([{ key: 'z', value: null, timestampMs: 1 }]))
        .catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(TailbaseError);
      expect((error as TailbaseError).code).toBe('log_unreachable');
      expect(connectionRefused(error)).toBe(true);
    } finally {
      client.close();
    }
  });
});
