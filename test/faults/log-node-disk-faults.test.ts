// Proves what a log-node does when its disk fails under it (test/harness/faulty-io.ts, under a
// real node, reached by its Kafka listener): a failed fsync acknowledges nothing of its round, fails every append
// waiting behind it with 503 partition_failed, and never writes that partition again until a
// restart (the fsync is not retried on pages the kernel may have dropped), while its reads and the
// other partitions go on; a full disk refuses the append with 507 disk_full, keeps nothing of it
// (an idempotent retry is appended afresh, not answered as a duplicate), keeps serving reads, and
// takes writes again once there is room. After a restart every acknowledged append is there.
import { afterEach, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { TailbaseError } from '../../shared/errors.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { createLogger } from '../../shared/logger.js';
import { AppendHistory, type IdempotentProducer } from '../harness/append-history.js';
import { FaultyIO } from '../harness/faulty-io.js';
import { keysIn, type Random, seededRandom, tempDir, type TempDir } from '../harness/index.js';

const silent = createLogger('disk-faults', 'silent');
const TOPIC = 'd';
const KEYS = 1_000;
/** Each partition's keys, as Kafka's partitioner places them (the listener refuses others). */
const KEYS_OF = [0, 1].map((partition) => keysIn(partition, 2, KEYS / 2, 'k'));

let dir: TempDir | null = null;
let node: OpenLogNode | null = null;
let log: KafkaLogClient | null = null;
afterEach(async () => {
  log?.close();
  log = null;
  await node?.stop().catch(() => undefined);
  node = null;
  dir?.cleanup();
  dir = null;
});

async function start(io?: FaultyIO): Promise<LogClient> {
  node = await openLogNode({
    dataDir: dir!.path,
    partitions: 2,
    logger: silent,
    segmentBytesMax: 16 * 1024,
    batchBytesMax: 8 * 1024,
    cleanupPolicy: 'delete',
    kafka: { host: '127.0.0.1', port: 0 },
    ...(io ? { fileIO: io } : {}),
  });
  log = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${node.kafkaPort}`],
    logger: silent,
  });
  return log;
}

async function restart(): Promise<LogClient> {
  log?.close();
  log = null;
  await node!.stop().catch(() => undefined);
  node = null;
  return start();
}

/** The error an append was refused with: status and code. */
async function refusal(append: Promise<unknown>): Promise<{ status: number; code: string }> {
  try {
    await append;
  } catch (error) {
    if (!(error instanceof TailbaseError)) throw error;
    return { status: error.status, code: error.code };
  }
  throw new Error('the append was acknowledged');
}

async function appendAcked(
  client: LogClient,
  history: AppendHistory,
  partition: number,
  batch: Buffer,
) {
  const ack = await client.append(TOPIC, partition, batch);
  history.acked({ topic: TOPIC, partition, ...ack, sent: batch });
  return ack;
}

describe('log-node on a failing disk', () => {
  for (const fault of ['write-through write', 'fsync at a segment roll'] as const) {
    it(`stops a partition for good after a failed fsync (${fault}), reads and other partitions go on`, async () => {
      dir = tempDir('fsync-eio');
      const random = seededRandom(15);
      const history = new AppendHistory();
      const io = new FaultyIO();
      const client = await start(io);
      await client.ensureTopic(TOPIC);
      for (let i = 0; i < 3; i++) {
        await appendAcked(client, history, 0, history.makeBatch(random, `a${i}`, KEYS_OF[0], null));
      }
      // The next append rolls the segment, which fsyncs it before the new one is created.
      await fillToRoll(node!, client, history, random);
      const before = await client.read(TOPIC, 0, 0, { maxBytes: 1024 * 1024 });

      if (fault === 'write-through write') io.failWriteThrough = true;
      else io.failFsync = true;
      const waiting = Array.from({ length: 6 }, (_, i) =>
        refusal(client.append(TOPIC, 0, bigBatch(history, random, `failed${i}`))),
      );
      for (const answer of await Promise.all(waiting)) {
        expect(answer).toEqual({ status: 503, code: 'partition_failed' });
      }
      expect(io.failures.EIO).toBeGreaterThan(0);

      // The disk answers again, but the partition does not write until a restart has recovered it.
      io.failWriteThrough = false;
      io.failFsync = false;
      expect(
        await refusal(
          client.append(TOPIC, 0, history.makeBatch(random, 'after', KEYS_OF[0], null)),
        ),
      ).toEqual({
        status: 503,
        code: 'partition_failed',
      });
      const after = await client.read(TOPIC, 0, 0, { maxBytes: 1024 * 1024 });
      expect(after.endOffset).toBe(before.endOffset);
      expect(after.batches.equals(before.batches)).toBe(true);
      await appendAcked(client, history, 1, history.makeBatch(random, 'other', KEYS_OF[1], null));
      const status = node!.node
        .status()
        .partitions.find((p) => p.topic === TOPIC && p.partition === 0);
      expect(status?.error).toMatch(/EIO/);

      const recovered = await restart();
      expect(await history.check(recovered, TOPIC, 0, true)).toBe(history.acks.length - 1);
      expect(await history.check(recovered, TOPIC, 1, true)).toBe(1);
      await appendAcked(
        recovered,
        history,
        0,
        history.makeBatch(random, 'restarted', KEYS_OF[0], null),
      );
      await history.check(recovered, TOPIC, 0, true);
    });
  }

  it('refuses appends on a full disk with 507 disk_full, keeps nothing of them, and writes once there is room', async () => {
    dir = tempDir('enospc');
    const random = seededRandom(28);
    const history = new AppendHistory();
    const io = new FaultyIO();
    const client = await start(io);
    await client.ensureTopic(TOPIC);
    const { producerId, producerEpoch } = await client.initProducerId();
    const producer: IdempotentProducer = {
      producerId,
      producerEpoch,
      nextSequence: 0,
      pending: null,
      lastAcked: null,
    };
    await appendAcked(client, history, 0, history.makeBatch(random, 'a', KEYS_OF[0], producer));

    // Room for part of the next batch: a short write, then ENOSPC.
    io.spaceBytes = 100;
    const refused = history.makeBatch(random, 'refused', KEYS_OF[0], producer);
    const queued = Array.from({ length: 4 }, (_, i) =>
      refusal(client.append(TOPIC, 0, history.makeBatch(random, `q${i}`, KEYS_OF[0], null))),
    );
    expect(await refusal(client.append(TOPIC, 0, refused))).toEqual({
      status: 507,
      code: 'disk_full',
    });
    for (const answer of await Promise.all(queued)) {
      expect(answer).toEqual({ status: 507, code: 'disk_full' });
    }
    expect(io.failures.ENOSPC).toBeGreaterThan(0);
    const { endOffset } = await client.read(TOPIC, 0, 0);
    expect(endOffset).toBe(history.acks[0].lastOffset + 1);
    expect(node!.node.status().partitions.every((p) => p.error === undefined)).toBe(true);

    // A roll on a full disk (the closing segment's index and producer snapshot need room too).
    io.spaceBytes = null;
    await fillToRoll(node!, client, history, random);
    io.spaceBytes = 0;
    expect(await refusal(client.append(TOPIC, 0, bigBatch(history, random, 'roll')))).toEqual({
      status: 507,
      code: 'disk_full',
    });

    // Room again: the refused idempotent batch is appended (it was not kept), right after the
    // acknowledged ones, and the producer goes on from it.
    io.spaceBytes = null;
    const retried = await appendAcked(client, history, 0, refused);
    expect(retried.duplicate).toBe(false);
    await appendAcked(client, history, 0, history.makeBatch(random, 'b', KEYS_OF[0], producer));
    await appendAcked(client, history, 0, bigBatch(history, random, 'rolls'));
    await history.check(client, TOPIC, 0, true);

    const recovered = await restart();
    for (const partition of [0, 1]) await history.check(recovered, TOPIC, partition, true);
    expect(node!.node.status().partitions.every((p) => p.truncatedBytesOnLoad === 0)).toBe(true);
  });

  it('creates a collection on a full disk once there is room, 507 disk_full until then', async () => {
    dir = tempDir('enospc-topic');
    const random = seededRandom(29);
    const history = new AppendHistory();
    const io = new FaultyIO();
    const client = await start(io);
    await client.ensureTopic(TOPIC);
    const { configs } = (await client.topics()).find((topic) => topic.name === TOPIC)!;
    const topic = 'e';
    const sent = history.makeBatch(random, 'new', KEYS_OF[0], null);
    const diskFull = { status: 507, code: 'disk_full' };

    // No room for the topic's directory.
    io.spaceBytes = 0;
    expect(await refusal(client.append(topic, 0, sent))).toEqual(diskFull);
    // Room for its topic.json, none for its partitions' directories.
    const topicFile = JSON.stringify({ name: topic, partitions: 2, configs }, null, 2);
    io.spaceBytes = Buffer.byteLength(topicFile);
    expect(await refusal(client.append(topic, 0, sent))).toEqual(diskFull);
    expect(io.spaceBytes).toBe(0);

    io.spaceBytes = null;
    const ack = await client.append(topic, 0, sent);
    history.acked({ topic, partition: 0, ...ack, sent });
    expect(ack.baseOffset).toBe(0);
    expect(node!.node.status().partitions.every((p) => p.error === undefined)).toBe(true);
    const recovered = await restart();
    expect(await history.check(recovered, topic, 0, true)).toBe(1);
  });
});

/** About 6.6 KiB (under the 8 KiB batch limit): the third after a roll rolls the 16 KiB segment. */
function bigBatch(history: AppendHistory, random: Random, tag: string): Buffer {
  return history.makeBatch(random, tag, KEYS_OF[0], null, { records: 12, padBytes: 500 });
}

/** Appends big batches to partition 0 until one rolls, then one more: the next one rolls. */
async function fillToRoll(
  node: OpenLogNode,
  client: LogClient,
  history: AppendHistory,
  random: Random,
) {
  const segments = () =>
    node.node.status().partitions.find((p) => p.topic === TOPIC && p.partition === 0)!.segments;
  const before = segments();
  while (segments() === before)
    await appendAcked(client, history, 0, bigBatch(history, random, 'fill'));
  await appendAcked(client, history, 0, bigBatch(history, random, 'fill'));
}
