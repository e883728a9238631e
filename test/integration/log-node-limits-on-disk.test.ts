// Proves the line between what a producer may append and what the log may hold: an appended
// batch must claim dense offsets and sane timestamps or it is refused before anything is written,
// while batches already on disk are bounded only by the format, never by today's append limits:
// lowering batchBytesMax or recordBytesMax loses, hides or truncates no acknowledged batch. The
// batches travel by the log-node's Kafka listener.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BATCH_CRC_START, encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { crc32c } from '../../shared/crc32c.js';
import { TailbaseError } from '../../shared/errors.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, openLogNode, type OpenLogNode } from '../../log-node/index.js';
import {
  lastOffsetOf,
  partitionDirOf,
  readPartition,
  recordsOf,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const TOPIC = 'c';

const open: { node: OpenLogNode; client: KafkaLogClient }[] = [];
const dirs: TempDir[] = [];
afterEach(async () => {
  for (const { node, client } of open.splice(0)) {
    client.close();
    await node.stop();
  }
  for (const dir of dirs.splice(0)) dir.cleanup();
});

async function start(dir: TempDir, options: Omit<LogNodeOptions, 'dataDir'> = {}) {
  const node = await openLogNode({
    dataDir: dir.path,
    partitions: 1,
    logger,
    cleanerIntervalMs: 3_600_000,
    kafka: { host: '127.0.0.1', port: 0 },
    ...options,
  });
  const client = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${node.kafkaPort}`],
    logger,
  });
  open.push({ node, client });
  return { node, client };
}

async function stop(node: OpenLogNode): Promise<void> {
  const [{ client }] = open.splice(
    open.findIndex((entry) => entry.node === node),
    1,
  );
  client.close();
  await node.stop();
}

function newDir(prefix: string): TempDir {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
}

const record = (key: string, valueBytes = 20): LogRecord => ({
  key,
  value: Buffer.from(JSON.stringify({ v: 'v'.repeat(valueBytes) })),
  timestampMs: T0,
});

/** The error an append was refused with. */
async function refusal(append: Promise<unknown>): Promise<TailbaseError> {
  const error = await append.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, 'the append is refused').toBeInstanceOf(TailbaseError);
  return error as TailbaseError;
}

const partitionDir = (dataDir: string) => partitionDirOf(dataDir, TOPIC, 0);

/** TOPIC's partition 0 in the node's status. */
function partitionStatus(node: OpenLogNode) {
  const status = node.node.status().partitions.find((p) => p.topic === TOPIC && p.partition === 0);
  expect(status, `${TOPIC}:0 in the status`).toBeDefined();
  return status!;
}

function segmentNames(dataDir: string, suffix: string): string[] {
  return fs
    .readdirSync(partitionDir(dataDir))
    .filter((name) => name.endsWith(suffix))
    .sort();
}

function segmentBytes(dataDir: string): number {
  return segmentNames(dataDir, '.log').reduce(
    (sum, name) => sum + fs.statSync(path.join(partitionDir(dataDir), name)).size,
    0,
  );
}

/** Every record of the partition as `offset:key`, read through the Kafka listener from `fromOffset`. */
async function storedKeys(client: KafkaLogClient, fromOffset = 0): Promise<string[]> {
  const { batches } = await readPartition(client, TOPIC, 0, { fromOffset, maxBytes: 1 });
  return recordsOf(batches)
    .filter((r) => r.offset >= fromOffset)
    .map((r) => `${r.offset}:${r.key}`);
}

const BIG_VALUE_BYTES = 100_000;
/** Below the big batches above: the limits an operator lowers to after they were acknowledged. */
const lowered = { batchBytesMax: 65_536, recordBytesMax: 65_536 };

describe("a producer's batch is checked before it is written", () => {
  it('refuses offset gaps and out-of-range timestamps with 400 invalid_batch naming the field, writing nothing', async () => {
    const dir = newDir('limits-producer');
    const { client } = await start(dir);
    // The topic exists first, so what the refusals leave on disk can be looked at.
    await client.ensureTopic(TOPIC);
    const int64Max = encodeBatch([record('ts')]);
    int64Max.writeBigInt64BE(2n ** 63n - 1n, 27);
    int64Max.writeBigInt64BE(2n ** 63n - 1n, 35);
    int64Max.writeUInt32BE(crc32c(int64Max.subarray(BATCH_CRC_START)), 17);
    const cases: [Buffer, string][] = [
      [encodeBatch([record('sparse')], { lastOffsetDelta: 0x7fff_ffff }), 'lastOffsetDelta'],
      [
        encodeBatch([record('a'), record('b')], { offsetDeltas: [0, 5], lastOffsetDelta: 5 }),
        'offsetDelta',
      ],
      [int64Max, 'baseTimestamp'],
      [encodeBatch([{ ...record('old'), timestampMs: -1 }]), 'timestampDelta'],
    ];
    for (const [bytes, field] of cases) {
      const refused = await refusal(client.append(TOPIC, 0, bytes));
      expect(refused, field).toMatchObject({ status: 400, code: 'invalid_batch' });
      // The refusal names the field; a record's timestamp, by its value.
      expect(refused.message, field).toMatch(field === 'timestampDelta' ? /timestamp -1/ : field);
    }
    expect((await client.offsets()).find((p) => p.topic === TOPIC)).toMatchObject({
      partition: 0,
      logStartOffset: 0,
      endOffset: 0,
    });
    expect(segmentBytes(dir.path), 'nothing written').toBe(0);
    expect(await client.append(TOPIC, 0, encodeBatch([record('after')]))).toMatchObject({
      baseOffset: 0,
      lastOffset: 0,
    });
  });
});

describe('batches on disk are bounded by the format, not by the append limits', () => {
  it('a restart with lower batchBytesMax and recordBytesMax keeps every acknowledged batch of the active segment', async () => {
    const dir = newDir('limits-active');
    const first = await start(dir);
    const { producerId, producerEpoch } = await first.client.initProducerId();
    const acks = [
      await first.client.append(TOPIC, 0, encodeBatch([record('small')])),
      await first.client.append(
        TOPIC,
        0,
        encodeBatch([record('big', BIG_VALUE_BYTES)], {
          producerId,
          producerEpoch,
          baseSequence: 0,
        }),
      ),
      await first.client.append(
        TOPIC,
        0,
        encodeBatch([record('after')], { producerId, producerEpoch, baseSequence: 1 }),
      ),
    ];
    expect(acks.map((ack) => ack.baseOffset)).toEqual([0, 1, 2]);
    const bytesBefore = segmentBytes(dir.path);
    await stop(first.node);

    const { node, client } = await start(dir, lowered);
    const status = partitionStatus(node);
    expect(status).toMatchObject({ endOffset: 3, truncatedBytesOnLoad: 0 });
    expect(status.error).toBeUndefined();
    expect(segmentBytes(dir.path), 'nothing cut').toBe(bytesBefore);
    expect(await storedKeys(client)).toEqual(['0:small', '1:big', '2:after']);
    // The producer state was replayed past the big batch: a retry is still known.
    expect(
      await client.append(
        TOPIC,
        0,
        encodeBatch([record('after')], { producerId, producerEpoch, baseSequence: 1 }),
      ),
    ).toMatchObject({ baseOffset: 2, lastOffset: 2, duplicate: true });
    // The lowered limits still bound new appends.
    await expect(
      client.append(TOPIC, 0, encodeBatch([record('big2', BIG_VALUE_BYTES)])),
    ).rejects.toMatchObject({ status: 413, code: 'batch_too_large' });
    expect(await client.append(TOPIC, 0, encodeBatch([record('next')]))).toMatchObject({
      baseOffset: 3,
    });
  });

  it('reads, index rebuilds and compaction of closed segments pass over batches above the lowered limits', async () => {
    const dir = newDir('limits-closed');
    const roomy = { segmentBytesMax: 150_000, batchBytesMax: 150_000, recordBytesMax: 150_000 };
    const first = await start(dir, roomy);
    for (const bytes of [
      encodeBatch([record('a')]),
      encodeBatch([record('big', BIG_VALUE_BYTES)]),
      encodeBatch([record('b')]),
      // Past segmentBytesMax with the first big one: the first segment closes before it.
      encodeBatch([record('big', BIG_VALUE_BYTES)]),
      encodeBatch([record('c')]),
      // Closes the second one; the active segment holds only what the lowered limits allow.
      encodeBatch([record('d', 60_000)]),
    ]) {
      await first.client.append(TOPIC, 0, bytes);
    }
    await stop(first.node);
    expect(segmentNames(dir.path, '.log').length).toBe(3);
    // A closed segment's index is rebuilt by a scan of its batches when it is missing.
    for (const name of segmentNames(dir.path, '.index')) {
      fs.rmSync(path.join(partitionDir(dir.path), name));
    }

    const { node, client } = await start(dir, {
      ...lowered,
      segmentBytesMax: lowered.batchBytesMax,
      cleanerMinDirtyRatio: 0,
    });
    expect(partitionStatus(node)).toMatchObject({
      endOffset: 6,
      truncatedBytesOnLoad: 0,
    });
    const all = ['0:a', '1:big', '2:b', '3:big', '4:c', '5:d'];
    for (let offset = 0; offset < all.length; offset++) {
      expect(await storedKeys(client, offset), `from offset ${offset}`).toEqual(all.slice(offset));
    }
    // The first segment's big record is superseded by offset 3: compaction drops it alone.
    const summaries = await node.cleaner.runOnce();
    expect(summaries.find((s) => s.topic === TOPIC && s.partition === 0)).toMatchObject({
      segmentsCompacted: 1,
      recordsRemoved: 1,
    });
    expect(await storedKeys(client)).toEqual(['0:a', '2:b', '3:big', '4:c', '5:d']);
    const { batches } = await readPartition(client, TOPIC, 0);
    expect(batches.map((batch) => lastOffsetOf(batch.header))).toEqual([0, 2, 3, 4, 5]);
  });

  it('damage before a batch bigger than the lowered batchBytesMax still stops the partition instead of cutting acknowledged data', async () => {
    const dir = newDir('limits-damage');
    const first = await start(dir);
    await first.client.append(TOPIC, 0, encodeBatch([record('small')]));
    await first.client.append(TOPIC, 0, encodeBatch([record('big', BIG_VALUE_BYTES)]));
    await stop(first.node);
    const [active] = segmentNames(dir.path, '.log');
    const file = path.join(partitionDir(dir.path), active);
    const bytes = fs.readFileSync(file);
    bytes[bytes.readInt32BE(8) + 12 - 1] ^= 1; // the last byte of the first batch's CRC region
    fs.writeFileSync(file, bytes);

    const { node } = await start(dir, lowered);
    const status = partitionStatus(node);
    expect(status.error ?? 'no error', 'the partition stopped').toMatch(/followed by valid data/);
    expect(fs.statSync(file).size, 'nothing cut').toBe(bytes.length);
  });
});
