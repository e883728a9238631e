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
  it('keeps the newest record of each key, drops due tombstones a pass later, and writes what it rewrites gzip', async () => {
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
      const writeRounds = async (rounds: number, keyPrefix: string, tombstones: boolean) => {
        for (let round = 0; round < rounds; round++) {
          const records: LogRecord[] = Array.from({ length: 6 }, (_, i) => ({
            key: `${keyPrefix}${(round * 6 + i) % 10}`,
            value:
              tombstones && (round + i) % 7 === 3
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
      };
      await writeRounds(12, 'k', true);
      // Keys whose newest record is a tombstone: only deleteRetentionMs lets a pass drop those.
      // (Beside values of other keys, so that gzip shrinks the batch and it is stored gzip.)
      const ends: LogRecord[] = ['k0', 'k1', 'm0', 'm1'].map((key) => ({
        key,
        value: key.startsWith('k') ? null : Buffer.from('words that repeat '.repeat(6)),
        timestampMs: now,
      }));
      const ended = await running.client.append(
        TOPIC,
        0,
        compressBatchSync(encodeBatch(ends), CODECS.gzip),
      );
      ends.forEach((record, i) => written.push({ offset: ended.baseOffset + i, record }));
      await writeRounds(2, 'm', false);
      const before = readSegmentFiles(partitionDirOf(dir.path, TOPIC, 0));
      expect(before.length, 'closed segments to clean').toBeGreaterThan(2);
      now += 5000;
      await running.cleaner.runOnce();
      // A tombstone the pass found in the dirty part stays for a later pass (Kafka never drops
      // one at first sight): the partition made dirty again by other keys' records (nothing
      // newer of a tombstone's key), the next pass finds them in the clean part, past
      // deleteRetentionMs, and drops them.
      const firstPass = recordsOf(
        readSegmentFiles(partitionDirOf(dir.path, TOPIC, 0)).flatMap((segment) => segment.batches),
      );
      const endsLeft = (records: { key: string; value: unknown }[]) =>
        records.filter((record) => ['k0', 'k1'].includes(record.key)).map((r) => r.value);
      expect(endsLeft(firstPass), 'tombstones kept by the pass that first saw them').toEqual([
        null,
        null,
      ]);
      await writeRounds(12, 'j', false);
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
      expect(endsLeft(left), 'the ended keys gone a pass later').toEqual([]);
      const read = await readPartition(running.client, TOPIC, 0);
      expect(recordsOf(read.batches)).toEqual(left);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});
