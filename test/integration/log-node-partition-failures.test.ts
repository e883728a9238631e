// Proves that a storage error stops only its own partition and that a caught-up reader never
// waits in a gap: a segment roll that fails answers its appends 503 partition_failed while the
// node serves every other partition; a duplicate or refused batch never rolls a segment, so the
// last batch of the log stays in the active segment and compaction cannot leave a reader stuck.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { encodeFrames } from '../../shared/partition-frames.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, type RunningLogNode, startLogNode } from '../../log-node/index.js';
import { baseName } from '../../log-node/segment-files.js';
import { HttpLogClient } from '../../shared/http-log-client.js';
import { partitionDirOf, tempDir, type TempDir } from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const TOPIC = 'c';
/** No call here should take long; a hang (an append never answered) fails within this. */
const CALL_MS_MAX = 5_000;

const open: { node: RunningLogNode; dir: TempDir }[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  process.off('unhandledRejection', onUnhandled);
  for (const { node, dir } of open.splice(0)) {
    await node.stop();
    dir.cleanup();
  }
});

async function start(options: Omit<LogNodeOptions, 'dataDir'>) {
  const dir = tempDir('partition-failures');
  const node = await startLogNode({ dataDir: dir.path, port: 0, logger, ...options });
  open.push({ node, dir });
  return { node, dir };
}

async function call(url: string, route: string, init: { method?: string; body?: Uint8Array } = {}) {
  const started = Date.now();
  const response = await fetch(url + route, { ...init, signal: AbortSignal.timeout(CALL_MS_MAX) });
  const bytes = Buffer.from(await response.arrayBuffer());
  let json: any = null;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    json = null;
  }
  return {
    status: response.status,
    headers: response.headers,
    bytes,
    json,
    ms: Date.now() - started,
  };
}

const append = (url: string, partition: number, batch: Uint8Array) =>
  call(url, `/internal/topics/${TOPIC}/partitions/${partition}/append`, {
    method: 'POST',
    body: batch,
  });

const read = (url: string, partition: number, query: string) =>
  call(url, `/internal/topics/${TOPIC}/partitions/${partition}/records?${query}`);

/** A new idempotent producer of the node (epoch 0). */
const newProducer = (url: string) => new HttpLogClient(url).initProducerId();

/** One record of `valueBytes`; with a producer, it is that producer's record `baseSequence`. */
function valueBatch(
  key: string,
  valueBytes: number,
  options: {
    producer?: { producerId: number; producerEpoch: number };
    baseSequence?: number;
    timestampMs?: number;
  } = {},
) {
  return encodeBatch(
    [{ key, value: Buffer.alloc(valueBytes, 0x61), timestampMs: options.timestampMs ?? T0 }],
    { ...options.producer, baseSequence: options.baseSequence },
  );
}

describe('a segment roll that fails', () => {
  it('answers its appends 503 partition_failed, stops only that partition and shows why', async () => {
    const { node, dir } = await start({
      partitions: 2,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
    });
    const first = await append(node.url, 0, valueBatch('a', 500));
    expect(first.json).toEqual({ baseOffset: 0, lastOffset: 0, duplicate: false });
    // The next segment's .log file cannot be created: a directory holds its name.
    fs.mkdirSync(path.join(partitionDirOf(dir.path, TOPIC, 0), `${baseName(1)}.log`));

    // Both need the roll; the second may be queued behind the first or arrive after the failure.
    const answers = await Promise.all([
      append(node.url, 0, valueBatch('b', 500)),
      append(node.url, 0, valueBatch('c', 500)),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.json.error).toMatchObject({
        code: 'partition_failed',
        topic: TOPIC,
        partition: 0,
      });
    }

    // The node goes on serving partition 1, alone and beside partition 0 in one request.
    expect((await append(node.url, 1, valueBatch('d', 500))).json).toMatchObject({ baseOffset: 0 });
    const multi = await call(node.url, '/internal/append', {
      method: 'POST',
      body: encodeFrames([
        { topic: TOPIC, partition: 0, bytes: valueBatch('e', 10) },
        { topic: TOPIC, partition: 1, bytes: valueBatch('f', 10) },
      ]),
    });
    expect(multi.status).toBe(200);
    expect(multi.json.partitions[0]).toMatchObject({ topic: TOPIC, partition: 0, status: 503 });
    expect(multi.json.partitions[0].error.code).toBe('partition_failed');
    expect(multi.json.partitions[1]).toMatchObject({ topic: TOPIC, partition: 1, baseOffset: 1 });
    const read1 = await read(node.url, 1, 'offset=0');
    expect(read1.status).toBe(200);
    expect(read1.headers.get('tailbase-end-offset')).toBe('2');

    // The stopped partition still serves what it acknowledged, and nothing after it.
    const read0 = await read(node.url, 0, 'offset=0');
    expect(read0.status).toBe(200);
    expect(read0.headers.get('tailbase-end-offset')).toBe('1');
    // Every other topic-partition, the internal topics' partition 0 among them, goes on.
    const status = await call(node.url, '/internal/status');
    const statuses = status.json.partitions as {
      topic: string;
      partition: number;
      error?: string;
    }[];
    const failed = statuses.filter((p) => p.error !== undefined);
    expect(failed.map(({ topic, partition }) => ({ topic, partition }))).toEqual([
      { topic: TOPIC, partition: 0 },
    ]);
    expect(failed[0].error).toMatch(/EEXIST|EISDIR/);
    expect(statuses.some((p) => p.topic === TOPIC && p.partition === 1)).toBe(true);
    const ready = await call(node.url, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.json.failedPartitions).toEqual([{ topic: TOPIC, partition: 0 }]);
    expect(unhandled).toEqual([]);
  });
});

describe('a batch that is not written', () => {
  it('never rolls a segment: a duplicate or a refused batch, past the size or the age', async () => {
    let now = T0;
    const { node, dir } = await start({
      partitions: 1,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
      segmentMsMax: 60_000,
      clock: { nowMs: () => now },
    });
    const producer = await newProducer(node.url);
    const seq0 = valueBatch('a', 500, { producer, baseSequence: 0 });
    expect((await append(node.url, 0, seq0)).json).toEqual({
      baseOffset: 0,
      lastOffset: 0,
      duplicate: false,
    });
    const logs = () =>
      fs.readdirSync(partitionDirOf(dir.path, TOPIC, 0)).filter((n) => n.endsWith('.log'));

    expect((await append(node.url, 0, seq0)).json).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    const gap = await append(node.url, 0, valueBatch('a', 500, { producer, baseSequence: 5 }));
    expect(gap.status).toBe(409);
    now += 120_000;
    expect((await append(node.url, 0, seq0)).json).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    expect(logs()).toEqual([`${baseName(0)}.log`]);

    // The next batch written rolls as it always did.
    const next = await append(node.url, 0, valueBatch('b', 500, { producer, baseSequence: 1 }));
    expect(next.json).toEqual({ baseOffset: 1, lastOffset: 1, duplicate: false });
    expect(logs()).toEqual([`${baseName(0)}.log`, `${baseName(1)}.log`]);
    expect(unhandled).toEqual([]);
  });

  it('leaves no gap at the end of the log for compaction: a read past the last record answers at once', async () => {
    let now = T0;
    const { node } = await start({
      partitions: 1,
      segmentBytesMax: 1000,
      batchBytesMax: 1000,
      deleteRetentionMs: 500,
      cleanerIntervalMs: 3_600_000,
      clock: { nowMs: () => now },
    });
    const producer = await newProducer(node.url);
    const seq0 = valueBatch('A', 500, { producer, baseSequence: 0 });
    expect((await append(node.url, 0, seq0)).json).toMatchObject({ baseOffset: 0 });
    const tombstone = encodeBatch([{ key: 'K', value: null, timestampMs: T0 }]);
    expect((await append(node.url, 0, tombstone)).json).toMatchObject({ baseOffset: 1 });
    // A retry whose size would have rolled the segment; nothing of it is written.
    expect((await append(node.url, 0, seq0)).json).toMatchObject({
      baseOffset: 0,
      duplicate: true,
    });
    now += 1_000;
    await node.cleaner.runOnce();

    // A reader that has applied offset 0 asks for 1: the answer must carry it to the end offset.
    const answer = await read(node.url, 0, 'offset=1&wait_ms=2000');
    expect(answer.status).toBe(200);
    const endOffset = Number(answer.headers.get('tailbase-end-offset'));
    expect(endOffset).toBe(2);
    const batches = [...iterateBatches(answer.bytes)];
    expect(batches.length, 'a batch that moves the reader on').toBeGreaterThan(0);
    const last = batches.at(-1)!.header;
    expect(last.baseOffset + last.lastOffsetDelta + 1).toBe(endOffset);
    expect(answer.ms).toBeLessThan(1_000);
    expect(unhandled).toEqual([]);
  });
});
