// Proves compaction is invisible to readers of the latest state: for random put/delete histories
// of several topics (each topic-partition compacted on its own, a key in one topic never
// superseding the same key in another), the compacted log replays to the same latest value per key as the full history, every record
// left sits at its original offset unchanged, a read at a removed offset answers the next record
// left, tombstones go only after deleteRetentionMs, the active segment is never touched, and
// reads running during compaction see only records of the history; a closed segment below
// cleanerMinDirtyRatio is left untouched while one above it is compacted; a tombstone stays while a
// segment left untouched before it still holds an older record of its key; and a closed segment
// with a corrupt batch stops its partition's compaction with every segment unchanged. The test is
// about the log-node's own store, so it reaches the node by its in-process binding.
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
import { type LogNodeOptions, openLogNode } from '../../log-node/index.js';
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

async function writeHistories(
  client: LogClient,
  random: Random,
  nowMs: number,
): Promise<Histories> {
  const histories: Histories = new Map(TOPICS.map((topic) => [topic, newHistory()]));
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

async function checkCompacted(
  client: LogClient,
  dataDir: string,
  histories: Histories,
  random: Random,
  options: { nowMs: number; minDirtyRatio: number },
): Promise<number> {
  let removed = 0;
  for (const [topic, history] of histories) {
    removed += await checkTopicCompacted(client, dataDir, topic, history, random, options);
  }
  return removed;
}

async function checkTopicCompacted(
  client: LogClient,
  dataDir: string,
  topic: string,
  history: History,
  random: Random,
  options: { nowMs: number; minDirtyRatio: number },
): Promise<number> {
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

    const latest = new Map<string, number>();
    for (const [offset, r] of full) latest.set(r.key, offset);
    const bases = segmentBases(dataDir, topic, p);
    const active = bases[bases.length - 1];
    // Each closed segment as the cleaner judges it, oldest first: a record is removable when a
    // later one of its key exists, or it is its key's last write as a tombstone past
    // deleteRetentionMs and no untouched segment before it still holds an older record of the
    // key; a segment is compacted when removable records are at least minDirtyRatio of it, or it
    // holds such a tombstone, and is then left with no removable record; any other segment is
    // untouched. (One pass judges this on the whole history; a second pass agrees.)
    const leftBehind = new Set<string>();
    for (const [i, base] of bases.slice(0, -1).entries()) {
      const inSegment = full.filter(([offset]) => offset >= base && offset < bases[i + 1]);
      const expired = ([offset, r]: [number, LogRecord]) =>
        latest.get(r.key) === offset &&
        r.value === null &&
        options.nowMs - r.timestampMs > DELETE_RETENTION_MS &&
        !leftBehind.has(r.key);
      const removable = inSegment.filter(
        ([offset, r]) => latest.get(r.key) !== offset || expired([offset, r]),
      );
      const compacted =
        removable.length > 0 &&
        (removable.length / inSegment.length >= options.minDirtyRatio || inSegment.some(expired));
      if (!compacted) {
        for (const [offset, r] of inSegment)
          if (latest.get(r.key) !== offset) leftBehind.add(r.key);
      }
      const context = `${at} segment ${base}, ${removable.length} of ${inSegment.length} removable`;
      for (const [offset] of inSegment) {
        const isRemovable = removable.some(([o]) => o === offset);
        expect(left.has(offset), `${context}: offset ${offset}`).toBe(!(compacted && isRemovable));
      }
    }
    for (const [offset] of full.filter(([offset]) => offset >= active)) {
      expect(left.has(offset), `${at} offset ${offset}: the active segment is untouched`).toBe(
        true,
      );
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
  it('leaves a closed segment below cleanerMinDirtyRatio untouched and compacts one above it', async () => {
    const dir = tempDir('compaction-ratio');
    const now = 1_800_000_000_000;
    const running = await openLogNode({
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
    });
    try {
      const client = running.client;
      const topic = TOPICS[0];
      const history = newHistory();
      const put = async (partition: number, key: string) => {
        const record = {
          key,
          value: Buffer.from(JSON.stringify({ key, pad: '.'.repeat(40) })),
          timestampMs: now,
        };
        const ack = await client.append(topic, partition, encodeBatch([record]));
        history[partition].set(ack.baseOffset, record);
      };
      for (let p = 0; p < PARTITIONS; p++) {
        for (let i = 0; i < 30; i++) await put(p, `k${i}`);
        const bases = segmentBases(dir.path, topic, p);
        expect(bases.length, 'three closed segments at least').toBeGreaterThanOrEqual(4);
        // One key of the first segment written again (below the ratio), every key of the second.
        await put(p, 'k0');
        for (let offset = bases[1]; offset < bases[2]; offset++) {
          await put(p, history[p].get(offset)!.key);
        }
      }
      await running.cleaner.runOnce();
      const random = seededRandom(testSeed('log-node compaction, below and above the ratio'));
      await checkCompacted(running.client, dir.path, new Map([[topic, history]]), random, {
        nowMs: now,
        minDirtyRatio: 0.5,
      });
      for (let p = 0; p < PARTITIONS; p++) {
        const [first, second, third] = segmentBases(dir.path, topic, p);
        const left = new Set(
          recordsOf((await readPartition(client, topic, p)).batches).map((r) => r.offset),
        );
        for (let offset = first; offset < second; offset++) {
          expect(left.has(offset), `partition ${p}: below the ratio, offset ${offset} kept`).toBe(
            true,
          );
        }
        for (let offset = second; offset < third; offset++) {
          expect(left.has(offset), `partition ${p}: above it, offset ${offset} removed`).toBe(
            false,
          );
        }
      }
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
        const history = await writeHistories(running.client, random, now);
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
        const summaries = await running.cleaner.runOnce();
        for (const [i, read] of (await Promise.all(readers)).entries()) {
          const { topic, partition } = readPositions[i];
          for (const r of recordsOf(read.batches)) {
            expect(hex(r.value)).toBe(hex(history.get(topic)![partition].get(r.offset)!.value));
          }
        }
        expect(summaries.reduce((sum, s) => sum + s.segmentsCompacted, 0)).toBeGreaterThan(0);

        now += 1000;
        const removed = await checkCompacted(running.client, dir.path, history, random, {
          nowMs: now,
          minDirtyRatio: cleanerMinDirtyRatio,
        });
        expect(removed).toBeGreaterThan(0);

        // After a restart (indexes of compacted segments rebuilt or reloaded) nothing changes.
        await running.stop();
        running = await openLogNode(options);
        await checkCompacted(running.client, dir.path, history, random, {
          nowMs: now,
          minDirtyRatio: cleanerMinDirtyRatio,
        });

        // Past deleteRetentionMs the cleaner drops the tombstones too; the latest state is the same.
        now += DELETE_RETENTION_MS + 1;
        await running.cleaner.runOnce();
        await checkCompacted(running.client, dir.path, history, random, {
          nowMs: now,
          minDirtyRatio: cleanerMinDirtyRatio,
        });
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

  it('keeps a tombstone while a segment before it, skipped by the pass, still holds the key', async () => {
    const dir = tempDir('compaction-tombstone');
    let now = 1_800_000_000_000;
    const deleteRetentionMs = 1000;
    const running = await openLogNode(
      smallSegments(dir.path, () => now, { deleteRetentionMs, cleanerMinDirtyRatio: 0.5 }),
    );
    try {
      const client = running.client;
      const written: LogRecord[] = [];
      const append = async (records: LogRecord[]) => {
        await client.append(topic, 0, encodeBatch(records));
        written.push(...records);
      };
      const others = Array.from({ length: 9 }, (_, i) => `other${i}`);
      // Segment A: K and nine other keys, so K's delete leaves it 1/10 dirty (below the ratio).
      await append([
        record('K', 'v1', now),
        ...others.map((key) => record(key, 'x'.repeat(40), now)),
      ]);
      // Segment B: K's tombstone; C: one more segment so B is closed.
      await append([record('K', null, now), record('pad', 'p'.repeat(600), now)]);
      await append([record('pad2', 'p'.repeat(600), now)]);
      expect(segmentBases(dir.path, topic, 0), 'A, B and the active segment').toEqual([0, 10, 12]);

      now += deleteRetentionMs + 500;
      await running.cleaner.runOnce();
      const afterFirst = recordsOf((await readPartition(client, topic, 0)).batches);
      expect(replay(afterFirst), 'K stays deleted after a pass that skipped A').toEqual(
        replay(written),
      );
      expect(afterFirst.filter((r) => r.key === 'K').map((r) => r.value)).toEqual([
        Buffer.from('"v1"'),
        null,
      ]);

      // Once A is dirty enough to be compacted, the same pass drops K's old value and its tombstone.
      for (const key of others) await append([record(key, 'y', now)]);
      await running.cleaner.runOnce();
      const afterSecond = recordsOf((await readPartition(client, topic, 0)).batches);
      expect(afterSecond.filter((r) => r.key === 'K')).toEqual([]);
      expect(replay(afterSecond)).toEqual(replay(written));
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
      const bytes = fs.readFileSync(segmentFile);
      bytes[bytes.indexOf('xxxxx') + 10] = 'z'.charCodeAt(0);
      fs.writeFileSync(segmentFile, bytes);

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
