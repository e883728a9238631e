/**
 * The log-node inflates a gzip batch no more than its work needs: recovery of the active segment
 * checks a compressed batch's frame and CRC (the bytes its append checked whole), never inflates
 * it; a compaction pass inflates a batch of a segment it rewrites a second time only from the
 * first batch it removes a record of. Counted by the codec's inflate counter; the log-node runs in
 * this process.
 */
import { describe, expect, it } from 'vitest';
import { compressBatchSync, encodeBatch } from '../../shared/batch-codec.js';
import { CODECS, inflateCount } from '../../shared/batch-compression.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import {
  partitionDirOf,
  readPartition,
  readSegmentFiles,
  recordsOf,
  tempDir,
} from '../harness/index.js';

const TOPIC = 'counted';
const BATCHES = 5;
const COMPACTED = 'compacted';
const COMPACTED_BATCHES = 30;
const SUPERSEDING_BATCH = 12;

describe('inflates on the log-node', () => {
  it('recovery of the active segment inflates no gzip batch', async () => {
    const dir = tempDir('inflate-once');
    const config = {
      dataDir: dir.path,
      partitions: 1,
      cleanerIntervalMs: 3_600_000,
      logger: createLogger('test', 'silent'),
    };
    try {
      const first = await openLogNode(config);
      try {
        for (let b = 0; b < BATCHES; b++) {
          const records = Array.from({ length: 4 }, (_, i) => ({
            key: `k${b}-${i}`,
            value: Buffer.from(`value ${b} ${i} `.repeat(20)),
            timestampMs: 1_800_000_000_000,
          }));
          await first.client.append(TOPIC, 0, compressBatchSync(encodeBatch(records), CODECS.gzip));
        }
      } finally {
        await first.stop();
      }
      const before = inflateCount();
      const second = await openLogNode(config);
      try {
        expect(inflateCount() - before, 'inflates at start').toBe(0);
        const read = await readPartition(second.client, TOPIC, 0);
        expect(recordsOf(read.batches)).toHaveLength(BATCHES * 4);
      } finally {
        await second.stop();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('a compaction pass inflates the batches before the first removable record of a segment once', async () => {
    const dir = tempDir('inflate-once-compaction');
    const node = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      segmentBytesMax: 600,
      batchBytesMax: 600,
      cleanerIntervalMs: 3_600_000,
      cleanerMinDirtyRatio: 0.01,
      logger: createLogger('test', 'silent'),
    });
    try {
      const append = (key: string) =>
        node.client.append(
          COMPACTED,
          0,
          compressBatchSync(
            encodeBatch([
              { key, value: Buffer.from(`${key} `.repeat(40)), timestampMs: 1_800_000_000_000 },
            ]),
            CODECS.gzip,
          ),
        );
      for (let b = 0; b < SUPERSEDING_BATCH; b++) await append(`k${b}`);
      // The only record a pass removes: the first segment's second batch.
      const superseding = await append('k1');
      for (let b = SUPERSEDING_BATCH + 1; b < COMPACTED_BATCHES; b++) await append(`k${b}`);
      const segments = readSegmentFiles(partitionDirOf(dir.path, COMPACTED, 0));
      const closed = segments.slice(0, -1);
      expect(closed[0].batches.length, 'batches of the first segment').toBeGreaterThan(2);
      expect(superseding.baseOffset, 'the superseding record closed').toBeLessThan(
        segments[segments.length - 1].baseOffset,
      );
      const closedBatches = closed.reduce((sum, segment) => sum + segment.batches.length, 0);
      const firstSegmentBatches = closed[0].batches.length;
      const before = inflateCount();
      const summary = await node.cleaner.runOnce();
      const inflates = inflateCount() - before;
      expect(summary.find((pass) => pass.topic === COMPACTED)).toMatchObject({ recordsRemoved: 1 });
      // The key map reads every closed batch, the check for removable records reads the first
      // segment to its second batch and the other segments whole, the copy the first segment from
      // its second batch on.
      expect(inflates).toBe(
        closedBatches + 2 + (closedBatches - firstSegmentBatches) + (firstSegmentBatches - 1),
      );
    } finally {
      await node.stop();
      dir.cleanup();
    }
  });
});
