// Proves the partition writer against a real log-node: concurrent writes coalesce into few
// batches with dense offsets; a lost acknowledgement is retried with the same producer identity
// (from the log's InitProducerId) and sequence and appended once; a rejected batch does not
// consume its sequence; an unknown outcome moves to a fresh producer identity starting at 0, so no
// later batch is ever refused or duplicated; each (collection, partition) has a writer and a
// producer of its own;
// a batch the log certainly never took (its node refused the connection, its queue was full) is
// answered as not stored and keeps its sequence. The log is reached by its Kafka listener; the
// faults on the wire come from a proxy in front of it.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WRITER, type WriterConfig } from '../../gateway/config.js';
import { startGateway } from '../../gateway/index.js';
import { openLogNode } from '../../log-node/index.js';
import { keysIn, tempDir } from '../harness/index.js';
import { startKafkaProxy } from '../harness/kafka-proxy.js';
import { FaultyIO } from '../harness/faulty-io.js';
import { PartitionWriter } from '../../gateway/partition-writer.js';
import { closeGatewayServices, writeRecords } from '../../gateway/services.js';
import {
  decodeRecords,
  iterateBatches,
  encodeBatch,
  SEQUENCE_MAX,
  type LogRecord,
} from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { TailbaseError } from '../../shared/errors.js';
import { type AppendResult, type LogClient } from '../../shared/log-api.js';
import { gatewayApp, silent, startLog, type LogFixture } from './gateway-harness.js';

const PARTITIONS = 4;
let fixture: LogFixture;
/** A log client whose broker is down: nothing listens on its port, so it refuses every connection. */
let down: LogFixture;

beforeAll(async () => {
  fixture = await startLog(PARTITIONS);
  down = await startLog(PARTITIONS);
  await down.node.stop();
});

afterAll(async () => {
  down.client.close();
  await rm(down.dir, { recursive: true, force: true });
  await fixture.stop();
});

/** `name` made a key of the partition (Kafka's partitioner): the listener refuses it elsewhere. */
const keyIn = (partition: number, name: string, partitions = PARTITIONS) =>
  keysIn(partition, partitions, 1, `${name}-`)[0];

/** The collection (topic) these writers write to. */
const TOPIC = 'w';

const record = (key: string, bytes = 16): LogRecord => ({
  key,
  value: Buffer.from(JSON.stringify({ pad: 'x'.repeat(bytes) })),
  timestampMs: Date.now(),
});

async function batchesOf(partition: number, log: LogClient = fixture.client, topic = TOPIC) {
  const read = await log.read(topic, partition, 0);
  return [...iterateBatches(read.batches)].map(({ header, bytes }) => ({
    producer: `${header.producerId}/${header.producerEpoch}`,
    sequence: header.baseSequence,
    keys: decodeRecords(bytes).map((r) => r.key),
  }));
}

/**
 * The real log underneath; `fail` decides per call whether the answer is lost or never sent
 * (`down`: sent to a port nothing listens on, through the real client).
 */
function faulty(
  fail: (
    call: number,
  ) => 'lose-answer' | 'unreachable' | 'refuse' | 'misconfigured' | 'down' | null,
): LogClient {
  let calls = 0;
  return {
    cluster: () => fixture.client.cluster(),
    topics: () => fixture.client.topics(),
    ensureTopic: (name, configs) => fixture.client.ensureTopic(name, configs),
    setTopicConfigs: (name, configs) => fixture.client.setTopicConfigs(name, configs),
    deleteTopic: (name) => fixture.client.deleteTopic(name),
    initProducerId: () => fixture.client.initProducerId(),
    read: (t, p, o, options) => fixture.client.read(t, p, o, options),
    fetch: (positions, options) => fixture.client.fetch(positions, options),
    fetchGroups: (partitions) => fixture.client.fetchGroups(partitions),
    offsets: () => fixture.client.offsets(),
    diskBytes: () => fixture.client.diskBytes(),
    async append(topic, partition, batch, signal): Promise<AppendResult> {
      const mode = fail(calls++);
      if (mode === 'unreachable') throw new TailbaseError(503, 'log_unreachable', 'down');
      if (mode === 'refuse') throw new TailbaseError(401, 'unauthorized', 'wrong secret');
      if (mode === 'misconfigured') {
        throw new TailbaseError(502, 'cluster_misconfigured', 'a node refused the call');
      }
      if (mode === 'down') return down.client.append(topic, partition, batch, signal);
      const result = await fixture.client.append(topic, partition, batch, signal);
      if (mode === 'lose-answer') throw new DOMException('timed out', 'TimeoutError');
      return result;
    },
  };
}

const config = { ...DEFAULT_WRITER, appendRetryBackoffMs: 1 };
const writerOn = (partition: number, log: LogClient = fixture.client, topic = TOPIC) =>
  new PartitionWriter(topic, partition, log, config, silent);

/** The fixture's log behind a Kafka proxy that decides each Produce's fate, and a client of it. */
async function proxiedLog(onProduce: Parameters<typeof startKafkaProxy>[0]['onProduce']) {
  const proxy = await startKafkaProxy({
    target: () => ({ host: '127.0.0.1', port: fixture.node.kafkaPort! }),
    onProduce,
  });
  const client = await KafkaLogClient.connect({ bootstrap: [proxy.broker], logger: silent });
  return {
    proxy,
    client,
    async close() {
      client.close();
      await proxy.close();
    },
  };
}

describe('partition writer', () => {
  it('coalesces 300 concurrent writes into few batches with dense, distinct offsets', async () => {
    const writer = writerOn(0);
    const keys = keysIn(0, PARTITIONS, 300, 'c');
    const offsets = (await Promise.all(keys.map((key) => writer.write([record(key)])))).flat();
    expect(new Set(offsets).size).toBe(300);
    expect(Math.max(...offsets) - Math.min(...offsets)).toBe(299);
    const batches = await batchesOf(0);
    expect(batches.length).toBeLessThan(30);
    // Sequences count records, as Kafka's do: each batch starts where the previous one ended.
    const starts: number[] = [];
    let next = 0;
    for (const b of batches) {
      starts.push(next);
      next += b.keys.length;
    }
    expect(batches.map((b) => b.sequence)).toEqual(starts);
    await writer.close();
  });

  it('retries a batch whose acknowledgement was lost without appending it twice', async () => {
    const writer = writerOn(
      1,
      faulty((n) => (n === 0 ? 'lose-answer' : null)),
    );
    const [offset] = await writer.write([record(keyIn(1, 'once'))]);
    const [next] = await writer.write([record(keyIn(1, 'after'))]);
    expect(next).toBe(offset + 1);
    const batches = await batchesOf(1);
    expect(batches.flatMap((b) => b.keys)).toEqual([keyIn(1, 'once'), keyIn(1, 'after')]);
    expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
    await writer.close();
  });

  it('gives each collection partition a producer of its own, each numbered from 0', async () => {
    const gateway = await gatewayApp(fixture.client, [], { logUrls: [fixture.url] });
    try {
      for (const topic of ['own-a', 'own-b']) {
        for (const key of [keyIn(0, 'own'), keyIn(1, 'own')]) {
          await writeRecords(gateway.services, topic, [record(key)], new Map());
        }
      }
      const batches = await Promise.all(
        ['own-a', 'own-b'].flatMap((topic) =>
          [0, 1].map((p) => batchesOf(p, fixture.client, topic)),
        ),
      );
      expect(batches.map((b) => b.map(({ sequence }) => sequence))).toEqual([[0], [0], [0], [0]]);
      expect(new Set(batches.map(([b]) => b.producer)).size).toBe(4);
    } finally {
      await closeGatewayServices(gateway.services);
    }
  });

  it('keeps the sequence after a rejected batch', async () => {
    const writer = writerOn(2);
    await writer.write([record(keyIn(2, 'a'))]);
    const tooBig = record(keyIn(2, 'huge'), 3 * 1024 * 1024);
    await expect(writer.write([tooBig])).rejects.toMatchObject({ status: 413 });
    await writer.write([record(keyIn(2, 'b'))]);
    const batches = await batchesOf(2);
    expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
    expect(new Set(batches.map((b) => b.producer)).size).toBe(1);
    await writer.close();
  });

  it('a refusal after a lost answer is an unknown outcome, never a free sequence', async () => {
    // The first attempt is appended but its answer lost; the retry is refused (e.g. a changed
    // secret). Keeping the sequence would have the log answer the next batch as a duplicate of
    // the first, acknowledging records it never stored.
    const writer = writerOn(
      0,
      faulty((n) => (n === 0 ? 'lose-answer' : n === 1 ? 'refuse' : null)),
    );
    const before = (await batchesOf(0)).length;
    await expect(writer.write([record(keyIn(0, 'maybe'))])).rejects.toMatchObject({
      code: 'write_outcome_unknown',
    });
    const [offset] = await writer.write([record(keyIn(0, 'next'))]);
    const batches = (await batchesOf(0)).slice(before);
    expect(batches.flatMap((b) => b.keys)).toEqual([keyIn(0, 'maybe'), keyIn(0, 'next')]);
    const read = await fixture.client.read(TOPIC, 0, offset);
    const [stored] = [...iterateBatches(read.batches)].flatMap((b) => decodeRecords(b.bytes));
    expect(stored).toMatchObject({ key: keyIn(0, 'next'), offset });
    await writer.close();
  });

  it('a node refusing the call is a definite refusal: no retry, the sequence kept', async () => {
    const writer = writerOn(
      2,
      faulty((n) => (n === 0 ? 'misconfigured' : null)),
    );
    const before = await batchesOf(2);
    await expect(writer.write([record(keyIn(2, 'refused'))])).rejects.toMatchObject({
      code: 'cluster_misconfigured',
    });
    await writer.write([record(keyIn(2, 'taken'))]);
    const after = (await batchesOf(2)).slice(before.length);
    expect(after.map((b) => b.keys)).toEqual([[keyIn(2, 'taken')]]);
    expect(after[0].sequence).toBe(0);
    await writer.close();
  });

  it('after an unknown outcome starts a fresh producer at sequence 0', async () => {
    const log = faulty((n) => (n >= 1 && n <= 3 ? 'unreachable' : null));
    const writer = writerOn(3, log);
    await writer.write([record(keyIn(3, 'first'))]);
    await expect(writer.write([record(keyIn(3, 'lost'))])).rejects.toMatchObject({
      code: 'write_outcome_unknown',
    });
    await writer.write([record(keyIn(3, 'third'))]);
    const batches = await batchesOf(3);
    expect(batches.flatMap((b) => b.keys)).toEqual([keyIn(3, 'first'), keyIn(3, 'third')]);
    expect(batches.map((b) => b.sequence)).toEqual([0, 0]);
    expect(batches[0].producer).not.toBe(batches[1].producer);
    await writer.close();
  });

  it('numbers past the int32 sequence under a fresh producer identity from 0', async () => {
    const writer = writerOn(1);
    await writer.write([record(keyIn(1, 'under-first-id'))]);
    const [firstId] = (await batchesOf(1)).slice(-1);
    // As if SEQUENCE_MAX had just been acknowledged: the next number does not fit the format.
    (writer as unknown as { nextSequence: number }).nextSequence = SEQUENCE_MAX + 1;
    await writer.write([record(keyIn(1, 'under-next-id'))]);
    const [next] = (await batchesOf(1)).slice(-1);
    expect(next).toMatchObject({ sequence: 0, keys: [keyIn(1, 'under-next-id')] });
    expect(next.producer).not.toBe(firstId.producer);
    await writer.close();
  });

  it('a bulk turned away as overloaded leaves nothing queued on any partition', async () => {
    const own = await startLog(2);
    const gateway = await gatewayApp(own.client, [], {
      logUrls: [own.url],
      writer: { lingerMs: 300, pendingBytesMax: 400 },
    });
    try {
      const [crowded, other] = [keyIn(0, 'a', 2), keyIn(1, 'b', 2)];
      // Lingers in partition 0's queue while the bulk arrives.
      const waiting = writeRecords(gateway.services, TOPIC, [record(crowded)], new Map());
      const bulk = [record(other), record(crowded, 500)];
      await expect(writeRecords(gateway.services, TOPIC, bulk, new Map())).rejects.toMatchObject({
        status: 503,
        code: 'overloaded',
      });
      await waiting;
      const offsets = (await own.client.offsets()).filter((p) => p.topic === TOPIC);
      expect(offsets.map((p) => [p.partition, p.endOffset]).sort()).toEqual([
        [0, 1],
        [1, 0],
      ]);
    } finally {
      await closeGatewayServices(gateway.services);
      await own.stop();
    }
  });

  it('refuses to start with batches the log would refuse', async () => {
    // The log's limits reach the gateway through the log contract's cluster(): in process, as
    // `tailbase start` binds them (a Kafka broker publishes no records-per-batch bound).
    const dir = tempDir('strict-log');
    const strict = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      recordsPerBatchMax: 100,
      logger: silent,
    });
    try {
      const start = (writer: Partial<WriterConfig>) =>
        startGateway(
          { logUrls: [], serveUrls: [], writer },
          { log: strict.client, logger: silent },
        );
      await expect(start({})).rejects.toThrow(
        /batchRecordsMax 1000 exceeds the log's recordsPerBatchMax 100/,
      );
      const fitting = await start({ batchRecordsMax: 100 });
      await fitting.stop();
    } finally {
      await strict.stop();
      dir.cleanup();
    }
  });

  it('a log-node that refuses the connection: not stored, producer and sequence kept', async () => {
    // Nothing listens on the port, so the request never left: every attempt is refused before
    // the log could take the batch, and the next batch must be numbered right after the last one.
    const writer = writerOn(
      3,
      faulty((n) => (n >= 1 && n <= 3 ? 'down' : null)),
    );
    const before = (await batchesOf(3)).length;
    await writer.write([record(keyIn(3, 'first'))]);
    await expect(writer.write([record(keyIn(3, 'refused'))])).rejects.toMatchObject({
      status: 503,
      code: 'log_unavailable',
      details: { topic: TOPIC, partition: 3 },
    });
    await writer.write([record(keyIn(3, 'after'))]);
    const batches = (await batchesOf(3)).slice(before);
    expect(batches.flatMap((b) => b.keys)).toEqual([keyIn(3, 'first'), keyIn(3, 'after')]);
    expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
    expect(batches[1].producer).toBe(batches[0].producer);
    await writer.close();
  });

  /**
   * On a real log-node made with `options`: a first write is stored, `refuse` makes the log
   * certainly refuse the next one, which must fail with `refusal` (not stored); once `heal`ed, the
   * writer goes on under the same producer at the next sequence.
   */
  async function notStoredThenResumed(
    options: Partial<Parameters<typeof openLogNode>[0]>,
    refusal: { status: number; code: string },
    refuse: () => { bytes?: number; heal(): void },
  ) {
    const dir = tempDir('refusing-log');
    const node = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
      ...options,
    });
    const client = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${node.kafkaPort}`],
      logger: silent,
    });
    try {
      const writer = writerOn(0, client);
      await writer.write([record('first')]);
      const refusing = refuse();
      await expect(writer.write([record('refused', refusing.bytes)])).rejects.toMatchObject({
        ...refusal,
        details: { topic: TOPIC, partition: 0 },
      });
      refusing.heal();
      await writer.write([record('after')]);
      const batches = await batchesOf(0, client);
      expect(batches.flatMap((b) => b.keys)).toEqual(['first', 'after']);
      expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
      expect(batches[1].producer).toBe(batches[0].producer);
      await writer.close();
    } finally {
      client.close();
      await node.stop();
      dir.cleanup();
    }
  }

  it('a full append queue on the log: not stored, producer and sequence kept', async () => {
    // A batch over appendQueueBytesMax is refused as append_queue_full on every attempt, by the
    // real log-node, before it is queued.
    await notStoredThenResumed(
      { appendQueueBytesMax: 300 },
      { status: 503, code: 'append_queue_full' },
      () => ({ bytes: 400, heal: () => undefined }),
    );
  });

  it('a full disk on the log: 507 disk_full, not stored, producer and sequence kept', async () => {
    // The log-node answers disk_full only after cutting the round's bytes off again: the batch is
    // certainly not stored, so its writers hear that, not an unknown outcome.
    const io = new FaultyIO();
    await notStoredThenResumed({ fileIO: io }, { status: 507, code: 'disk_full' }, () => {
      io.spaceBytes = 0;
      return { heal: () => (io.spaceBytes = null) };
    });
  });

  it('a lost answer then refused connections is still an unknown outcome', async () => {
    // The first attempt is appended but its answer lost; the node then goes down. The log holds
    // the batch, so "not stored" would be a lie and sequence 0 is taken.
    const writer = writerOn(
      1,
      faulty((n) => (n === 0 ? 'lose-answer' : n <= 2 ? 'down' : null)),
    );
    const before = (await batchesOf(1)).length;
    await expect(writer.write([record(keyIn(1, 'maybe'))])).rejects.toMatchObject({
      code: 'write_outcome_unknown',
    });
    await writer.write([record(keyIn(1, 'next'))]);
    const batches = (await batchesOf(1)).slice(before);
    expect(batches.flatMap((b) => b.keys)).toEqual([keyIn(1, 'maybe'), keyIn(1, 'next')]);
    expect(batches.map((b) => b.sequence)).toEqual([0, 0]);
    expect(batches[1].producer).not.toBe(batches[0].producer);
    await writer.close();
  });

  it('a connection reset after the request was sent is an unknown outcome', async () => {
    // The listener read the whole Produce and then the connection was cut before its answer: it
    // may have appended it. The producer id comes through the same proxy, so what is cut is the
    // append, on every attempt.
    let calls = 0;
    const log = await proxiedLog(() => {
      calls++;
      return 'cut';
    });
    try {
      const writer = writerOn(0, log.client);
      await expect(writer.write([record(keyIn(0, 'cut'))])).rejects.toMatchObject({
        code: 'write_outcome_unknown',
      });
      expect(calls).toBe(config.appendAttemptsMax);
      await writer.close();
    } finally {
      await log.close();
    }
  });

  it('appends sent in one request are answered one by one', async () => {
    // Appends to two partitions made together travel as one Produce; the listener refuses one
    // batch (a key outside its partition) and stores the other: one failing says nothing of its
    // neighbour, which the log appended.
    const log = await proxiedLog(() => 'forward');
    try {
      const topic = 'together';
      await log.client.ensureTopic(topic);
      const [taken, refused] = await Promise.allSettled([
        log.client.append(topic, 0, encodeBatch([record(keyIn(0, 'taken'))])),
        log.client.append(topic, 1, encodeBatch([record(keyIn(0, 'misplaced'))])),
      ]);
      expect(log.proxy.stats.produceRequests).toBe(1);
      expect(taken).toEqual({
        status: 'fulfilled',
        value: { baseOffset: 0, lastOffset: 0, duplicate: false },
      });
      expect(refused).toMatchObject({ status: 'rejected', reason: { status: 400 } });
      expect((await batchesOf(0, fixture.client, topic)).map((b) => b.keys)).toEqual([
        [keyIn(0, 'taken')],
      ]);
      expect(await batchesOf(1, fixture.client, topic)).toEqual([]);
    } finally {
      await log.close();
    }
  });
});
