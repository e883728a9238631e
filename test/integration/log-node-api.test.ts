// Proves the log-node's API contract on a real HTTP server: retention deletes only whole closed
// segments and moves the log start; long-polls answer as soon as data arrives and are bounded;
// every limit and every bad input gets a 4xx JSON error that names it and changes nothing;
// idempotent retries and sequence gaps; fsync=interval serves and keeps data too.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { HttpLogClient } from '../../shared/http-log-client.js';
import { encodeFrames } from '../../shared/partition-frames.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, type RunningLogNode, startLogNode } from '../../log-node/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { partitionDirOf, readPartition, sleep, tempDir, type TempDir } from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;
const TOPIC = 'events';

/** The offsets of TOPIC's partitions, without the topic (the internal topics' are left out). */
async function topicOffsets(client: LogClient) {
  return (await client.offsets())
    .filter((offsets) => offsets.topic === TOPIC)
    .map(({ topic: _topic, ...offsets }) => offsets);
}

const open: { node: RunningLogNode; dir: TempDir }[] = [];
afterEach(async () => {
  for (const { node, dir } of open.splice(0)) {
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
    ...options,
  });
  open.push({ node, dir });
  return { node, dir, client: new HttpLogClient(node.url) };
}

function batch(
  count: number,
  options: { valueBytes?: number; timestampMs?: number; key?: string } = {},
) {
  const records: LogRecord[] = Array.from({ length: count }, (_, i) => ({
    key: `${options.key ?? 'k'}${i}`,
    value: Buffer.alloc(options.valueBytes ?? 40, 0x61),
    timestampMs: options.timestampMs ?? T0,
  }));
  return encodeBatch(records);
}

async function call(url: string, method: string, route: string, body?: Uint8Array) {
  const response = await fetch(url + route, { method, body });
  const text = await response.text();
  let json: { error?: Record<string, unknown> } | null = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: response.status, json, text };
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
    const below = await call(
      node.url,
      'GET',
      `/internal/topics/events/partitions/0/records?offset=${logStartOffset - 1}`,
    );
    expect(below.status).toBe(400);
    expect(below.json?.error).toMatchObject({
      code: 'offset_out_of_range',
      logStartOffset,
      endOffset,
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
    const third = await call(
      node.url,
      'GET',
      '/internal/topics/events/partitions/0/records?offset=0&wait_ms=1000',
    );
    expect(third.status).toBe(503);
    expect(third.json?.error).toMatchObject({
      code: 'too_many_long_polls',
      limit: 'longPollsMax',
      max: 2,
    });
    await client.append(TOPIC, 0, batch(1));
    await client.append(TOPIC, 1, batch(1));
    await Promise.all(waiting);
    expect(node.node.status().longPolls).toBe(0);
    expect((await client.read(TOPIC, 0, 1, { waitMs: 50 })).batches.length).toBe(0);
  });
});

describe('multi-partition fetch', () => {
  it('answers each partition, fails one alone, and long-polls until any partition has data', async () => {
    const { node, client } = await start({ partitions: 3, longPollWaitMsMax: 5000 });
    await client.append(TOPIC, 0, batch(2));
    await client.append(TOPIC, 2, batch(1));
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
      details: { logStartOffset: 0, endOffset: 1 },
    });

    const started = Date.now();
    const idle = [
      { topic: TOPIC, partition: 0, offset: 2 },
      { topic: TOPIC, partition: 1, offset: 0 },
    ];
    const waiting = client.fetch(idle, { waitMs: 5000 });
    for (let i = 0; i < 200 && node.node.status().longPolls < 1; i++) await sleep(5);
    expect(node.node.status().longPolls).toBe(1);
    const ack = await client.append(TOPIC, 1, batch(3));
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

  it('rejects a bad partition list with 400', async () => {
    const { node, client } = await start({ partitionsMax: 4 });
    await client.ensureTopic(TOPIC);
    for (const from of [
      '',
      '0:1',
      'events:0',
      'events:0:x',
      'events:0:-1',
      'events:a:1',
      'events:0:1,events:0:2',
      'events:0:0,events:1:0,events:2:0,events:3:0,events:4:0',
      'events:0:1e3',
    ]) {
      const answer = await call(node.url, 'GET', `/internal/fetch?from=${from}`);
      expect([answer.status, answer.json?.error?.code], from).toEqual([400, 'invalid_parameter']);
    }
    const [unknown] = await client.fetch([{ topic: TOPIC, partition: 9, offset: 0 }]);
    expect('error' in unknown && unknown.error).toMatchObject({ code: 'invalid_partition' });
  });
});

describe('limits and bad input', () => {
  it('each limit is a 4xx JSON error naming it, and the log is unchanged', async () => {
    const { node, client } = await start({
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
      const answer = await call(
        node.url,
        'POST',
        '/internal/topics/events/partitions/0/append',
        body,
      );
      expect({ status: answer.status, ...answer.json?.error }, code).toMatchObject({
        status,
        code,
        limit,
      });
    }
    expect((await topicOffsets(client))[0].endOffset).toBe(1);
  });

  it('garbage bodies, bad partitions and bad read parameters get 4xx and change nothing', async () => {
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
      const answer = await call(
        node.url,
        'POST',
        '/internal/topics/events/partitions/0/append',
        body,
      );
      expect(answer.status, name).toBe(400);
      expect(answer.json?.error?.code, name).toMatch(/^invalid_(batch|record)$/);
    }
    for (const partition of ['x', '-1', '2', '1.5', '99999999999999999999', '%20']) {
      for (const [method, route] of [
        ['POST', `/internal/topics/events/partitions/${partition}/append`],
        ['GET', `/internal/topics/events/partitions/${partition}/records?offset=0`],
        ['GET', `/internal/topics/events/partitions/${partition}/offsets`],
      ]) {
        const answer = await call(node.url, method, route, method === 'POST' ? good : undefined);
        expect([answer.status, answer.json?.error?.code], `${method} ${route}`).toEqual([
          400,
          'invalid_partition',
        ]);
      }
    }
    const queries = [
      '',
      'offset=',
      'offset=abc',
      'offset=-1',
      'offset=1e3',
      'offset=0.5',
      'offset=3',
      'offset=9007199254740993',
      'offset=0&max_bytes=0',
      'offset=0&max_bytes=x',
      'offset=0&max_bytes=65537',
      'offset=0&wait_ms=-1',
      'offset=0&wait_ms=x',
      'offset=0&wait_ms=5001',
    ];
    for (const query of queries) {
      const answer = await call(
        node.url,
        'GET',
        `/internal/topics/events/partitions/0/records?${query}`,
      );
      expect(answer.status, query).toBe(400);
      expect(answer.json?.error?.code, query).toMatch(/^(invalid_parameter|offset_out_of_range)$/);
      expect(answer.text, query).not.toMatch(/\n\s+at /);
    }
    const unknown = await call(node.url, 'GET', '/internal/nothing');
    expect([unknown.status, unknown.json?.error?.code]).toEqual([404, 'not_found']);
    expect(await topicOffsets(client)).toEqual([
      { partition: 0, logStartOffset: 0, endOffset: 2 },
      { partition: 1, logStartOffset: 0, endOffset: 0 },
    ]);
    expect(
      (await readPartition(client, TOPIC, 0)).batches.map((b) =>
        b.bytes.subarray(16).toString('hex'),
      ),
    ).toEqual([good.subarray(16).toString('hex')]);
  });

  it('a multi-partition append answers each frame alone; bad framing is 400 and appends nothing', async () => {
    const { node, client } = await start({ batchBytesMax: 4096, appendRequestBytesMax: 20_000 });
    const post = (body: Buffer) => call(node.url, 'POST', '/internal/append', body);
    const mixed = await post(
      encodeFrames([
        { topic: TOPIC, partition: 0, bytes: batch(2) },
        { topic: TOPIC, partition: 1, bytes: batch(3) },
        { topic: TOPIC, partition: 7, bytes: batch(1) },
        {
          topic: TOPIC,
          partition: 0,
          bytes: Buffer.from('not a batch, but long enough to hold a header....'),
        },
        { topic: TOPIC, partition: 1, bytes: batch(6, { valueBytes: 900 }) },
        { topic: TOPIC, partition: 0, bytes: batch(1) },
      ]),
    );
    expect(mixed.status).toBe(200);
    expect((mixed.json as unknown as { partitions: unknown[] }).partitions).toMatchObject([
      { partition: 0, baseOffset: 0, lastOffset: 1, duplicate: false },
      { partition: 1, baseOffset: 0, lastOffset: 2, duplicate: false },
      { partition: 7, status: 400, error: { code: 'invalid_partition' } },
      { partition: 0, status: 400, error: { code: 'invalid_batch' } },
      { partition: 1, status: 413, error: { code: 'batch_too_large', limit: 'batchBytesMax' } },
      { partition: 0, baseOffset: 2, lastOffset: 2 },
    ]);
    const whole = encodeFrames([{ topic: TOPIC, partition: 0, bytes: batch(1) }]);
    const bad: [string, Buffer, number, string][] = [
      ['empty', Buffer.alloc(0), 400, 'invalid_frames'],
      ['cut header', whole.subarray(0, 5), 400, 'invalid_frames'],
      ['cut batch', whole.subarray(0, whole.length - 1), 400, 'invalid_frames'],
      ['trailing byte', Buffer.concat([whole, Buffer.from([0])]), 400, 'invalid_frames'],
      [
        'too large',
        Buffer.concat(Array.from({ length: 300 }, () => whole)),
        413,
        'request_too_large',
      ],
    ];
    for (const [name, body, status, code] of bad) {
      const answer = await post(body);
      expect([answer.status, answer.json?.error?.code], name).toEqual([status, code]);
    }
    expect((await topicOffsets(client)).map((p) => p.endOffset)).toEqual([3, 3]);
  });

  it('appends made together still land when the log-node refuses them as one request', async () => {
    const { client } = await start({ appendRequestBytesMax: 300 });
    const [a, b] = [batch(2), batch(2)];
    expect(a.length + b.length + 16).toBeGreaterThan(300);
    const acks = await Promise.all([client.append(TOPIC, 0, a), client.append(TOPIC, 1, b)]);
    expect(acks).toEqual([
      { baseOffset: 0, lastOffset: 1, duplicate: false },
      { baseOffset: 0, lastOffset: 1, duplicate: false },
    ]);
    expect((await topicOffsets(client)).map((p) => p.endOffset)).toEqual([2, 2]);
  });

  it('an idempotent retry returns the original offsets; a sequence gap is 409', async () => {
    const { node, client } = await start();
    const { producerId } = await client.initProducerId();
    const records = (tag: string): LogRecord[] => [
      { key: tag, value: Buffer.from('{}'), timestampMs: T0 },
    ];
    const first = encodeBatch(records('a'), { producerId, producerEpoch: 0, baseSequence: 0 });
    await client.append(TOPIC, 0, batch(2));
    const ack = await client.append(TOPIC, 0, first);
    expect(ack).toEqual({ baseOffset: 2, lastOffset: 2, duplicate: false });
    expect(await client.append(TOPIC, 0, first)).toEqual({ ...ack, duplicate: true });
    const gap = await call(
      node.url,
      'POST',
      '/internal/topics/events/partitions/0/append',
      encodeBatch(records('c'), { producerId, producerEpoch: 0, baseSequence: 2 }),
    );
    expect([gap.status, gap.json?.error]).toMatchObject([
      409,
      { code: 'sequence_gap', expected: 1, sequence: 2 },
    ]);
    const stranger = encodeBatch(records('d'), {
      producerId: producerId + 100,
      producerEpoch: 0,
      baseSequence: 3,
    });
    const unknown = await call(
      node.url,
      'POST',
      '/internal/topics/events/partitions/0/append',
      stranger,
    );
    expect([unknown.status, unknown.json?.error?.code]).toEqual([409, 'unknown_producer']);
    expect((await topicOffsets(client))[0].endOffset).toBe(3);
    const second = await client.append(
      TOPIC,
      0,
      encodeBatch(records('b'), { producerId, producerEpoch: 0, baseSequence: 1 }),
    );
    expect(second).toEqual({ baseOffset: 3, lastOffset: 3, duplicate: false });
    expect(await client.append(TOPIC, 0, first)).toEqual({ ...ack, duplicate: true });
  });

  it('fsync=interval acknowledges, serves and keeps appends across a clean restart', async () => {
    const dir = tempDir('interval');
    const first = await startLogNode({
      dataDir: dir.path,
      port: 0,
      partitions: 1,
      fsync: 'interval',
      fsyncIntervalMs: 20,
      logger,
    });
    const client = new HttpLogClient(first.url);
    const sent = [batch(1), batch(4), batch(2)];
    const acks = await Promise.all(sent.map((b) => client.append(TOPIC, 0, b)));
    expect(acks.map((a) => a.lastOffset - a.baseOffset + 1).sort()).toEqual([1, 2, 4]);
    expect((await readPartition(client, TOPIC, 0)).endOffset).toBe(7);
    await first.stop();
    const { client: again } = await start({ fsync: 'always', partitions: 1 }, dir);
    const read = await readPartition(again, TOPIC, 0);
    expect(read.endOffset).toBe(7);
    expect(read.batches.length).toBe(3);
  });
});
