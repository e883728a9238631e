// Proves the log-node's log contract over its Kafka listener (the way every client reaches it):
// retention deletes only whole closed segments and moves the log start; long-polls answer as soon
// as data arrives and are bounded; every limit and every bad input is an error that names it and
// changes nothing; appends sent together are answered each alone; idempotent retries and sequence
// gaps; fsync=interval serves and keeps data too. Over HTTP, where the log-node serves only its
// operators' routes, the internal log API's routes answer 404 as any unknown route.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, type RunningLogNode, startLogNode } from '../../log-node/index.js';
import type { LogClient } from '../../shared/log-api.js';
import {
  keysIn,
  partitionDirOf,
  readPartition,
  sleep,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const TOPIC = 'events';
/** A long poll bounded at 5000 ms answers no sooner than this (a timer may fire a little early). */
const LONG_POLL_WAITED_MS_MIN = 4_900;

/** The offsets of TOPIC's partitions, without the topic (the internal topics' are left out). */
async function topicOffsets(client: LogClient) {
  return (await client.offsets())
    .filter((offsets) => offsets.topic === TOPIC)
    .map(({ topic: _topic, ...offsets }) => offsets);
}

const open: { node: RunningLogNode; dir: TempDir; client: KafkaLogClient }[] = [];
afterEach(async () => {
  for (const { node, dir, client } of open.splice(0)) {
    client.close();
    await node.stop();
    dir.cleanup();
  }
});

async function start(options: Omit<LogNodeOptions, 'dataDir'> = {}, dir = tempDir('api')) {
  const node = await startLogNode({
    dataDir: dir.path,
    port: 0,
    partitions: 2,
    logger,
    kafka: { host: '127.0.0.1', port: 0 },
    ...options,
  });
  const client = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${node.kafkaPort}`],
    logger,
  });
  open.push({ node, dir, client });
  return { node, dir, client };
}

/** `count` records whose keys Kafka's partitioner puts in `partition` (of `partitions`). */
function batch(
  count: number,
  options: {
    valueBytes?: number;
    timestampMs?: number;
    key?: string;
    partition?: number;
    partitions?: number;
  } = {},
) {
  const keys = keysIn(options.partition ?? 0, options.partitions ?? 2, count, options.key ?? 'k');
  const records: LogRecord[] = keys.map((key) => ({
    key,
    value: jsonValue(options.valueBytes ?? 40),
    timestampMs: options.timestampMs ?? T0,
  }));
  return encodeBatch(records);
}

/** A JSON object of exactly `bytes` bytes: the listener takes nothing else as a document. */
function jsonValue(bytes: number): Buffer {
  return Buffer.from(`{"p":"${'a'.repeat(bytes - 8)}"}`);
}

/** The error a call rejected with. */
async function failure(call: Promise<unknown>): Promise<Record<string, unknown>> {
  const error = await call.then(
    () => null,
    (reason: unknown) => reason,
  );
  expect(error, 'the call must fail').not.toBeNull();
  return error as Record<string, unknown>;
}

function segmentLogs(dataDir: string, partition = 0): Map<string, Buffer> {
  const dir = partitionDirOf(dataDir, TOPIC, partition);
  const names = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.log'))
    .sort();
  return new Map(names.map((n) => [n, fs.readFileSync(path.join(dir, n))]));
}

describe('retention (cleanupPolicy delete)', () => {
  it('by retentionBytes: deletes the oldest whole closed segments and moves the log start', async () => {
    const { node, dir, client } = await start({
      cleanupPolicy: 'delete',
      segmentBytesMax: 2048,
      batchBytesMax: 2048,
      retentionBytes: 5000,
    });
    for (let n = 0; n < 30; n++) await client.append(TOPIC, 0, batch(3, { valueBytes: 60 + n }));
    const before = segmentLogs(dir.path);
    const { endOffset } = (await topicOffsets(client))[0];
    const summary = (await node.cleaner.runOnce()).find((s) => s.topic === TOPIC)!;
    const after = segmentLogs(dir.path);

    const names = [...before.keys()];
    const removed = names.slice(0, summary.segmentsDeleted);
    expect(removed.length).toBeGreaterThan(0);
    expect([...after.keys()]).toEqual(names.slice(removed.length));
    for (const [name, bytes] of after)
      expect(bytes.equals(before.get(name)!), `${name} untouched`).toBe(true);
    expect(after.has(names.at(-1)!), 'the active segment stays').toBe(true);
    const sizes = [...after.values()].map((b) => b.length);
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(5000);
    expect(total - sizes[0]).toBeLessThan(5000);

    const logStartOffset = Number([...after.keys()][0].slice(0, 20));
    expect((await topicOffsets(client))[0]).toEqual({ partition: 0, logStartOffset, endOffset });
    const [below] = await client.fetch([
      { topic: TOPIC, partition: 0, offset: logStartOffset - 1 },
    ]);
    expect('error' in below && below.error).toMatchObject({
      status: 400,
      code: 'offset_out_of_range',
    });
    const first = await readPartition(client, TOPIC, 0, { fromOffset: logStartOffset });
    expect(first.batches[0].header.baseOffset).toBe(logStartOffset);
    expect((await client.append(TOPIC, 0, batch(1))).baseOffset).toBe(endOffset);
  });

  it('by retentionMs with an injected clock: only segments wholly past it go, never the active one', async () => {
    let now = T0;
    const { node, dir, client } = await start({
      cleanupPolicy: 'delete',
      segmentBytesMax: 2048,
      batchBytesMax: 2048,
      retentionMs: 60_000,
      clock: { nowMs: () => now },
    });
    const firstNew = { offset: -1 };
    for (let n = 0; n < 24; n++) {
      const old = n < 12;
      const ack = await client.append(
        TOPIC,
        0,
        batch(3, { valueBytes: 100, timestampMs: old ? T0 - 120_000 : T0 }),
      );
      if (!old && firstNew.offset < 0) firstNew.offset = ack.baseOffset;
    }
    const bases = [...segmentLogs(dir.path).keys()].map((n) => Number(n.slice(0, 20)));
    const expectedStart = Math.max(...bases.filter((b) => b <= firstNew.offset));
    expect(expectedStart).toBeGreaterThan(0);
    const { endOffset } = (await topicOffsets(client))[0];

    await node.cleaner.runOnce();
    expect((await topicOffsets(client))[0]).toEqual({
      partition: 0,
      logStartOffset: expectedStart,
      endOffset,
    });

    now = T0 + 10_000_000;
    await node.cleaner.runOnce();
    const left = [...segmentLogs(dir.path).keys()];
    expect(left).toEqual([`${String(bases.at(-1)).padStart(20, '0')}.log`]);
    expect((await topicOffsets(client))[0]).toEqual({
      partition: 0,
      logStartOffset: bases.at(-1),
      endOffset,
    });
    expect((await client.append(TOPIC, 0, batch(1))).baseOffset).toBe(endOffset);
  });
});

describe('long-poll', () => {
  it('answers as soon as data arrives, and empty after wait_ms when none does', async () => {
    const { client } = await start();
    await client.append(TOPIC, 0, batch(2));
    let started = Date.now();
    const waiting = client.read(TOPIC, 0, 2, { waitMs: 8000 });
    await sleep(100);
    const ack = await client.append(TOPIC, 0, batch(3));
    const answer = await waiting;
    expect(Date.now() - started).toBeLessThan(4000);
    expect(answer.batches.length).toBeGreaterThan(0);
    expect(answer.batches.readBigInt64BE(0)).toBe(BigInt(ack.baseOffset));

    started = Date.now();
    const empty = await client.read(TOPIC, 0, 5, { waitMs: 300 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(empty.batches.length).toBe(0);
    expect(empty.endOffset).toBe(5);
  });

  it('bounds concurrent long-polls with 503 too_many_long_polls', async () => {
    const { node, client } = await start({ longPollsMax: 2 });
    await client.ensureTopic(TOPIC);
    const waiting = [
      client.read(TOPIC, 0, 0, { waitMs: 8000 }),
      client.read(TOPIC, 1, 0, { waitMs: 8000 }),
    ];
    for (let i = 0; i < 200 && node.node.status().longPolls < 2; i++) await sleep(5);
    expect(node.node.status().longPolls).toBe(2);
    // The listener answers too_many_long_polls as Kafka's retriable REQUEST_TIMED_OUT.
    const third = await failure(client.read(TOPIC, 0, 0, { waitMs: 1000 }));
    expect(third).toMatchObject({
      status: 503,
      code: 'log_request_timed_out',
      details: { kafkaError: 'REQUEST_TIMED_OUT' },
    });
    await client.append(TOPIC, 0, batch(1));
    await client.append(TOPIC, 1, batch(1, { partition: 1 }));
    await Promise.all(waiting);
    expect(node.node.status().longPolls).toBe(0);
    expect((await client.read(TOPIC, 0, 1, { waitMs: 50 })).batches.length).toBe(0);
  });
});

describe('multi-partition fetch', () => {
  it('answers each partition, fails one alone, and long-polls until any partition has data', async () => {
    const { node, client } = await start({ partitions: 3, longPollWaitMsMax: 5000 });
    const of3 = (count: number, partition: number) => batch(count, { partition, partitions: 3 });
    await client.append(TOPIC, 0, of3(2, 0));
    await client.append(TOPIC, 2, of3(1, 2));
    const answer = await client.fetch([
      { topic: TOPIC, partition: 0, offset: 1 },
      { topic: TOPIC, partition: 1, offset: 0 },
      { topic: TOPIC, partition: 2, offset: 5 },
    ]);
    expect(answer).toHaveLength(3);
    expect(answer[0]).toMatchObject({ partition: 0, logStartOffset: 0, endOffset: 2 });
    expect('batches' in answer[0] && answer[0].batches.readBigInt64BE(0)).toBe(0n);
    expect(answer[1]).toMatchObject({ partition: 1, endOffset: 0 });
    expect('batches' in answer[1] && answer[1].batches.length).toBe(0);
    expect(answer[2]).toMatchObject({ partition: 2 });
    expect('error' in answer[2] && answer[2].error).toMatchObject({
      status: 400,
      code: 'offset_out_of_range',
    });

    const started = Date.now();
    const idle = [
      { topic: TOPIC, partition: 0, offset: 2 },
      { topic: TOPIC, partition: 1, offset: 0 },
    ];
    const waiting = client.fetch(idle, { waitMs: 5000 });
    for (let i = 0; i < 200 && node.node.status().longPolls < 1; i++) await sleep(5);
    expect(node.node.status().longPolls).toBe(1);
    const ack = await client.append(TOPIC, 1, of3(3, 1));
    const woken = await waiting;
    expect(Date.now() - started).toBeLessThan(4000);
    expect(woken.map((o) => 'batches' in o && o.batches.length > 0)).toEqual([false, true]);
    expect('batches' in woken[1] && woken[1].batches.readBigInt64BE(0)).toBe(
      BigInt(ack.baseOffset),
    );
    expect(node.node.status().longPolls).toBe(0);
    const timedOut = Date.now();
    const empty = await client.fetch([{ topic: TOPIC, partition: 0, offset: 2 }], { waitMs: 200 });
    expect(Date.now() - timedOut).toBeGreaterThanOrEqual(190);
    expect('batches' in empty[0] && empty[0].batches.length).toBe(0);
  });

  it('answers a partition the topic does not have with an error of its own', async () => {
    const { client } = await start();
    await client.ensureTopic(TOPIC);
    const [unknown] = await client.fetch([{ topic: TOPIC, partition: 9, offset: 0 }]);
    expect('error' in unknown && unknown.error).toMatchObject({ status: expect.any(Number) });
  });
});

describe('limits and bad input', () => {
  it('each limit is an error naming it, and the log is unchanged', async () => {
    const { client } = await start({
      batchBytesMax: 4096,
      recordBytesMax: 1024,
      recordsPerBatchMax: 10,
    });
    await client.append(TOPIC, 0, batch(1));
    const cases: [Buffer, number, string, string][] = [
      [batch(6, { valueBytes: 900 }), 413, 'batch_too_large', 'batchBytesMax'],
      [batch(1, { valueBytes: 1500 }), 413, 'record_too_large', 'recordBytesMax'],
      [batch(11), 413, 'too_many_records', 'recordsPerBatchMax'],
    ];
    for (const [body, status, code, limit] of cases) {
      const error = await failure(client.append(TOPIC, 0, body));
      expect(error, code).toMatchObject({ status });
      expect(String(error.message), code).toContain(limit);
    }
    expect((await topicOffsets(client))[0].endOffset).toBe(1);
  });

  it('garbage batches, bad partitions and bad offsets are refused and change nothing', async () => {
    const { node, client } = await start({ longPollWaitMsMax: 5000, readBytesMax: 65536 });
    const good = batch(2);
    await client.append(TOPIC, 0, good);
    const notUtf8 = batch(1, { key: 'z' });
    // The key's last byte: after it the value's length (one byte), 40 bytes of value, no headers.
    notUtf8[notUtf8.length - 1 - 40 - 1 - 1] = 0xff;
    const flipped = Buffer.from(good);
    flipped[good.length - 3] ^= 0x10;
    const bodies: [string, Buffer][] = [
      [
        'garbage',
        Buffer.from('not a batch at all, just text that is long enough to have a header'),
      ],
      ['empty', Buffer.alloc(0)],
      ['short', good.subarray(0, 30)],
      ['trailing byte', Buffer.concat([good, Buffer.from([0])])],
      ['two batches', Buffer.concat([good, good])],
      ['flipped bit', flipped],
      ['key not UTF-8', notUtf8],
    ];
    for (const [name, body] of bodies) {
      const error = await failure(client.append(TOPIC, 0, body));
      expect(error.status, name).toBe(400);
      expect(error.code, name).toMatch(/^invalid_(batch|record)$/);
      expect(String(error.message), name).not.toMatch(/\n\s+at /);
    }
    for (const partition of [-1, 2, 99_999]) {
      const append = await failure(client.append(TOPIC, partition, good));
      expect(append.status, `append to ${partition}`).toBeGreaterThanOrEqual(400);
      const [read] = await client.fetch([{ topic: TOPIC, partition, offset: 0 }]);
      expect('error' in read, `read of ${partition}`).toBe(true);
    }
    // Reads past the end, and a read asking more than readBytesMax (a Fetch's partition max
    // bytes).
    const reads: [string, number, number, string][] = [
      ['offset 3', 3, 65_536, 'offset_out_of_range'],
      ['offset 2^53 - 1000', 9_007_199_254_740_000, 65_536, 'offset_out_of_range'],
      ['max bytes 65537', 0, 65_537, 'invalid_parameter'],
    ];
    // A Kafka Fetch's wait past longPollWaitMsMax long-polls to that bound, as a broker honours
    // any fetch.max.wait.ms up to its own limit (over HTTP it was refused; over Kafka the refusal
    // came only when the fetch's first pass took a millisecond, so the check flaked).
    const waitStartedMs = performance.now();
    const longWait = await client.read(TOPIC, 0, 2, { maxBytes: 65_536, waitMs: 5001 });
    expect(longWait.batches.length).toBe(0);
    expect(performance.now() - waitStartedMs).toBeGreaterThanOrEqual(LONG_POLL_WAITED_MS_MIN);
    for (const [name, offset, maxBytes, code] of reads) {
      const error = await failure(client.read(TOPIC, 0, offset, { maxBytes }));
      expect(error, name).toMatchObject({ status: 400, code });
      expect(String(error.message), name).not.toMatch(/\n\s+at /);
    }
    // The internal HTTP log API is gone: its routes are unknown, like any other.
    for (const [method, route] of [
      ['GET', '/internal/nothing'],
      ['POST', '/internal/append'],
      ['GET', `/internal/fetch?from=${TOPIC}:0:0`],
      ['GET', `/internal/topics/${TOPIC}/partitions/0/records?offset=0`],
      ['GET', `/internal/topics/${TOPIC}/partitions/0/offsets`],
      ['PUT', `/internal/topics/${TOPIC}`],
      ['DELETE', `/internal/topics/${TOPIC}`],
      ['POST', '/internal/producer-ids'],
      ['POST', `/internal/topics/${TOPIC}/partitions/0/append`],
      ['GET', '/internal/topics'],
    ]) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : good;
      const unknown = await fetch(`${node.url}${route}`, { method, body });
      const answer = (await unknown.json()) as { error?: { code: string } };
      expect([unknown.status, answer.error?.code], `${method} ${route}`).toEqual([
        404,
        'not_found',
      ]);
    }
    expect(await topicOffsets(client)).toEqual([
      { partition: 0, logStartOffset: 0, endOffset: 2 },
      { partition: 1, logStartOffset: 0, endOffset: 0 },
    ]);
    expect(
      (await readPartition(client, TOPIC, 0, { maxBytes: 65_536 })).batches.map((b) =>
        b.bytes.subarray(16).toString('hex'),
      ),
    ).toEqual([good.subarray(16).toString('hex')]);
  });

  it('appends sent together are answered each alone', async () => {
    // Made in one turn, they travel to the listener together (one Produce a round, a partition
    // once a round); each batch is appended as if it came alone, and each gets its own answer.
    const { client } = await start({ batchBytesMax: 4096 });
    await client.ensureTopic(TOPIC);
    const outcomes = await Promise.allSettled([
      client.append(TOPIC, 0, batch(2)),
      client.append(TOPIC, 1, batch(3, { partition: 1 })),
      client.append(TOPIC, 7, batch(1)),
      client.append(TOPIC, 0, Buffer.from('not a batch, but long enough to hold a header....')),
      client.append(TOPIC, 1, batch(6, { valueBytes: 900, partition: 1 })),
      client.append(TOPIC, 0, batch(1, { key: 'again' })),
    ]);
    expect(outcomes).toMatchObject([
      { status: 'fulfilled', value: { baseOffset: 0, lastOffset: 1, duplicate: false } },
      { status: 'fulfilled', value: { baseOffset: 0, lastOffset: 2, duplicate: false } },
      { status: 'rejected' },
      { status: 'rejected', reason: { status: 400, code: 'invalid_batch' } },
      { status: 'rejected', reason: { status: 413, code: 'batch_too_large' } },
      { status: 'fulfilled', value: { baseOffset: 2, lastOffset: 2 } },
    ]);
    expect((await topicOffsets(client)).map((p) => p.endOffset)).toEqual([3, 3]);
  });

  it('an idempotent retry returns the original offsets; a sequence gap is 409', async () => {
    const { client } = await start();
    const { producerId } = await client.initProducerId();
    const [key] = keysIn(0, 2);
    const records = (): LogRecord[] => [{ key, value: Buffer.from('{}'), timestampMs: T0 }];
    const first = encodeBatch(records(), { producerId, producerEpoch: 0, baseSequence: 0 });
    await client.append(TOPIC, 0, batch(2));
    const ack = await client.append(TOPIC, 0, first);
    expect(ack).toEqual({ baseOffset: 2, lastOffset: 2, duplicate: false });
    expect(await client.append(TOPIC, 0, first)).toEqual({ ...ack, duplicate: true });
    const gap = await failure(
      client.append(
        TOPIC,
        0,
        encodeBatch(records(), { producerId, producerEpoch: 0, baseSequence: 2 }),
      ),
    );
    expect(gap).toMatchObject({ status: 409, code: 'sequence_gap' });
    const stranger = encodeBatch(records(), {
      producerId: producerId + 100,
      producerEpoch: 0,
      baseSequence: 3,
    });
    const unknown = await failure(client.append(TOPIC, 0, stranger));
    expect(unknown).toMatchObject({ status: 409, code: 'unknown_producer' });
    expect((await topicOffsets(client))[0].endOffset).toBe(3);
    const second = await client.append(
      TOPIC,
      0,
      encodeBatch(records(), { producerId, producerEpoch: 0, baseSequence: 1 }),
    );
    expect(second).toEqual({ baseOffset: 3, lastOffset: 3, duplicate: false });
    expect(await client.append(TOPIC, 0, first)).toEqual({ ...ack, duplicate: true });
  });

  it('fsync=interval acknowledges, serves and keeps appends across a clean restart', async () => {
    const dir = tempDir('interval');
    const { node: first, client } = await start(
      { partitions: 1, fsync: 'interval', fsyncIntervalMs: 20 },
      dir,
    );
    const sent = [
      batch(1, { partitions: 1 }),
      batch(4, { partitions: 1 }),
      batch(2, { partitions: 1 }),
    ];
    const acks = await Promise.all(sent.map((b) => client.append(TOPIC, 0, b)));
    expect(acks.map((a) => a.lastOffset - a.baseOffset + 1).sort()).toEqual([1, 2, 4]);
    expect((await readPartition(client, TOPIC, 0)).endOffset).toBe(7);
    client.close();
    await first.stop();
    open.splice(0);
    const { client: again } = await start({ fsync: 'always', partitions: 1 }, dir);
    const read = await readPartition(again, TOPIC, 0);
    expect(read.endOffset).toBe(7);
    expect(read.batches.length).toBe(3);
  });
});
