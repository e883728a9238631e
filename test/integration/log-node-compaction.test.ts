// Proves compaction is invisible to readers of the latest state: for random put/delete histories
// of several topics (each topic-partition compacted on its own, a key in one topic never
// superseding the same key in another), the compacted log replays to the same latest value per
// key as the full history, every record left sits at its original offset unchanged, a read at a
// removed offset answers the next record left, below the cleaned-through point each key keeps its
// newest record only and tombstones go only after deleteRetentionMs and never in the pass that
// first sees them (a reader behind it still sees the delete), the active segment is never
// touched, and reads running during compaction see only records of the history; a partition whose
// dirty ratio is under cleanerMinDirtyRatio is left untouched while one over it is cleaned; a
// tombstone goes only with every older record of its key (one past a full key map stays); a
// stored point is not believed when it lies past the log after a torn tail or is an earlier
// incarnation's; and a closed segment with a corrupt batch stops its partition's compaction: with
// every segment unchanged when the batch is dirty, after the older segments' swaps when it is
// clean, the point unmoved. The test is about the log-node's own store, so it reaches the node by
// its in-process binding.
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type LogRecord,
} from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { createLogger } from '../../shared/logger.js';
import {
  CLEANER_CHECKPOINT_FILE,
  writeCleanerCheckpoint,
} from '../../log-node/cleaner-checkpoint.js';
import { nodeFileIO } from '../../shared/file-io.js';
import { type LogNodeOptions, openLogNode, type OpenLogNode } from '../../log-node/index.js';
import {
  lastOffsetOf,
  partitionDirOf,
  type Random,
  readPartition,
  recordsOf,
  seededRandom,
  tempDir,
  testSeed,
  appendPlanned,
} from '../harness/index.js';

const logger = createLogger('test', 'silent');
const PARTITIONS = 2;
/** Collection topics written together; the same keys in each. */
const TOPICS = ['a', 'b', 'c'];
const KEYS = 8;
/** Batches per topic. */
const BATCHES = 160;
const DELETE_RETENTION_MS = 60_000;
const IN_FLIGHT = 8;

/** Per partition, the record at each offset. */
type History = Map<number, LogRecord>[];
/** Per topic, its history. */
type Histories = Map<string, History>;

const newHistory = (): History => Array.from({ length: PARTITIONS }, () => new Map());
const hex = (value: Uint8Array | null) =>
  value === null ? null : Buffer.from(value).toString('hex');

/** Latest value per key after replaying records in offset order; deletes remove the key. */
function replay(records: Iterable<{ key: string; value: Uint8Array | null }>) {
  const state = new Map<string, string>();
  for (const r of records) {
    if (r.value === null) state.delete(r.key);
    else state.set(r.key, hex(r.value)!);
  }
  return state;
}

function randomBatch(random: Random, n: number, nowMs: number): LogRecord[] {
  return Array.from({ length: random.int(1, 6) }, (_, i) => ({
    key: `k${random.int(0, KEYS - 1)}`,
    value:
      random.next() < 0.25
        ? null
        : Buffer.from(JSON.stringify({ n, i, pad: '.'.repeat(random.int(0, 60)) })),
    timestampMs: nowMs,
  }));
}

/** Appends a random round to every topic; `histories` gets its records by offset. */
async function writeHistories(
  client: LogClient,
  random: Random,
  nowMs: number,
  histories: Histories,
): Promise<Histories> {
  for (const topic of TOPICS) if (!histories.has(topic)) histories.set(topic, newHistory());
  // Drawn before sending, so the seed alone decides the history; the offsets come from the acks.
  const planned = Array.from({ length: BATCHES * TOPICS.length }, (_, n) => ({
    topic: random.pick(TOPICS),
    partition: random.int(0, PARTITIONS - 1),
    records: randomBatch(random, n, nowMs),
  }));
  await Promise.all(
    TOPICS.map((topic) =>
      appendPlanned(
        client,
        topic,
        planned.filter((batch) => batch.topic === topic),
        IN_FLIGHT,
        histories.get(topic)!,
      ),
    ),
  );
  return histories;
}

/** The base offsets of a topic-partition's segment files, oldest first (the last is active). */
function segmentBases(dataDir: string, topic: string, partition: number): number[] {
  return fs
    .readdirSync(partitionDirOf(dataDir, topic, partition))
    .filter((n) => n.endsWith('.log'))
    .map((name) => Number(name.slice(0, 20)))
    .sort((a, b) => a - b);
}

/** What the last cleaning pass judged by: its time, and where each topic-partition's point was. */
interface CleanedAt {
  nowMs: number;
  /** `topic/partition` → the cleaned-through point when the pass began (pointsOf). */
  pointsBefore: Map<string, number>;
}

async function checkCompacted(
  running: OpenLogNode,
  dataDir: string,
  histories: Histories,
  random: Random,
  options: CleanedAt,
): Promise<number> {
  let removed = 0;
  for (const [topic, history] of histories) {
    removed += await checkTopicCompacted(running, dataDir, topic, history, random, options);
  }
  return removed;
}

/** A topic-partition's cleaned-through point and dirty ratio, as the log-node reports them. */
function cleanerStatus(running: OpenLogNode, topic: string, partition: number) {
  const status = running.node
    .status()
    .partitions.find((s) => s.topic === topic && s.partition === partition)!;
  return { cleanedThroughOffset: status.cleanedThroughOffset!, dirtyRatio: status.dirtyRatio! };
}

/** The topics' partitions' cleaned-through points now, by `topic/partition`. */
function pointsOf(running: OpenLogNode, topics: Iterable<string>): Map<string, number> {
  return new Map(
    [...topics].flatMap((topic) =>
      Array.from({ length: PARTITIONS }, (_, p): [string, number] => [
        `${topic}/${p}`,
        cleanerStatus(running, topic, p).cleanedThroughOffset,
      ]),
    ),
  );
}

async function checkTopicCompacted(
  running: OpenLogNode,
  dataDir: string,
  topic: string,
  history: History,
  random: Random,
  options: CleanedAt,
): Promise<number> {
  const client = running.client;
  let removed = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const at = `topic ${topic} partition ${p}`;
    const full = [...history[p].entries()].sort(([a], [b]) => a - b);
    const { batches, logStartOffset, endOffset } = await readPartition(client, topic, p);
    expect(logStartOffset).toBe(0);
    expect(endOffset).toBe(full.length);
    const records = recordsOf(batches);
    removed += full.length - records.length;
    const left = new Map(records.map((r) => [r.offset, r]));
    for (let i = 1; i < records.length; i++)
      expect(records[i].offset).toBeGreaterThan(records[i - 1].offset);
    for (const r of records) {
      const original = history[p].get(r.offset)!;
      expect({ ...r, value: hex(r.value) }, `${at} offset ${r.offset}`).toEqual({
        ...original,
        value: hex(original.value),
        offset: r.offset,
      });
    }
    expect(replay(records), `${at}: latest value per key`).toEqual(replay(full.map(([, r]) => r)));

    // Below the cleaned-through point (the closed segments' end, the map being unbounded here)
    // each key keeps its newest record below the point, unless that is a tombstone the last pass
    // found in the clean part (below the point it began at) past deleteRetentionMs: then none.
    // The rest (the active segment) is untouched.
    const { cleanedThroughOffset: until } = cleanerStatus(running, topic, p);
    const dirtyFrom = options.pointsBefore.get(`${topic}/${p}`)!;
    const bases = segmentBases(dataDir, topic, p);
    expect(until, `${at}: cleaned through the closed segments`).toBe(bases[bases.length - 1]);
    const newest = new Map<string, number>();
    for (const [offset, r] of full) if (offset < until) newest.set(r.key, offset);
    for (const [offset, r] of full) {
      const kept =
        offset >= until ||
        (newest.get(r.key) === offset &&
          (r.value !== null ||
            offset >= dirtyFrom ||
            options.nowMs - r.timestampMs <= DELETE_RETENTION_MS));
      expect(left.has(offset), `${at} offset ${offset} (cleaned through ${until})`).toBe(kept);
    }

    // A read at any offset, removed or not, leads to the first record left at or after it. As in
    // Kafka, a compacted batch keeps its last offset, so a one-batch answer may hold only records
    // before the offset; a reader goes on from that batch's last offset + 1.
    const survivors = records.map((r) => r.offset);
    for (let sample = 0; sample < 40; sample++) {
      const offset = random.int(0, endOffset - 1);
      let from = offset;
      let found: number | undefined;
      for (let reads = 0; found === undefined && from < endOffset && reads < 50; reads++) {
        const page = await client.read(topic, p, from, { maxBytes: 1 });
        for (const { header, bytes } of iterateBatches(page.batches)) {
          expect(lastOffsetOf(header), `${at}: read at ${from}`).toBeGreaterThanOrEqual(from);
          found ??= decodeRecords(bytes).find((r) => r.offset >= offset)?.offset;
          from = lastOffsetOf(header) + 1;
        }
      }
      expect(found, `${at}: read at ${offset}`).toBe(survivors.find((o) => o >= offset));
    }
  }
  return removed;
}

describe('log-node compaction', () => {
  it('leaves a partition whose dirty ratio is under cleanerMinDirtyRatio untouched, and cleans it once it is over', async () => {
    const dir = tempDir('compaction-ratio');
    const now = 1_800_000_000_000;
    const options: LogNodeOptions = {
      dataDir: dir.path,
      partitions: PARTITIONS,
      segmentBytesMax: 1024,
      batchBytesMax: 1024,
      indexIntervalBytes: 256,
      deleteRetentionMs: DELETE_RETENTION_MS,
      cleanerIntervalMs: 3_600_000,
      cleanerMinDirtyRatio: 0.5,
      clock: { nowMs: () => now },
      logger,
    };
    let running = await openLogNode(options);
    try {
      const topic = TOPICS[0];
      const history = newHistory();
      const put = async (partition: number, key: string) => {
        const record = {
          key,
          value: Buffer.from(JSON.stringify({ key, pad: '.'.repeat(40) })),
          timestampMs: now,
        };
        const ack = await running.client.append(topic, partition, encodeBatch([record]));
        history[partition].set(ack.baseOffset, record);
      };
      const histories = new Map([[topic, history]]);
      const random = seededRandom(testSeed('log-node compaction, below and above the ratio'));
      for (let p = 0; p < PARTITIONS; p++) {
        for (let i = 0; i < 30; i++) await put(p, `k${i}`);
        expect(segmentBases(dir.path, topic, p).length).toBeGreaterThanOrEqual(4);
      }
      // A new log is all dirty: the first pass cleans it (nothing superseded yet) and moves the point.
      let pointsBefore = pointsOf(running, [topic]);
      await running.cleaner.runOnce();
      await checkCompacted(running, dir.path, histories, random, { nowMs: now, pointsBefore });
      for (let p = 0; p < PARTITIONS; p++) {
        const cleaned = cleanerStatus(running, topic, p);
        expect(cleaned.dirtyRatio).toBe(0);
        // Keys of the clean part written again until a closed segment is dirty, under the ratio.
        for (let i = 0; cleanerStatus(running, topic, p).dirtyRatio === 0; i++)
          await put(p, `k${i}`);
        const under = cleanerStatus(running, topic, p);
        expect(under.dirtyRatio).toBeGreaterThan(0);
        expect(under.dirtyRatio).toBeLessThan(0.5);
        expect(under.cleanedThroughOffset).toBe(cleaned.cleanedThroughOffset);
      }
      const before = await Promise.all(
        Array.from({ length: PARTITIONS }, (_, p) => readPartition(running.client, topic, p)),
      );
      const skipped = await running.cleaner.runOnce();
      for (let p = 0; p < PARTITIONS; p++) {
        const summary = skipped.find((s) => s.topic === topic && s.partition === p)!;
        expect(summary, `partition ${p}: under the ratio`).toMatchObject({ segmentsCompacted: 0 });
        expect(summary.dirtyRatio).toBeLessThan(0.5);
        const after = await readPartition(running.client, topic, p);
        expect(recordsOf(after.batches), `partition ${p} untouched`).toEqual(
          recordsOf(before[p].batches),
        );
      }
      // Over the ratio, the pass maps the dirty part and drops what it supersedes in the clean one.
      for (let p = 0; p < PARTITIONS; p++) {
        for (let i = 0; cleanerStatus(running, topic, p).dirtyRatio < 0.5; i++)
          await put(p, `k${i % 30}`);
      }
      pointsBefore = pointsOf(running, [topic]);
      const cleaned = await running.cleaner.runOnce();
      for (let p = 0; p < PARTITIONS; p++) {
        const summary = cleaned.find((s) => s.topic === topic && s.partition === p)!;
        expect(summary.dirtyRatio).toBeGreaterThanOrEqual(0.5);
        expect(summary.recordsRemoved, `partition ${p}`).toBeGreaterThan(0);
      }
      await checkCompacted(running, dir.path, histories, random, { nowMs: now, pointsBefore });
      // The point is durable: a restart keeps it, and the log as it is.
      await running.stop();
      running = await openLogNode(options);
      await checkCompacted(running, dir.path, histories, random, { nowMs: now, pointsBefore });
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  for (const cleanerMinDirtyRatio of [0, 0.5]) {
    it(`replays to the same latest state as the full history (cleanerMinDirtyRatio ${cleanerMinDirtyRatio})`, async () => {
      const seed = testSeed(`log-node compaction, dirty ratio ${cleanerMinDirtyRatio}`);
      const random = seededRandom(seed);
      const dir = tempDir('compaction');
      const clock = { nowMs: () => now };
      let now = 1_800_000_000_000;
      const options: LogNodeOptions = {
        dataDir: dir.path,
        partitions: PARTITIONS,
        segmentBytesMax: 2048,
        batchBytesMax: 2048,
        indexIntervalBytes: 256,
        deleteRetentionMs: DELETE_RETENTION_MS,
        cleanerIntervalMs: 3_600_000,
        cleanerMinDirtyRatio,
        clock,
        logger,
      };
      let running = await openLogNode(options);
      try {
        const history = await writeHistories(running.client, random, now, new Map());
        const closed = running.node
          .status()
          .partitions.filter((s) => TOPICS.includes(s.topic))
          .map((s) => s.segments - 1);
        expect(closed).toHaveLength(TOPICS.length * PARTITIONS);
        expect(Math.min(...closed)).toBeGreaterThanOrEqual(5);

        // Readers in flight while the cleaner swaps segments see only records of the history.
        const client = running.client;
        const readPositions = TOPICS.flatMap((topic) =>
          Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })),
        );
        const readers = readPositions.map(({ topic, partition }) =>
          readPartition(client, topic, partition, { maxBytes: 700 }),
        );
        const firstPointsBefore = pointsOf(running, TOPICS);
        const summaries = await running.cleaner.runOnce();
        for (const [i, read] of (await Promise.all(readers)).entries()) {
          const { topic, partition } = readPositions[i];
          for (const r of recordsOf(read.batches)) {
            expect(hex(r.value)).toBe(hex(history.get(topic)![partition].get(r.offset)!.value));
          }
        }
        expect(summaries.reduce((sum, s) => sum + s.segmentsCompacted, 0)).toBeGreaterThan(0);

        const cleanedAt = now;
        now += 1000;
        const removed = await checkCompacted(running, dir.path, history, random, {
          nowMs: cleanedAt,
          pointsBefore: firstPointsBefore,
        });
        expect(removed).toBeGreaterThan(0);

        // After a restart (indexes of compacted segments rebuilt or reloaded, the point read back)
        // nothing changes, and a pass with nothing dirty changes nothing.
        await running.stop();
        running = await openLogNode(options);
        const idle = await running.cleaner.runOnce();
        expect(idle.reduce((sum, s) => sum + s.segmentsCompacted, 0)).toBe(0);
        await checkCompacted(running, dir.path, history, random, {
          nowMs: cleanedAt,
          pointsBefore: firstPointsBefore,
        });

        // A second round makes the partitions dirty again; past deleteRetentionMs, that pass drops
        // the first round's tombstones (in the clean part) and keeps the second's (in the dirty
        // part, past deleteRetentionMs too); the latest state is the same.
        await writeHistories(running.client, random, now, history);
        now += DELETE_RETENTION_MS + 1;
        const pointsBefore = pointsOf(running, TOPICS);
        for (const summary of await running.cleaner.runOnce()) {
          if (!TOPICS.includes(summary.topic)) continue;
          expect(
            summary.dirtyRatio,
            `${summary.topic} ${summary.partition}`,
          ).toBeGreaterThanOrEqual(cleanerMinDirtyRatio);
        }
        await checkCompacted(running, dir.path, history, random, { nowMs: now, pointsBefore });
      } finally {
        await running.stop();
        dir.cleanup();
      }
    });
  }
});

describe('log-node compaction: what it must not lose', () => {
  const topic = TOPICS[0];
  const record = (key: string, value: string | null, timestampMs: number): LogRecord => ({
    key,
    value: value === null ? null : Buffer.from(JSON.stringify(value)),
    timestampMs,
  });

  /** One partition of ~1000-byte segments, the cleaner run only by the test, time by `nowMs`. */
  const smallSegments = (
    dataDir: string,
    nowMs: () => number,
    options: Partial<LogNodeOptions>,
  ): LogNodeOptions => ({
    dataDir,
    partitions: 1,
    segmentBytesMax: 1000,
    batchBytesMax: 1000,
    cleanerIntervalMs: 3_600_000,
    clock: { nowMs },
    logger,
    ...options,
  });

  /** The records of partition 0 of the topic, as read now. */
  const recordsNow = async (client: LogClient) =>
    recordsOf((await readPartition(client, topic, 0)).batches);
  const pointOf = (running: OpenLogNode) =>
    running.node.status().partitions.find((s) => s.topic === topic && s.partition === 0)!
      .cleanedThroughOffset;
  /** Flips one byte in X's value ('x' repeated) in a segment file; answers the bytes written. */
  const damageX = (segmentFile: string): Buffer => {
    const bytes = fs.readFileSync(segmentFile);
    bytes[bytes.indexOf('xxxxx') + 10] = 'z'.charCodeAt(0);
    fs.writeFileSync(segmentFile, bytes);
    return bytes;
  };
  /** Appends padding (to `written`) until a closed segment lies past the point: a pass will run. */
  const dirtyAgain = async (running: OpenLogNode, written: LogRecord[], nowMs: number) => {
    const dirtyRatio = () =>
      running.node.status().partitions.find((s) => s.topic === topic && s.partition === 0)!
        .dirtyRatio!;
    for (let i = 0; dirtyRatio() === 0; i++) {
      expect(i, 'a few segments of padding make the partition dirty').toBeLessThan(5);
      const pad = [record(`dirty${i}`, 'd'.repeat(800), nowMs)];
      await running.client.append(topic, 0, encodeBatch(pad));
      written.push(...pad);
    }
  };

  it('drops a tombstone only with every older record of its key, and keeps one past a full map', async () => {
    const dir = tempDir('compaction-tombstone');
    let now = 1_800_000_000_000;
    const deleteRetentionMs = 1000;
    const running = await openLogNode(
      smallSegments(dir.path, () => now, {
        deleteRetentionMs,
        cleanerMinDirtyRatio: 0.01,
        cleanerKeysMax: 4,
      }),
    );
    try {
      const client = running.client;
      const written: LogRecord[] = [];
      const append = async (records: LogRecord[]) => {
        const ack = await client.append(topic, 0, encodeBatch(records));
        written.push(...records);
        return ack;
      };
      // Clean part: K's value, then a segment of padding, cleaned by a first pass.
      await append([record('K', 'v1', now), record('a', 'a', now)]);
      await append([record('pad', 'p'.repeat(800), now)]);
      await append([record('pad2', 'p'.repeat(600), now)]);
      await running.cleaner.runOnce();
      expect(pointOf(running)).toBe(3);
      // Dirty part, one segment: pad2 and three keys (all the map holds), then K's tombstone.
      const three = await append(['x1', 'x2', 'x3'].map((key) => record(key, 'x', now)));
      const tombstone = await append([record('K', null, now)]);
      await append([record('pad4', 'p'.repeat(800), now)]);
      expect(segmentBases(dir.path, topic, 0), 'the map ends inside a closed segment').toEqual([
        0,
        3,
        tombstone.lastOffset + 1,
      ]);
      now += deleteRetentionMs + 500;

      // The map fills at the four keys: the pass cleans up to them. K's tombstone, past its
      // deleteRetentionMs but past the map's end, stays, and so does K's value it deletes.
      await running.cleaner.runOnce();
      expect(pointOf(running), 'cleaned through the full map').toBe(three.lastOffset + 1);
      const afterFirst = await recordsNow(client);
      expect(afterFirst.filter((r) => r.key === 'K').map((r) => r.value)).toEqual([
        Buffer.from('"v1"'),
        null,
      ]);
      expect(replay(afterFirst)).toEqual(replay(written));

      // The next pass maps the tombstone: K's value goes; the tombstone, in the dirty part, stays.
      await running.cleaner.runOnce();
      const afterSecond = await recordsNow(client);
      expect(afterSecond.filter((r) => r.key === 'K').map((r) => r.value)).toEqual([null]);
      expect(replay(afterSecond)).toEqual(replay(written));

      // A later pass finds it in the clean part, past deleteRetentionMs: it goes.
      await dirtyAgain(running, written, now);
      await running.cleaner.runOnce();
      const afterThird = await recordsNow(client);
      expect(afterThird.filter((r) => r.key === 'K')).toEqual([]);
      expect(replay(afterThird)).toEqual(replay(written));
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  /**
   * A log whose first two records are K's value and K's tombstone (past deleteRetentionMs), then
   * enough padding to close segments through offset `closedThrough` at least: a cleaner that took
   * offsets 0 and 1 for clean would drop the tombstone (not in its map) and keep the value, and K
   * would come back.
   */
  const tombstoneBelow = async (
    client: LogClient,
    nowMs: number,
    closedThrough: number,
  ): Promise<LogRecord[]> => {
    const written = [record('K', 'v1', nowMs), record('K', null, nowMs)];
    await client.append(topic, 0, encodeBatch(written.slice(0, 1)));
    await client.append(topic, 0, encodeBatch(written.slice(1)));
    for (let i = 0; (await readPartition(client, topic, 0)).endOffset <= closedThrough + 1; i++) {
      const pad = [record(`pad${i}`, 'p'.repeat(400), nowMs)];
      await client.append(topic, 0, encodeBatch(pad));
      written.push(...pad);
    }
    return written;
  };

  /** A node of small segments whose clock the test moves; tombstones are due after 1 s. */
  const tombstoneNode = (name: string) => {
    const dir = tempDir(name);
    const clock = { nowMs: 1_800_000_000_000 };
    const options = smallSegments(dir.path, () => clock.nowMs, {
      deleteRetentionMs: 1000,
      cleanerMinDirtyRatio: 0.01,
    });
    return { dir, clock, options, partitionDir: partitionDirOf(dir.path, topic, 0) };
  };

  /**
   * After a pass, K's value is gone and its tombstone (dirty when the pass began) left; after the
   * next, K has no record left; and no key came back.
   */
  const expectDeletedAfterTwoPasses = async (
    running: OpenLogNode,
    written: LogRecord[],
    nowMs: number,
  ) => {
    await running.cleaner.runOnce();
    const left = await recordsNow(running.client);
    expect(left.filter((r) => r.key === 'K').map((r) => r.value)).toEqual([null]);
    expect(replay(left)).toEqual(replay(written));
    await dirtyAgain(running, written, nowMs);
    await running.cleaner.runOnce();
    const leftAfter = await recordsNow(running.client);
    expect(leftAfter.filter((r) => r.key === 'K')).toEqual([]);
    expect(replay(leftAfter)).toEqual(replay(written));
  };

  it('keeps a tombstone past deleteRetentionMs through the pass that first sees it, and drops it in a later one', async () => {
    const { dir, clock, options } = tombstoneNode('compaction-tombstone-first-seen');
    const running = await openLogNode(options);
    try {
      const written = await tombstoneBelow(running.client, clock.nowMs, 2);
      expect(pointOf(running), 'K and its tombstone are dirty').toBe(0);
      // The dirty-ratio gate held the first pass back far past deleteRetentionMs.
      clock.nowMs += 3_600_000;
      await expectDeletedAfterTwoPasses(running, written, clock.nowMs);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  it('distrusts a point ahead of the log after a torn tail: the whole log is dirty again', async () => {
    const { dir, clock, options, partitionDir } = tombstoneNode('compaction-point-ahead');
    let running = await openLogNode(options);
    try {
      await running.client.append(topic, 0, encodeBatch([record('first', 'f', clock.nowMs)]));
      await running.stop();
      // A point past everything closed (as a longer log, cut back, would leave), and a torn tail.
      writeCleanerCheckpoint(nodeFileIO, partitionDir, { cleanedThroughOffset: 8, incarnation: 0 });
      const active = path.join(partitionDir, '00000000000000000000.log');
      fs.appendFileSync(active, Buffer.alloc(30, 7));
      running = await openLogNode(options);
      expect(running.node.status().partitions.find((s) => s.topic === topic)).toMatchObject({
        truncatedBytesOnLoad: 30,
        cleanedThroughOffset: 0,
      });
      // Offsets 1 and 2 (K's value and tombstone) are written after the cut, below the old point.
      const written = [
        record('first', 'f', clock.nowMs),
        ...(await tombstoneBelow(running.client, clock.nowMs, 8)),
      ];
      clock.nowMs += 2000;
      await running.stop();
      running = await openLogNode(options);
      expect(pointOf(running), 'the point stays forgotten after a restart').toBe(0);
      await expectDeletedAfterTwoPasses(running, written, clock.nowMs);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  it("distrusts a point of a dropped topic's earlier incarnation", async () => {
    const { dir, clock, options, partitionDir } = tombstoneNode('compaction-point-dropped');
    let running = await openLogNode(options);
    try {
      for (let i = 0; i < 6; i++) {
        await running.client.append(
          topic,
          0,
          encodeBatch([record(`old${i}`, 'o'.repeat(400), clock.nowMs)]),
        );
      }
      await running.cleaner.runOnce();
      const oldPoint = pointOf(running)!;
      expect(oldPoint).toBeGreaterThan(2);
      const stale = fs.readFileSync(path.join(partitionDir, CLEANER_CHECKPOINT_FILE));
      await running.client.deleteTopic(topic);
      await running.client.ensureTopic(topic, { deleteRetentionMs: 1000 });
      const written = await tombstoneBelow(running.client, clock.nowMs, oldPoint);
      await running.stop();
      // The earlier incarnation's file, as if the drop had left it behind.
      fs.writeFileSync(path.join(partitionDir, CLEANER_CHECKPOINT_FILE), stale);
      clock.nowMs += 2000;
      running = await openLogNode(options);
      expect(pointOf(running)).toBe(0);
      await expectDeletedAfterTwoPasses(running, written, clock.nowMs);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  it('counts a point below the log start (retention removed what it covered) from the log start', async () => {
    const { dir, clock, options } = tombstoneNode('compaction-point-retention');
    let running = await openLogNode(options);
    const statusNow = () =>
      running.node.status().partitions.find((s) => s.topic === topic && s.partition === 0)!;
    const pad = async (i: number) =>
      running.client.append(
        topic,
        0,
        encodeBatch([record(`pad${i}`, 'p'.repeat(800), clock.nowMs)]),
      );
    try {
      for (let i = 0; i < 4; i++) await pad(i);
      await running.cleaner.runOnce();
      expect(pointOf(running)).toBe(3);
      for (let i = 4; i < 8; i++) await pad(i);
      // A while under the delete policy: retention removes every closed segment.
      await running.client.ensureTopic(topic, { cleanupPolicy: 'delete', retentionBytes: 0 });
      await running.cleaner.runOnce();
      const { logStartOffset } = statusNow();
      expect(logStartOffset).toBe(7);
      await running.client.ensureTopic(topic, { cleanupPolicy: 'compact' });
      expect(statusNow()).toMatchObject({ cleanedThroughOffset: 7, dirtyRatio: 0 });
      await running.stop();
      running = await openLogNode(options);
      expect(statusNow()).toMatchObject({ cleanedThroughOffset: 7, logStartOffset: 7 });
      // Cleaned again from there: the point moves on from the log start.
      for (let i = 8; i < 10; i++) await pad(i);
      await running.cleaner.runOnce();
      expect(statusNow().cleanedThroughOffset).toBe(9);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  it('stops at a corrupt batch in the clean part after swapping the older segments, and the point stays', async () => {
    const dir = tempDir('compaction-corrupt-clean');
    const now = 1_800_000_000_000;
    const options = smallSegments(dir.path, () => now, { cleanerMinDirtyRatio: 0.01 });
    let running = await openLogNode(options);
    try {
      const client = running.client;
      // Segment 0: K1's first value; segment 2: X (to be damaged); both cleaned by a first pass.
      await client.append(topic, 0, encodeBatch([record('K1', 'a', now)]));
      await client.append(topic, 0, encodeBatch([record('pad', 'p'.repeat(800), now)]));
      await client.append(topic, 0, encodeBatch([record('X', 'x'.repeat(100), now)]));
      await client.append(topic, 0, encodeBatch([record('pad2', 'p'.repeat(700), now)]));
      await client.append(topic, 0, encodeBatch([record('pad3', 'p'.repeat(800), now)]));
      expect(segmentBases(dir.path, topic, 0)).toEqual([0, 2, 4]);
      await running.cleaner.runOnce();
      expect(pointOf(running)).toBe(4);
      // The dirty part supersedes K1's first value, in segment 0.
      await client.append(topic, 0, encodeBatch([record('K1', 'a2', now)]));
      await client.append(topic, 0, encodeBatch([record('pad4', 'p'.repeat(800), now)]));
      expect(segmentBases(dir.path, topic, 0)).toEqual([0, 2, 4, 6]);
      await running.stop();

      const partitionDir = partitionDirOf(dir.path, topic, 0);
      const damaged = path.join(partitionDir, '00000000000000000002.log');
      const bytes = damageX(damaged);

      running = await openLogNode(options);
      const summary = (await running.cleaner.runOnce()).find((s) => s.topic === topic)!;
      expect(summary).toMatchObject({ segmentsCompacted: 1, recordsRemoved: 1 });
      expect(summary.error).toMatch(/00000000000000000002\.log.*corrupt batch at byte/);
      expect(pointOf(running), 'the point stays').toBe(4);
      expect(fs.readFileSync(damaged).equals(bytes), 'the damaged segment is as it was').toBe(true);
      expect(fs.readdirSync(partitionDir).filter((n) => n.endsWith('.cleaned'))).toEqual([]);
      // A read of the partition stops at the damaged batch: segment 0 is read from its file.
      const swapped = fs.readFileSync(path.join(partitionDir, '00000000000000000000.log'));
      const left = [...iterateBatches(swapped)].flatMap(({ bytes }) => decodeRecords(bytes));
      expect(
        left.map((r) => r.key),
        "segment 0 was swapped: K1's first value is gone",
      ).toEqual(['pad']);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  it('leaves a partition unchanged and says why when a closed segment holds a corrupt batch', async () => {
    const dir = tempDir('compaction-corrupt');
    const now = 1_800_000_000_000;
    const logged: { level: number; msg: string; topic?: string; partition?: number }[] = [];
    const options = smallSegments(dir.path, () => now, { cleanerMinDirtyRatio: 0.01 });
    let running = await openLogNode(options);
    try {
      const client = running.client;
      // Segment 0: three batches, the first superseded later; the third is Y's only record.
      await client.append(topic, 0, encodeBatch([record('K1', 'a', now)]));
      await client.append(topic, 0, encodeBatch([record('X', 'x'.repeat(100), now)]));
      await client.append(topic, 0, encodeBatch([record('Y', 'y', now)]));
      await client.append(
        topic,
        0,
        encodeBatch([record('K1', 'a2', now), record('pad', 'p'.repeat(800), now)]),
      );
      await client.append(topic, 0, encodeBatch([record('pad2', 'p'.repeat(800), now)]));
      expect(segmentBases(dir.path, topic, 0)).toEqual([0, 3, 5]);
      await running.stop();

      // One flipped byte in the value of the middle batch of the closed segment.
      const segmentFile = path.join(partitionDirOf(dir.path, topic, 0), '00000000000000000000.log');
      const bytes = damageX(segmentFile);

      const stream = { write: (line: string) => void logged.push(JSON.parse(line)) };
      running = await openLogNode({ ...options, logger: pino({ level: 'error' }, stream) });
      const summaries = await running.cleaner.runOnce();
      expect(fs.readFileSync(segmentFile).equals(bytes), 'segment 0 is left as it was').toBe(true);
      expect(
        fs.readdirSync(path.dirname(segmentFile)).filter((n) => n.endsWith('.cleaned')),
      ).toEqual([]);
      // One summary per topic-partition (the internal topics' too); only this one stopped.
      const failed = summaries.filter((summary) => summary.error !== undefined);
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({
        topic,
        partition: 0,
        segmentsCompacted: 0,
        recordsRemoved: 0,
      });
      expect(failed[0].error).toMatch(/00000000000000000000\.log.*corrupt batch at byte/);
      expect(
        logged.some((line) => line.level >= 50 && line.topic === topic && line.partition === 0),
      ).toBe(true);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});
