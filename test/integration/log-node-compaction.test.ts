// Proves compaction is invisible to readers of the latest state: for random put/delete histories,
// the compacted log replays to the same latest value per key as the full history, every record
// left sits at its original offset unchanged, a read at a removed offset answers the next record
// left, tombstones go only after deleteRetentionMs, the active segment is never touched, and
// reads running during compaction see only records of the history; a closed segment below
// cleanerMinDirtyRatio is left untouched while one above it is compacted; a tombstone stays while a
// segment left untouched before it still holds an older record of its key; and a closed segment
// with a corrupt batch stops its partition's compaction with every segment unchanged.
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
import { HttpLogClient } from '../../shared/http-log-client.js';
import { createLogger } from '../../shared/logger.js';
import { type LogNodeOptions, startLogNode } from '../../log-node/index.js';
import {
  lastOffsetOf,
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
const COLLECTIONS = ['a', 'b', 'c'];
const KEYS = 8;
const BATCHES = 160;
const DELETE_RETENTION_MS = 60_000;
const IN_FLIGHT = 8;

type History = Map<number, LogRecord>[];

const keyOf = (r: { collection: string; key: string }) => `${r.collection}/${r.key}`;
const hex = (value: Uint8Array | null) =>
  value === null ? null : Buffer.from(value).toString('hex');

/** Latest value per key after replaying records in offset order; deletes remove the key. */
function replay(records: Iterable<{ collection: string; key: string; value: Uint8Array | null }>) {
  const state = new Map<string, string>();
  for (const r of records) {
    if (r.value === null) state.delete(keyOf(r));
    else state.set(keyOf(r), hex(r.value)!);
  }
  return state;
}

function randomBatch(random: Random, n: number, nowMs: number): LogRecord[] {
  return Array.from({ length: random.int(1, 6) }, (_, i) => ({
    collection: random.pick(COLLECTIONS),
    key: `k${random.int(0, KEYS - 1)}`,
    value:
      random.next() < 0.25
        ? null
        : Buffer.from(JSON.stringify({ n, i, pad: '.'.repeat(random.int(0, 60)) })),
    timestampMs: nowMs,
  }));
}

async function writeHistory(url: string, random: Random, nowMs: number): Promise<History> {
  const client = new HttpLogClient(url);
  const history: History = Array.from({ length: PARTITIONS }, () => new Map());
  // Drawn before sending, so the seed alone decides the history; the offsets come from the acks.
  const planned = Array.from({ length: BATCHES }, (_, n) => ({
    partition: random.int(0, PARTITIONS - 1),
    records: randomBatch(random, n, nowMs),
  }));
  await appendPlanned(client, planned, IN_FLIGHT, history);
  return history;
}

/** The base offsets of a partition's segment files, oldest first (the last is the active one). */
function segmentBases(dataDir: string, partition: number): number[] {
  return fs
    .readdirSync(path.join(dataDir, 'partitions', String(partition)))
    .filter((n) => n.endsWith('.log'))
    .map((name) => Number(name.slice(0, 20)))
    .sort((a, b) => a - b);
}

async function checkCompacted(
  url: string,
  dataDir: string,
  history: History,
  random: Random,
  options: { nowMs: number; minDirtyRatio: number },
): Promise<number> {
  const client = new HttpLogClient(url);
  let removed = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const full = [...history[p].entries()].sort(([a], [b]) => a - b);
    const { batches, logStartOffset, endOffset } = await readPartition(client, p);
    expect(logStartOffset).toBe(0);
    expect(endOffset).toBe(full.length);
    const records = recordsOf(batches);
    removed += full.length - records.length;
    const left = new Map(records.map((r) => [r.offset, r]));
    for (let i = 1; i < records.length; i++)
      expect(records[i].offset).toBeGreaterThan(records[i - 1].offset);
    for (const r of records) {
      const original = history[p].get(r.offset)!;
      expect({ ...r, value: hex(r.value) }, `partition ${p} offset ${r.offset}`).toEqual({
        ...original,
        value: hex(original.value),
        offset: r.offset,
      });
    }
    expect(replay(records), `partition ${p}: latest value per key`).toEqual(
      replay(full.map(([, r]) => r)),
    );

    const latest = new Map<string, number>();
    for (const [offset, r] of full) latest.set(keyOf(r), offset);
    const bases = segmentBases(dataDir, p);
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
        latest.get(keyOf(r)) === offset &&
        r.value === null &&
        options.nowMs - r.timestampMs > DELETE_RETENTION_MS &&
        !leftBehind.has(keyOf(r));
      const removable = inSegment.filter(
        ([offset, r]) => latest.get(keyOf(r)) !== offset || expired([offset, r]),
      );
      const compacted =
        removable.length > 0 &&
        (removable.length / inSegment.length >= options.minDirtyRatio || inSegment.some(expired));
      if (!compacted) {
        for (const [offset, r] of inSegment)
          if (latest.get(keyOf(r)) !== offset) leftBehind.add(keyOf(r));
      }
      const context = `partition ${p} segment ${base}, ${removable.length} of ${inSegment.length} removable`;
      for (const [offset] of inSegment) {
        const isRemovable = removable.some(([o]) => o === offset);
        expect(left.has(offset), `${context}: offset ${offset}`).toBe(!(compacted && isRemovable));
      }
    }
    for (const [offset] of full.filter(([offset]) => offset >= active)) {
      expect(
        left.has(offset),
        `partition ${p} offset ${offset}: the active segment is untouched`,
      ).toBe(true);
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
        const page = await client.read(p, from, { maxBytes: 1 });
        for (const { header, bytes } of iterateBatches(page.batches)) {
          expect(lastOffsetOf(header), `partition ${p}: read at ${from}`).toBeGreaterThanOrEqual(
            from,
          );
          found ??= decodeRecords(bytes).find((r) => r.offset >= offset)?.offset;
          from = lastOffsetOf(header) + 1;
        }
      }
      expect(found, `partition ${p}: read at ${offset}`).toBe(survivors.find((o) => o >= offset));
    }
  }
  return removed;
}

describe('log-node compaction', () => {
  it('leaves a closed segment below cleanerMinDirtyRatio untouched and compacts one above it', async () => {
    const dir = tempDir('compaction-ratio');
    const now = 1_800_000_000_000;
    const running = await startLogNode({
      dataDir: dir.path,
      port: 0,
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
      const client = new HttpLogClient(running.url);
      const history: History = Array.from({ length: PARTITIONS }, () => new Map());
      const put = async (partition: number, key: string) => {
        const record = {
          collection: 'a',
          key,
          value: Buffer.from(JSON.stringify({ key, pad: '.'.repeat(40) })),
          timestampMs: now,
        };
        const ack = await client.append(partition, encodeBatch([record]));
        history[partition].set(ack.baseOffset, record);
      };
      for (let p = 0; p < PARTITIONS; p++) {
        for (let i = 0; i < 30; i++) await put(p, `k${i}`);
        const bases = segmentBases(dir.path, p);
        expect(bases.length, 'three closed segments at least').toBeGreaterThanOrEqual(4);
        // One key of the first segment written again (below the ratio), every key of the second.
        await put(p, 'k0');
        for (let offset = bases[1]; offset < bases[2]; offset++) {
          await put(p, history[p].get(offset)!.key);
        }
      }
      await running.cleaner.runOnce();
      const random = seededRandom(testSeed('log-node compaction, below and above the ratio'));
      await checkCompacted(running.url, dir.path, history, random, {
        nowMs: now,
        minDirtyRatio: 0.5,
      });
      for (let p = 0; p < PARTITIONS; p++) {
        const [first, second, third] = segmentBases(dir.path, p);
        const left = new Set(
          recordsOf((await readPartition(client, p)).batches).map((r) => r.offset),
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
        port: 0,
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
      let running = await startLogNode(options);
      try {
        const history = await writeHistory(running.url, random, now);
        const closed = running.node.status().partitions.map((s) => s.segments - 1);
        expect(Math.min(...closed)).toBeGreaterThanOrEqual(5);

        // Readers in flight while the cleaner swaps segments see only records of the history.
        const client = new HttpLogClient(running.url);
        const readers = Array.from({ length: 6 }, (_, i) =>
          readPartition(client, i % PARTITIONS, { maxBytes: 700 }),
        );
        const summaries = await running.cleaner.runOnce();
        for (const [i, read] of (await Promise.all(readers)).entries()) {
          for (const r of recordsOf(read.batches)) {
            expect(hex(r.value)).toBe(hex(history[i % PARTITIONS].get(r.offset)!.value));
          }
        }
        expect(summaries.reduce((sum, s) => sum + s.segmentsCompacted, 0)).toBeGreaterThan(0);

        now += 1000;
        const removed = await checkCompacted(running.url, dir.path, history, random, {
          nowMs: now,
          minDirtyRatio: cleanerMinDirtyRatio,
        });
        expect(removed).toBeGreaterThan(0);

        // After a restart (indexes of compacted segments rebuilt or reloaded) nothing changes.
        await running.stop();
        running = await startLogNode(options);
        await checkCompacted(running.url, dir.path, history, random, {
          nowMs: now,
          minDirtyRatio: cleanerMinDirtyRatio,
        });

        // Past deleteRetentionMs the cleaner drops the tombstones too; the latest state is the same.
        now += DELETE_RETENTION_MS + 1;
        await running.cleaner.runOnce();
        await checkCompacted(running.url, dir.path, history, random, {
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
  const record = (key: string, value: string | null, timestampMs: number): LogRecord => ({
    collection: 'a',
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
    port: 0,
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
    const running = await startLogNode(
      smallSegments(dir.path, () => now, { deleteRetentionMs, cleanerMinDirtyRatio: 0.5 }),
    );
    try {
      const client = new HttpLogClient(running.url);
      const written: LogRecord[] = [];
      const append = async (records: LogRecord[]) => {
        await client.append(0, encodeBatch(records));
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
      expect(segmentBases(dir.path, 0), 'A, B and the active segment').toEqual([0, 10, 12]);

      now += deleteRetentionMs + 500;
      await running.cleaner.runOnce();
      const afterFirst = recordsOf((await readPartition(client, 0)).batches);
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
      const afterSecond = recordsOf((await readPartition(client, 0)).batches);
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
    const logged: { level: number; msg: string; partition?: number }[] = [];
    const options = smallSegments(dir.path, () => now, { cleanerMinDirtyRatio: 0.01 });
    let running = await startLogNode(options);
    try {
      const client = new HttpLogClient(running.url);
      // Segment 0: three batches, the first superseded later; the third is Y's only record.
      await client.append(0, encodeBatch([record('K1', 'a', now)]));
      await client.append(0, encodeBatch([record('X', 'x'.repeat(100), now)]));
      await client.append(0, encodeBatch([record('Y', 'y', now)]));
      await client.append(
        0,
        encodeBatch([record('K1', 'a2', now), record('pad', 'p'.repeat(800), now)]),
      );
      await client.append(0, encodeBatch([record('pad2', 'p'.repeat(800), now)]));
      expect(segmentBases(dir.path, 0)).toEqual([0, 3, 5]);
      await running.stop();

      // One flipped byte in the value of the middle batch of the closed segment.
      const segmentFile = path.join(dir.path, 'partitions', '0', '00000000000000000000.log');
      const bytes = fs.readFileSync(segmentFile);
      bytes[bytes.indexOf('xxxxx') + 10] = 'z'.charCodeAt(0);
      fs.writeFileSync(segmentFile, bytes);

      const stream = { write: (line: string) => void logged.push(JSON.parse(line)) };
      running = await startLogNode({ ...options, logger: pino({ level: 'error' }, stream) });
      const summaries = await running.cleaner.runOnce();
      expect(fs.readFileSync(segmentFile).equals(bytes), 'segment 0 is left as it was').toBe(true);
      expect(
        fs.readdirSync(path.dirname(segmentFile)).filter((n) => n.endsWith('.cleaned')),
      ).toEqual([]);
      expect(summaries).toHaveLength(1);
      expect(summaries[0]).toMatchObject({ partition: 0, segmentsCompacted: 0, recordsRemoved: 0 });
      expect(summaries[0].error).toMatch(/00000000000000000000\.log.*corrupt batch at byte/);
      expect(logged.some((line) => line.level >= 50 && line.partition === 0)).toBe(true);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});
