/**
 * The cleaner on gzip batches: keys and tombstones are decided on the inflated records, a batch
 * it keeps part of is written again in its producer's codec (gzip), every record left sits at its
 * offset unchanged, and the compacted log replays to the same latest state as the history. The
 * log-node's own store, reached by its in-process binding.
 */
import { describe, expect, it } from 'vitest';
import {
  batchCodec,
  compressBatchSync,
  encodeBatch,
  type LogRecord,
} from '../../shared/batch-codec.js';
import { CODECS } from '../../shared/batch-compression.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import {
  partitionDirOf,
  readPartition,
  readSegmentFiles,
  recordsOf,
  tempDir,
} from '../harness/index.js';

const TOPIC = 'squeezed';

function replay(records: Iterable<{ key: string; value: Uint8Array | null }>) {
  const state = new Map<string, string>();
  for (const r of records) {
    if (r.value === null) state.delete(r.key);
    else state.set(r.key, Buffer.from(r.value).toString('utf8'));
  }
  return state;
}

describe('compaction of gzip batches', () => {
  it('keeps the newest record of each key, drops due tombstones, and writes what it rewrites gzip', async () => {
    const dir = tempDir('compaction-gzip');
    let now = 1_800_000_000_000;
    const running = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      segmentBytesMax: 500,
      batchBytesMax: 500,
      cleanerIntervalMs: 3_600_000,
      cleanerMinDirtyRatio: 0.01,
      deleteRetentionMs: 1000,
      clock: { nowMs: () => now },
      logger: createLogger('test', 'silent'),
    });
    try {
      const written: { offset: number; record: LogRecord }[] = [];
      for (let round = 0; round < 12; round++) {
        const records: LogRecord[] = Array.from({ length: 6 }, (_, i) => ({
          key: `k${(round * 6 + i) % 10}`,
          value:
            (round + i) % 7 === 3
              ? null
              : Buffer.from(JSON.stringify({ round, i, text: 'words that repeat '.repeat(6) })),
          timestampMs: now,
        }));
        const ack = await running.client.append(
          TOPIC,
          0,
          compressBatchSync(encodeBatch(records), CODECS.gzip),
        );
        records.forEach((record, i) => written.push({ offset: ack.baseOffset + i, record }));
      }
      const before = readSegmentFiles(partitionDirOf(dir.path, TOPIC, 0));
      expect(before.length, 'closed segments to clean').toBeGreaterThan(2);
      now += 5000;
      await running.cleaner.runOnce();

      const after = readSegmentFiles(partitionDirOf(dir.path, TOPIC, 0));
      const batches = after.flatMap((segment) => segment.batches);
      expect(batches.every((batch) => batchCodec(batch.bytes) === CODECS.gzip)).toBe(true);
      const left = recordsOf(batches);
      expect(left.length, 'the pass removed records').toBeLessThan(written.length);
      const byOffset = new Map(written.map(({ offset, record }) => [offset, record]));
      for (const record of left) {
        const sent = byOffset.get(record.offset)!;
        expect(record.key).toBe(sent.key);
        expect(record.value === null ? null : Buffer.from(record.value)).toEqual(sent.value);
      }
      expect(replay(left)).toEqual(replay(written.map(({ record }) => record)));
      const active = after[after.length - 1].baseOffset;
      const cleaned = left.filter((record) => record.offset < active);
      expect(new Set(cleaned.map((r) => r.key)).size, 'one record a key below').toBe(
        cleaned.length,
      );
      expect(
        cleaned.some((record) => record.value === null),
        'due tombstones gone',
      ).toBe(false);
      const read = await readPartition(running.client, TOPIC, 0);
      expect(recordsOf(read.batches)).toEqual(left);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});
