// Proves the log-node's topics and producers over its Kafka listener and real files: a data
// directory of the pre-Kafka format is refused and left as it was; topics and their configs
// survive a restart; a collection whose collection id another one has is refused; producer ids are
// never reused, a newer epoch fences the older one, and a retry after a restart (producer state
// rebuilt from a snapshot plus the active segment) is answered with its original offsets.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { collectionId } from '../../shared/token.js';
import {
  CONSUMER_OFFSETS_TOPIC,
  SETTINGS_TOPIC,
  type TopicInfo,
  VIEWS_TOPIC,
} from '../../shared/topics.js';
import {
  type LogNodeOptions,
  openLogNode,
  type OpenLogNode,
  startLogNode,
} from '../../log-node/index.js';
import { keysIn, partitionDirOf, readPartition, tempDir, type TempDir } from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;

const dirs: TempDir[] = [];
const running: { node: OpenLogNode; client: KafkaLogClient }[] = [];
afterEach(async () => {
  for (const { node, client } of running.splice(0)) {
    client.close();
    await node.stop();
  }
  for (const dir of dirs.splice(0)) dir.cleanup();
});

function newDir(): TempDir {
  const dir = tempDir('topics');
  dirs.push(dir);
  return dir;
}

async function start(dir: TempDir, options: Omit<LogNodeOptions, 'dataDir'> = {}) {
  const node = await openLogNode({
    dataDir: dir.path,
    partitions: 2,
    logger,
    kafka: { host: '127.0.0.1', port: 0 },
    ...options,
  });
  const client = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${node.kafkaPort}`],
    logger,
  });
  running.push({ node, client });
  return { node, client };
}

async function stop(node: OpenLogNode) {
  const at = running.findIndex((started) => started.node === node);
  running[at].client.close();
  await node.stop();
  running.splice(at, 1);
}

/** Keys of the partition (of 2), as Kafka's partitioner places them: the listener refuses others. */
function records(count: number, tag: string, partition = 0): LogRecord[] {
  return keysIn(partition, 2, count, `${tag}-`).map((key, i) => ({
    key,
    value: Buffer.from(`{"n":${i}}`),
    timestampMs: T0,
  }));
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e as { status: number; code: string; message: string },
  );
  expect(error, 'the call is refused').not.toBeNull();
  return error!;
}

describe('a data directory of the pre-Kafka format', () => {
  const message =
    /holds tailbase's pre-Kafka log format; this version stores Kafka RecordBatch v2 per topic; nothing migrates it: move the directory aside or delete it and write the data again/;

  it('with a partitions/ directory is refused at start, and left as it was', async () => {
    const dir = newDir();
    const meta = { formatVersion: 1, clusterId: 'c1', partitions: 2, hostedPartitions: [0, 1] };
    fs.writeFileSync(path.join(dir.path, 'cluster.json'), JSON.stringify(meta));
    fs.mkdirSync(path.join(dir.path, 'partitions', '0'), { recursive: true });
    fs.writeFileSync(path.join(dir.path, 'partitions', '0', '00000000000000000000.log'), 'old');
    const before = fs.readdirSync(dir.path).sort();

    await expect(startLogNode({ dataDir: dir.path, port: 0, logger })).rejects.toThrow(message);
    expect(fs.readdirSync(dir.path).sort()).toEqual(before);
    expect(fs.readFileSync(path.join(dir.path, 'cluster.json'), 'utf8')).toBe(JSON.stringify(meta));
  });

  it('with a cluster.json of another format version is refused at start', async () => {
    const dir = newDir();
    const meta = { formatVersion: 1, clusterId: 'c1', partitions: 2, hostedPartitions: [0, 1] };
    fs.writeFileSync(path.join(dir.path, 'cluster.json'), JSON.stringify(meta));
    await expect(startLogNode({ dataDir: dir.path, port: 0, logger })).rejects.toThrow(message);
    expect(fs.existsSync(path.join(dir.path, 'topics'))).toBe(false);
  });

  it('a new data directory is written in format 2, with its internal topics', async () => {
    const dir = newDir();
    const { client } = await start(dir);
    const meta = JSON.parse(fs.readFileSync(path.join(dir.path, 'cluster.json'), 'utf8'));
    expect(meta.formatVersion).toBe(2);
    const topics = await client.topics();
    expect(topics.map((t) => t.name)).toEqual([
      CONSUMER_OFFSETS_TOPIC,
      SETTINGS_TOPIC,
      VIEWS_TOPIC,
    ]);
    for (const topic of topics) {
      expect(topic.partitions).toBe(1);
      expect(topic.configs.cleanupPolicy).toBe('compact');
    }
  });
});

describe('topics', () => {
  it('ensureTopic persists a topic and its configs atomically; they hold after a restart', async () => {
    const dir = newDir();
    const first = await start(dir);
    const created = await first.client.ensureTopic('events', {
      cleanupPolicy: 'delete',
      retentionMs: 60_000,
      maxMessageBytes: 4096,
    });
    expect(created).toMatchObject({ name: 'events', partitions: 2 });
    expect(created.configs).toMatchObject({
      cleanupPolicy: 'delete',
      retentionMs: 60_000,
      maxMessageBytes: 4096,
    });
    const onDisk = JSON.parse(
      fs.readFileSync(path.join(dir.path, 'topics', 'events', 'topic.json'), 'utf8'),
    ) as TopicInfo;
    expect(onDisk).toEqual(created);

    // A change of one config keeps the others; a bad one changes nothing.
    const changed = await first.client.ensureTopic('events', { retentionBytes: 1_000_000 });
    expect(changed.configs).toEqual({ ...created.configs, retentionBytes: 1_000_000 });
    for (const bad of [
      { cleanupPolicy: 'forever' },
      { retentionMs: -2 },
      { maxMessageBytes: 0 },
      { segmentBytes: 10 },
    ]) {
      const error = await refusal(first.client.ensureTopic('events', bad as never));
      expect(error).toMatchObject({ status: 400, code: 'invalid_topic_config' });
    }
    const internal = await refusal(
      first.client.ensureTopic(SETTINGS_TOPIC, { cleanupPolicy: 'delete' }),
    );
    expect(internal).toMatchObject({ status: 400, code: 'invalid_topic_config' });
    for (const name of ['Events', '_private', 'a:b', 'x'.repeat(65)]) {
      const error = await refusal(first.client.ensureTopic(name));
      expect(error).toMatchObject({ status: 400, code: 'invalid_topic' });
    }

    await stop(first.node);
    const second = await start(dir);
    const events = (await second.client.topics()).find((t) => t.name === 'events');
    expect(events).toEqual(changed);
    // maxMessageBytes bounds a producer's batch to this topic, after the restart too.
    const big = encodeBatch([
      { ...records(1, 'big')[0], value: Buffer.from(JSON.stringify({ pad: 'a'.repeat(5000) })) },
    ]);
    const tooLarge = await refusal(second.client.append('events', 0, big));
    expect(tooLarge).toMatchObject({ status: 413, code: 'batch_too_large' });
    expect((await second.client.offsets()).find((o) => o.topic === 'events')?.endOffset).toBe(0);
  });

  it('a first append creates a collection topic; reads name their topic', async () => {
    const dir = newDir();
    const { client } = await start(dir);
    const ack = await client.append('books', 1, encodeBatch(records(3, 'b', 1)));
    expect(ack).toEqual({ baseOffset: 0, lastOffset: 2, duplicate: false });
    const books = (await client.topics()).find((t) => t.name === 'books');
    expect(books).toMatchObject({ partitions: 2, configs: { cleanupPolicy: 'compact' } });
    expect(fs.existsSync(partitionDirOf(dir.path, 'books', 1))).toBe(true);
    const read = await readPartition(client, 'books', 1);
    expect(read.batches.map((b) => b.header.recordCount)).toEqual([3]);
    const missing = await refusal(client.read('films', 0, 0));
    expect(missing).toMatchObject({ status: 404, code: 'unknown_topic' });
    const offsets = await client.offsets();
    expect(offsets.filter((o) => o.topic === 'books')).toEqual([
      { topic: 'books', partition: 0, logStartOffset: 0, endOffset: 0 },
      { topic: 'books', partition: 1, logStartOffset: 0, endOffset: 3 },
    ]);
  });

  it('a refused first append creates no topic, on disk or in the list', async () => {
    const dir = newDir();
    // The log-node's own store, by its in-process binding: a Kafka client creates the topic
    // (CreateTopics) before it produces, so over Kafka the refusal comes after the creation.
    const client = (await start(dir)).node.client;
    const good = encodeBatch(records(1, 'g'));
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length - 1] ^= 1;
    const unknownProducer = encodeBatch(records(1, 'u'), {
      producerId: 77,
      producerEpoch: 0,
      baseSequence: 5,
    });
    const refusals = [
      ['ghost', 0, corrupt, 400, 'invalid_batch'],
      ['ghost', 0, unknownProducer, 409, 'unknown_producer'],
      ['ghost', 7, good, 400, 'invalid_partition'],
      ['Ghost', 0, good, 400, 'invalid_topic'],
    ] as const;
    for (const [topic, partition, batch, status, code] of refusals) {
      const error = await refusal(client.append(topic, partition, batch));
      expect(error, `${topic}/${partition}`).toMatchObject({ status, code });
    }
    expect((await client.topics()).map((t) => t.name)).not.toContain('ghost');
    expect(fs.existsSync(path.join(dir.path, 'topics', 'ghost'))).toBe(false);
  });

  it('refuses a collection whose collection id another collection has', async () => {
    const [a, b] = collidingNames();
    expect(collectionId(a)).toBe(collectionId(b));
    const dir = newDir();
    const { client } = await start(dir);
    await client.ensureTopic(a);
    const byEnsure = await refusal(client.ensureTopic(b));
    expect(byEnsure).toMatchObject({ status: 409, code: 'collection_id_collision' });
    const byAppend = await refusal(client.append(b, 0, encodeBatch(records(1, 'x'))));
    expect(byAppend).toMatchObject({ status: 409, code: 'collection_id_collision' });
    expect((await client.topics()).map((t) => t.name)).not.toContain(b);
    expect(fs.existsSync(path.join(dir.path, 'topics', b))).toBe(false);
  });

  it('refuses a collection made again after a drop whose new id another collection has', async () => {
    const [a, b] = collidingNames(1);
    expect(collectionId(a, 1)).toBe(collectionId(b));
    const dir = newDir();
    const { client } = await start(dir);
    await client.ensureTopic(a);
    await client.deleteTopic(a);
    await client.ensureTopic(b);
    const again = await refusal(client.ensureTopic(a));
    expect(again).toMatchObject({ status: 409, code: 'collection_id_collision' });
    expect((await client.topics()).map((t) => t.name)).not.toContain(a);
  });
});

/**
 * Two collection names with the same CRC-32C, found by the birthday bound (~2^16 names). The
 * names are pseudo-random: names that differ in a few neighbouring bytes never collide (CRC-32C
 * detects every burst of up to 32 bits).
 */
/**
 * Two names [a, b] whose collection ids clash: a's at `incarnationA`, b's at its first. A
 * birthday search over seeded names: about 2^16 of them.
 */
function collidingNames(incarnationA = 0): [string, string] {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const asA = new Map<number, string>();
  const asB = new Map<number, string>();
  let state = 1;
  for (;;) {
    let name = 'c';
    for (let i = 0; i < 11; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      name += alphabet[(state >>> 16) % alphabet.length];
    }
    const idA = collectionId(name, incarnationA);
    const idB = collectionId(name);
    const b = asB.get(idA);
    if (b !== undefined && b !== name) return [name, b];
    const a = asA.get(idB);
    if (a !== undefined && a !== name) return [a, name];
    asA.set(idA, name);
    asB.set(idB, name);
  }
}

describe('idempotent producers', () => {
  it('hands out producer ids that are never reused, across restarts', async () => {
    const dir = newDir();
    const first = await start(dir);
    const before = [];
    for (let i = 0; i < 3; i++) before.push(await first.client.initProducerId());
    expect(before.map((p) => p.producerEpoch)).toEqual([0, 0, 0]);
    expect(new Set(before.map((p) => p.producerId)).size).toBe(3);
    await stop(first.node);
    const second = await start(dir);
    const after = await second.client.initProducerId();
    expect(after.producerId).toBeGreaterThan(Math.max(...before.map((p) => p.producerId)));
  });

  it('fences an older epoch, and answers retries with their original offsets after a restart', async () => {
    const dir = newDir();
    // Small segments: the restart loads a producer snapshot and replays the active segment.
    const options = { segmentBytesMax: 512, batchBytesMax: 512 };
    const first = await start(dir, options);
    const { producerId } = await first.client.initProducerId();
    const batches: Buffer[] = [];
    const acks = [];
    let sequence = 0;
    for (let n = 0; n < 8; n++) {
      const batch = encodeBatch(records(3, `p${n}`), {
        producerId,
        producerEpoch: 0,
        baseSequence: sequence,
      });
      sequence += 3;
      batches.push(batch);
      acks.push(await first.client.append('events', 0, batch));
    }
    expect(acks.every((ack) => !ack.duplicate)).toBe(true);
    const dirFiles = fs.readdirSync(partitionDirOf(dir.path, 'events', 0));
    expect(dirFiles.some((name) => name.endsWith('.producers'))).toBe(true);

    await stop(first.node);
    const second = await start(dir, options);
    const { endOffset } = (await second.client.offsets()).find((o) => o.topic === 'events')!;
    // The last producerRecentBatchesMax (5) batches are remembered: each retry gets its offsets.
    for (let n = 3; n < 8; n++) {
      const retry = await second.client.append('events', 0, batches[n]);
      expect(retry).toEqual({ ...acks[n], duplicate: true });
    }
    const tooOld = await refusal(second.client.append('events', 0, batches[2]));
    expect(tooOld).toMatchObject({ status: 409, code: 'sequence_too_old' });
    const gap = encodeBatch(records(1, 'gap'), {
      producerId,
      producerEpoch: 0,
      baseSequence: sequence + 1,
    });
    expect(await refusal(second.client.append('events', 0, gap))).toMatchObject({
      status: 409,
      code: 'sequence_gap',
    });

    // A newer epoch starts again at sequence 0 and fences the older one.
    const bumped = encodeBatch(records(2, 'e1'), { producerId, producerEpoch: 1, baseSequence: 0 });
    const bumpedAck = await second.client.append('events', 0, bumped);
    expect(bumpedAck).toEqual({
      baseOffset: endOffset,
      lastOffset: endOffset + 1,
      duplicate: false,
    });
    const fenced = encodeBatch(records(1, 'e0'), {
      producerId,
      producerEpoch: 0,
      baseSequence: sequence,
    });
    expect(await refusal(second.client.append('events', 0, fenced))).toMatchObject({
      status: 409,
      code: 'invalid_producer_epoch',
    });
    const unknown = encodeBatch(records(1, 'u'), {
      producerId: producerId + 1,
      producerEpoch: 0,
      baseSequence: 5,
    });
    expect(await refusal(second.client.append('events', 0, unknown))).toMatchObject({
      status: 409,
      code: 'unknown_producer',
    });
    // None of the refusals wrote anything.
    const { endOffset: after } = (await second.client.offsets()).find((o) => o.topic === 'events')!;
    expect(after).toBe(endOffset + 2);

    // The fencing survives a restart as well.
    await stop(second.node);
    const third = await start(dir, options);
    expect(await refusal(third.client.append('events', 0, fenced))).toMatchObject({
      code: 'invalid_producer_epoch',
    });
    expect(await third.client.append('events', 0, bumped)).toEqual({
      ...bumpedAck,
      duplicate: true,
    });
  });
});
