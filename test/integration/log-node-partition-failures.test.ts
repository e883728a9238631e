// Proves that a storage error stops only its own partition and that a caught-up reader never
// waits in a gap: a segment roll that fails answers its appends 503 partition_failed while the
// node serves every other partition; a duplicate or refused batch never rolls a segment, so the
// last batch of the log stays in the active segment and compaction cannot leave a reader stuck.
// Appends and reads travel by the log-node's Kafka listener; its status and /readyz are the
// operators' own.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, type RunningLogNode, startLogNode } from '../../log-node/index.js';
import { baseName } from '../../log-node/segment-files.js';
import { partitionDirOf, tempDir, type TempDir } from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const TOPIC = 'c';
/** No call here should take long; a hang (an append never answered) fails within this. */
const CALL_MS_MAX = 5_000;

const open: { node: RunningLogNode; dir: TempDir; client: KafkaLogClient }[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  process.off('unhandledRejection', onUnhandled);
  for (const { node, dir, client } of open.splice(0)) {
    client.close();
    await node.stop();
    dir.cleanup();
  }
});

async function start(options: Omit<LogNodeOptions, 'dataDir'>) {
  const dir = tempDir('partition-failures');
  const node = await startLogNode({
    dataDir: dir.path,
    port: 0,
    logger,
    kafka: { host: '127.0.0.1', port: 0 },
    ...options,
  });
  const client = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${node.kafkaPort}`],
    logger,
    answerMsMax: CALL_MS_MAX,
  });
  open.push({ node, dir, client });
  return { node, dir, client };
}

/** The call's answer or its TailbaseError, with how long it took; a hang fails the test. */
async function timed<T>(call: Promise<T>): Promise<{ answer: T | TailbaseError; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${CALL_MS_MAX} ms`)), CALL_MS_MAX);
  });
  try {
    const answer = await Promise.race([
      call.catch((error: unknown) => {
        if (error instanceof TailbaseError) return error;
        throw error;
      }),
      hang,
    ]);
    return { answer, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

const append = async (client: KafkaLogClient, partition: number, batch: Buffer) =>
  (await timed(client.append(TOPIC, partition, batch))).answer;

/**
 * One record of a `valueBytes` JSON value (the Kafka listener takes JSON objects only); with a
 * producer, it is that producer's record `baseSequence`.
 */
function valueBatch(
  key: string,
  valueBytes: number,
  options: {
    producer?: { producerId: number; producerEpoch: number };
    baseSequence?: number;
    timestampMs?: number;
  } = {},
) {
  const value = Buffer.from(JSON.stringify({ p: 'a'.repeat(valueBytes - 8) }));
  return encodeBatch([{ key, value, timestampMs: options.timestampMs ?? T0 }], {
    ...options.producer,
    baseSequence: options.baseSequence,
  });
}

describe('a segment roll that fails', () => {
  it('answers its appends 503 partition_failed, stops only that partition and shows why', async () => {
    const { node, dir, client } = await start({
      partitions: 2,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
    });
    const first = await append(client, 0, valueBatch('a', 500));
    expect(first).toEqual({ baseOffset: 0, lastOffset: 0, duplicate: false });
    // The next segment's .log file cannot be created: a directory holds its name.
    fs.mkdirSync(path.join(partitionDirOf(dir.path, TOPIC, 0), `${baseName(1)}.log`));

    // Both need the roll; the second may be queued behind the first or arrive after the failure.
    const answers = await Promise.all([
      append(client, 0, valueBatch('b', 500)),
      append(client, 0, valueBatch('c', 500)),
    ]);
    for (const answer of answers) {
      expect(answer).toBeInstanceOf(TailbaseError);
      expect(answer).toMatchObject({
        status: 503,
        code: 'partition_failed',
        details: { topic: TOPIC, partition: 0 },
      });
    }

    // The node goes on serving partition 1, alone and beside partition 0 in one Produce (the
    // client sends appends made in the same turn together).
    expect(await append(client, 1, valueBatch('d', 500))).toMatchObject({ baseOffset: 0 });
    const [multi0, multi1] = await Promise.all([
      append(client, 0, valueBatch('e', 10)),
      append(client, 1, valueBatch('f', 10)),
    ]);
    expect(multi0).toMatchObject({ status: 503, code: 'partition_failed' });
    expect(multi1).toMatchObject({ baseOffset: 1 });
    const read1 = await timed(client.read(TOPIC, 1, 0));
    expect(read1.answer).toMatchObject({ endOffset: 2 });

    // The stopped partition still serves what it acknowledged, and nothing after it.
    const read0 = await timed(client.read(TOPIC, 0, 0));
    expect(read0.answer).toMatchObject({ endOffset: 1 });
    // Every other topic-partition, the internal topics' partition 0 among them, goes on.
    const statuses: { topic: string; partition: number; error?: string }[] =
      node.node.status().partitions;
    const failed = statuses.filter((p) => p.error !== undefined);
    expect(failed.map(({ topic, partition }) => ({ topic, partition }))).toEqual([
      { topic: TOPIC, partition: 0 },
    ]);
    expect(failed[0].error).toMatch(/EEXIST|EISDIR/);
    expect(statuses.some((p) => p.topic === TOPIC && p.partition === 1)).toBe(true);
    const ready = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(CALL_MS_MAX) });
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { failedPartitions: unknown }).failedPartitions).toEqual([
      { topic: TOPIC, partition: 0 },
    ]);
    expect(unhandled).toEqual([]);
  });
});

describe('a batch that is not written', () => {
  it('never rolls a segment: a duplicate or a refused batch, past the size or the age', async () => {
    let now = T0;
    const { dir, client } = await start({
      partitions: 1,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
      segmentMsMax: 60_000,
      clock: { nowMs: () => now },
    });
    const producer = await client.initProducerId();
    const seq0 = valueBatch('a', 500, { producer, baseSequence: 0 });
    expect(await append(client, 0, seq0)).toEqual({
      baseOffset: 0,
      lastOffset: 0,
      duplicate: false,
    });
    const logs = () =>
      fs.readdirSync(partitionDirOf(dir.path, TOPIC, 0)).filter((n) => n.endsWith('.log'));

    expect(await append(client, 0, seq0)).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    const gap = await append(client, 0, valueBatch('a', 500, { producer, baseSequence: 5 }));
    expect(gap).toMatchObject({ status: 409, code: 'sequence_gap' });
    now += 120_000;
    expect(await append(client, 0, seq0)).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    expect(logs()).toEqual([`${baseName(0)}.log`]);

    // The next batch written rolls as it always did.
    const next = await append(client, 0, valueBatch('b', 500, { producer, baseSequence: 1 }));
    expect(next).toEqual({ baseOffset: 1, lastOffset: 1, duplicate: false });
    expect(logs()).toEqual([`${baseName(0)}.log`, `${baseName(1)}.log`]);
    expect(unhandled).toEqual([]);
  });

  it('leaves no gap at the end of the log for compaction: a read past the last record answers at once', async () => {
    let now = T0;
    const { node, client } = await start({
      partitions: 1,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
      deleteRetentionMs: 500,
      cleanerIntervalMs: 3_600_000,
      clock: { nowMs: () => now },
    });
    const producer = await client.initProducerId();
    const seq0 = valueBatch('A', 500, { producer, baseSequence: 0 });
    expect(await append(client, 0, seq0)).toMatchObject({ baseOffset: 0 });
    const tombstone = encodeBatch([{ key: 'K', value: null, timestampMs: T0 }]);
    expect(await append(client, 0, tombstone)).toMatchObject({ baseOffset: 1 });
    // A retry whose size would have rolled the segment; nothing of it is written.
    expect(await append(client, 0, seq0)).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    now += 1_000;
    await node.cleaner.runOnce();

    // A reader that has applied offset 0 asks for 1: the answer must carry it to the end offset.
    const { answer, ms } = await timed(client.read(TOPIC, 0, 1, { waitMs: 2000 }));
    if (answer instanceof TailbaseError) throw answer;
    const endOffset = answer.endOffset;
    expect(endOffset).toBe(2);
    const batches = [...iterateBatches(answer.batches)];
    expect(batches.length, 'a batch that moves the reader on').toBeGreaterThan(0);
    const last = batches.at(-1)!.header;
    expect(last.baseOffset + last.lastOffsetDelta + 1).toBe(endOffset);
    expect(ms).toBeLessThan(1_000);
    expect(unhandled).toEqual([]);
  });
});
