/**
 * The log-node inflates a gzip batch no more than its work needs: recovery of the active segment
 * checks a compressed batch's frame and CRC (the bytes its append checked whole), never inflates
 * it. Counted by the codec's inflate counter; the log-node runs in this process.
 */
import { describe, expect, it } from 'vitest';
import { compressBatchSync, encodeBatch } from '../../shared/batch-codec.js';
import { CODECS, inflateCount } from '../../shared/batch-compression.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import { readPartition, recordsOf, tempDir } from '../harness/index.js';

const TOPIC = 'counted';
const BATCHES = 5;

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
});
