/**
 * Proves a Kafka Fetch answers exactly what Kafka's rules make of the stored log, read from the
 * segment files: for every offset of a log of many small segments, before and after compaction,
 * and max_bytes from one byte up, the answer is the stored batch holding the first offset at or
 * after the one asked (whole even past max_bytes, KIP-74), then the next batches of its segment
 * while they fit, byte for byte, with fetches pipelined on one connection; a pooled read buffer
 * is not reused while a stalled consumer's answer still waits to be written; a multi-partition
 * answer fills its partitions in the order asked within max_bytes, and one with no room left
 * still names each partition's offsets; and a consumer fetching while producers append never
 * gets a torn, corrupt or unacknowledged batch, nor misses or repeats one. The node's tail cache
 * is off, so every answer comes from the files.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkBatch,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type BatchHeader,
  type LogRecord,
} from '../../shared/batch-codec.js';
import { ApiKey, decodeResponse, ErrorCode, type ResponseBody } from '../../shared/kafka/index.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode, type LogNodeOptions, type OpenLogNode } from '../../log-node/index.js';
import { RawKafkaConnection } from '../harness/kafka.js';
import {
  lastOffsetOf,
  partitionDirOf,
  type Random,
  readSegmentFiles,
  seededRandom,
  tempDir,
  testSeed,
  type TempDir,
} from '../harness/index.js';

const TOPIC = 'feed';
const KEYS = 12;
/** Fetches sent before their answers are read. */
const PIPELINED = 16;

interface Running {
  node: OpenLogNode;
  dir: TempDir;
  connection: RawKafkaConnection;
}
let running: Running | undefined;
afterEach(async () => {
  running?.connection.destroy();
  await running?.node.stop();
  running?.dir.cleanup();
  running = undefined;
});

async function start(options: Partial<LogNodeOptions>): Promise<Running> {
  const dir = tempDir('kafka-fetch-exact');
  const node = await openLogNode({
    dataDir: dir.path,
    partitions: 2,
    tailCacheBytesMax: 0,
    cleanerIntervalMs: 3_600_000,
    logger: createLogger('log-node', 'silent'),
    kafka: { host: '127.0.0.1', port: 0 },
    ...options,
  });
  const connection = await RawKafkaConnection.open(node.kafkaPort!);
  running = { node, dir, connection };
  return running;
}

function randomBatch(random: Random, n: number): LogRecord[] {
  return Array.from({ length: random.int(1, 8) }, (_, i) => ({
    key: `k${random.int(0, KEYS - 1)}`,
    value:
      random.next() < 0.15
        ? null
        : Buffer.from(JSON.stringify({ n, i, pad: '.'.repeat(random.int(0, 300)) })),
    timestampMs: 1_800_000_000_000,
  }));
}

interface StoredBatch {
  header: BatchHeader;
  bytes: Buffer;
}

/** Each segment file's batches, oldest segment first: the truth a fetch is held against. */
function segmentsOf(dataDir: string, partition: number): StoredBatch[][] {
  return readSegmentFiles(partitionDirOf(dataDir, TOPIC, partition)).map((file) => file.batches);
}

/**
 * Kafka's answer for one partition: the batch holding the first offset >= `offset`, whole, when
 * it is the first of the answer (else only within roomBytes), then the batches after it in its
 * segment while the bytes stay within roomBytes.
 */
function expectedBatches(
  segments: readonly StoredBatch[][],
  offset: number,
  roomBytes: number,
  firstOfAnswer: boolean,
): Buffer {
  for (const batches of segments) {
    const at = batches.findIndex((batch) => lastOffsetOf(batch.header) >= offset);
    if (at < 0) continue;
    const taken: Buffer[] = [];
    let bytes = 0;
    for (const batch of batches.slice(at)) {
      const fits = bytes + batch.bytes.length <= roomBytes;
      if (!fits && !(taken.length === 0 && firstOfAnswer)) break;
      taken.push(batch.bytes);
      bytes += batch.bytes.length;
    }
    return Buffer.concat(taken);
  }
  return Buffer.alloc(0);
}

type FetchAnswer = ResponseBody<typeof ApiKey.Fetch>;

function fetchBody(
  positions: readonly { partition: number; offset: number; partitionMaxBytes: number }[],
  maxBytes: number,
) {
  return {
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes,
    topics: [
      {
        topic: TOPIC,
        partitions: positions.map(({ partition, offset, partitionMaxBytes }) => ({
          partition,
          fetchOffset: offset,
          partitionMaxBytes,
        })),
      },
    ],
  };
}

/** Fetches pipelined PIPELINED at a time on one connection; the answers in the order asked. */
async function fetchAll(
  connection: RawKafkaConnection,
  bodies: readonly ReturnType<typeof fetchBody>[],
): Promise<FetchAnswer[]> {
  const answers: FetchAnswer[] = [];
  for (let at = 0; at < bodies.length; at += PIPELINED) {
    const group = bodies.slice(at, at + PIPELINED);
    for (const body of group) connection.sendRequest(ApiKey.Fetch, 12, body);
    for (let i = 0; i < group.length; i++) {
      answers.push(decodeResponse(ApiKey.Fetch, 12, await connection.nextFrame()).body);
    }
  }
  return answers;
}

/** Every offset of both partitions, at every max_bytes of `sizes`, against the segment files. */
async function checkEveryOffset(run: Running, sizes: readonly number[]): Promise<void> {
  for (let partition = 0; partition < 2; partition++) {
    const end = endOf(segmentsOf(run.dir.path, partition));
    const asked = Array.from({ length: end + 1 }, (_, offset) => offset).flatMap((offset) =>
      sizes.map((maxBytes) => ({ offset, maxBytes })),
    );
    await checkFetches(run, partition, asked);
  }
}

const endOf = (segments: readonly StoredBatch[][]) =>
  lastOffsetOf(segments.flat().at(-1)!.header) + 1;

/** One partition's fetches, pipelined, each answer held against the segment files. */
async function checkFetches(
  run: Running,
  partition: number,
  asked: readonly { offset: number; maxBytes: number }[],
): Promise<void> {
  const segments = segmentsOf(run.dir.path, partition);
  const end = endOf(segments);
  const answers = await fetchAll(
    run.connection,
    asked.map(({ offset, maxBytes }) =>
      fetchBody([{ partition, offset, partitionMaxBytes: maxBytes }], 1 << 20),
    ),
  );
  answers.forEach((answer, i) => {
    const { offset, maxBytes } = asked[i];
    const got = answer.responses[0].partitions[0];
    const where = `partition ${partition} offset ${offset} max_bytes ${maxBytes}`;
    expect(got.errorCode, where).toBe(ErrorCode.NONE);
    expect(got.highWatermark, where).toBe(BigInt(end));
    expect(
      Buffer.from(got.records ?? []).equals(expectedBatches(segments, offset, maxBytes, true)),
      where,
    ).toBe(true);
  });
}

describe('Fetch against the segment files', () => {
  it('every offset, every max_bytes, across segments, before and after compaction', async () => {
    const random = seededRandom(testSeed('kafka fetch exact'));
    const run = await start({
      segmentBytesMax: 8192,
      batchBytesMax: 4096,
      indexIntervalBytes: 512,
      cleanerMinDirtyRatio: 0,
    });
    const { client } = run.node;
    for (let n = 0; n < 90; n++) {
      await client.append(TOPIC, n % 2, encodeBatch(randomBatch(random, n)));
    }
    const segmentsBefore = segmentsOf(run.dir.path, 0);
    expect(segmentsBefore.length, 'the log spans many segments').toBeGreaterThanOrEqual(4);
    // 1 byte: the first batch alone; 700: a few; 5000: past a segment's batches.
    const sizes = [1, 700, 5000, random.int(62, 4000)];
    await checkEveryOffset(run, sizes);

    await run.node.cleaner.runOnce();
    const batchesAfter = segmentsOf(run.dir.path, 0).flat().length;
    expect(batchesAfter, 'compaction removed batches').toBeLessThan(segmentsBefore.flat().length);
    await checkEveryOffset(run, sizes);
  });

  it('large answers pipelined on one connection, from pooled read buffers, byte for byte', async () => {
    const random = seededRandom(testSeed('kafka fetch pipelined large'));
    const run = await start({ partitions: 1, indexIntervalBytes: 4096 });
    for (let n = 0; n < 60; n++) {
      const records = Array.from({ length: random.int(5, 40) }, (_, i) => ({
        key: `k${n}-${i}`,
        value: Buffer.from(
          JSON.stringify({ n, i, pad: random.bytes(random.int(500, 2000)).toString('hex') }),
        ),
        timestampMs: 1_800_000_000_000,
      }));
      await run.node.client.append(TOPIC, 0, encodeBatch(records));
    }
    const end = endOf(segmentsOf(run.dir.path, 0));
    const asked = Array.from({ length: 4 * PIPELINED }, () => ({
      offset: random.int(0, end - 1),
      maxBytes: random.int(64 * 1024, 512 * 1024),
    }));
    await checkFetches(run, 0, asked);
  });

  it("a read buffer is reused only once the socket took its bytes: a stalled consumer's answers stay whole", async () => {
    const random = seededRandom(testSeed('kafka fetch stalled consumer'));
    const run = await start({ partitions: 1 });
    for (let n = 0; n < 40; n++) {
      const records = Array.from({ length: 8 }, (_, i) => ({
        key: `k${n}-${i}`,
        value: Buffer.from(JSON.stringify({ n, i, pad: random.bytes(4000).toString('hex') })),
        timestampMs: 1_800_000_000_000,
      }));
      await run.node.client.append(TOPIC, 0, encodeBatch(records));
    }
    const segments = segmentsOf(run.dir.path, 0);
    const end = endOf(segments);
    const ANSWER_BYTES = 4 * 1024 * 1024;
    const body = (offset: number) =>
      fetchBody([{ partition: 0, offset, partitionMaxBytes: ANSWER_BYTES }], ANSWER_BYTES);
    // More than loopback's socket buffers hold: the rest waits in the listener, unwritten.
    const stalledOffsets = [0, 8, 16, 24, 32].map((batch) => batch * 8);
    run.connection.socket.pause();
    for (const offset of stalledOffsets) run.connection.sendRequest(ApiKey.Fetch, 12, body(offset));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const other = await RawKafkaConnection.open(run.node.kafkaPort!);
    try {
      for (let i = 0; i < 10; i++) {
        const offset = random.int(0, end - 1);
        const got = (await other.request(ApiKey.Fetch, 12, body(offset))).responses[0]
          .partitions[0];
        expect(
          Buffer.from(got.records ?? []).equals(
            expectedBatches(segments, offset, ANSWER_BYTES, true),
          ),
        ).toBe(true);
      }
    } finally {
      other.destroy();
    }
    run.connection.socket.resume();
    for (const offset of stalledOffsets) {
      const answer = decodeResponse(ApiKey.Fetch, 12, await run.connection.nextFrame(10_000));
      const got = answer.body.responses[0].partitions[0];
      expect(
        Buffer.from(got.records ?? []).equals(
          expectedBatches(segments, offset, ANSWER_BYTES, true),
        ),
        `stalled answer at ${offset}`,
      ).toBe(true);
    }
  });

  it('a multi-partition answer fills its partitions in the order asked within max_bytes', async () => {
    const random = seededRandom(testSeed('kafka fetch multi-partition'));
    const run = await start({ indexIntervalBytes: 512 });
    for (let n = 0; n < 40; n++) {
      await run.node.client.append(TOPIC, n % 2, encodeBatch(randomBatch(random, n)));
    }
    const segments = [segmentsOf(run.dir.path, 0), segmentsOf(run.dir.path, 1)];
    const ends = segments.map((s) => lastOffsetOf(s.flat().at(-1)!.header) + 1);
    const cases = [1, 100, 900, 2500, 1 << 20, random.int(1, 6000)].flatMap((maxBytes) => [
      { maxBytes, offsets: [0, 0] },
      { maxBytes, offsets: [random.int(0, ends[0]), random.int(0, ends[1])] },
      // Partition 0 has nothing from its end: partition 1's first batch is the answer's first.
      { maxBytes, offsets: [ends[0], random.int(0, ends[1] - 1)] },
    ]);
    const answers = await fetchAll(
      run.connection,
      cases.map(({ maxBytes, offsets }) =>
        fetchBody(
          offsets.map((offset, partition) => ({ partition, offset, partitionMaxBytes: 1 << 20 })),
          maxBytes,
        ),
      ),
    );
    answers.forEach((answer, i) => {
      const { maxBytes, offsets } = cases[i];
      const where = `max_bytes ${maxBytes} offsets ${offsets.join(',')}`;
      const first = expectedBatches(segments[0], offsets[0], maxBytes, true);
      const second = expectedBatches(
        segments[1],
        offsets[1],
        maxBytes - first.length,
        first.length === 0,
      );
      const [got0, got1] = answer.responses[0].partitions;
      expect(Buffer.from(got0.records ?? []).equals(first), `${where}: partition 0`).toBe(true);
      expect(Buffer.from(got1.records ?? []).equals(second), `${where}: partition 1`).toBe(true);
      // A partition given no room still says where its log is.
      expect([got0.highWatermark, got1.highWatermark], where).toEqual(ends.map(BigInt));
      expect([got0.logStartOffset, got1.logStartOffset], where).toEqual([0n, 0n]);
    });
  });
});

describe('Fetch while producers append', () => {
  it('never answers a torn, corrupt or unacknowledged batch, and misses none', async () => {
    const random = seededRandom(testSeed('kafka fetch under appends'));
    const run = await start({
      partitions: 1,
      segmentBytesMax: 64 * 1024,
      batchBytesMax: 16 * 1024,
      indexIntervalBytes: 1024,
    });
    const { client } = run.node;
    const BATCHES = 400;
    const WRITERS = 6;
    /** Offset → the value appended there, as each ack says. */
    const acked = new Map<number, string>();
    let next = 0;
    let appending = true;
    const writer = async (w: number) => {
      while (next < BATCHES) {
        const n = next++;
        const records = Array.from({ length: random.int(1, 20) }, (_, i) => ({
          key: `w${w}-${n}-${i}`,
          value: Buffer.from(JSON.stringify({ n, i, pad: 'x'.repeat(random.int(0, 400)) })),
          timestampMs: Date.now(),
        }));
        const ack = await client.append(TOPIC, 0, encodeBatch(records));
        records.forEach((record, i) => acked.set(ack.baseOffset + i, record.value.toString()));
      }
    };
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w))).finally(
      () => {
        appending = false;
      },
    );
    const consumed = new Map<number, string>();
    let offset = 0;
    let fetches = 0;
    const FETCHES_MAX = 20_000;
    for (;;) {
      if (!appending && offset === Math.max(0, ...acked.keys()) + 1) break;
      expect(++fetches, 'the consumer reaches the end').toBeLessThan(FETCHES_MAX);
      const answer = await run.connection.request(
        ApiKey.Fetch,
        12,
        {
          ...fetchBody(
            [{ partition: 0, offset, partitionMaxBytes: random.int(1, 40_000) }],
            1 << 20,
          ),
          maxWaitMs: 100,
        },
        10_000,
      );
      const got = answer.responses[0].partitions[0];
      expect(got.errorCode).toBe(ErrorCode.NONE);
      const records = Buffer.from(got.records ?? []);
      for (const { header, bytes } of iterateBatches(records)) {
        expect(checkBatch(bytes).ok).toBe(true);
        expect(lastOffsetOf(header), 'below the high watermark').toBeLessThan(
          Number(got.highWatermark),
        );
        expect(header.baseOffset <= offset && lastOffsetOf(header) >= offset, 'contiguous').toBe(
          true,
        );
        for (const record of decodeRecords(bytes)) {
          expect(consumed.has(record.offset), `offset ${record.offset} once`).toBe(false);
          consumed.set(record.offset, Buffer.from(record.value!).toString());
        }
        offset = lastOffsetOf(header) + 1;
      }
    }
    await writers;
    expect(consumed.size).toBe(acked.size);
    for (const [at, value] of acked) expect(consumed.get(at), `offset ${at}`).toBe(value);
  });
});
