/**
 * A batch appended under a raised batchInflatedBytesMax stays readable: recovery of the active
 * segment and every reader bound a stored batch by the format, never by the 64 MiB append
 * default, so a batch the log acknowledged is never called corrupt when read back.
 */
import { describe, expect, it } from 'vitest';
import { compressBatchSync, encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { BATCH_INFLATED_BYTES_MAX_DEFAULT, CODECS } from '../../shared/batch-compression.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import { readPartition, recordsOf, tempDir } from '../harness/index.js';

const TOPIC = 'roomy';
const MiB = 1024 * 1024;
const VALUE_BYTES = 4 * MiB;
// Past the 64 MiB append default by one record's value.
const RECORD_COUNT = BATCH_INFLATED_BYTES_MAX_DEFAULT / VALUE_BYTES + 1;

describe('a batch inflating past the default bound', () => {
  it('is acknowledged under a raised limit, survives a restart and reads back whole', async () => {
    const dir = tempDir('inflate-bound');
    const config = {
      dataDir: dir.path,
      partitions: 1,
      recordBytesMax: VALUE_BYTES + 1024,
      batchInflatedBytesMax: 2 * BATCH_INFLATED_BYTES_MAX_DEFAULT,
      logger: createLogger('test', 'silent'),
    };
    const records: LogRecord[] = Array.from({ length: RECORD_COUNT }, (_, i) => ({
      key: `k${i}`,
      value: Buffer.alloc(VALUE_BYTES, 97 + (i % 26)),
      timestampMs: 1_800_000_000_000,
    }));
    const big = compressBatchSync(encodeBatch(records), CODECS.gzip);
    const small = compressBatchSync(
      encodeBatch([{ key: 'after', value: Buffer.from('x'), timestampMs: 1_800_000_000_000 }]),
      CODECS.gzip,
    );
    try {
      const first = await openLogNode(config);
      try {
        await first.client.append(TOPIC, 0, big);
        await first.client.append(TOPIC, 0, small);
      } finally {
        await first.stop();
      }
      const second = await openLogNode(config);
      try {
        const read = await readPartition(second.client, TOPIC, 0);
        expect(read.endOffset, 'recovery kept both batches').toBe(RECORD_COUNT + 1);
        const back = recordsOf(read.batches);
        expect(back.map((r) => r.key)).toEqual([...records.map((r) => r.key), 'after']);
        back.slice(0, RECORD_COUNT).forEach((r, i) => {
          expect(r.value?.length, `record ${i}`).toBe(VALUE_BYTES);
          expect(r.value?.[VALUE_BYTES - 1], `record ${i}`).toBe(97 + (i % 26));
        });
      } finally {
        await second.stop();
      }
    } finally {
      dir.cleanup();
    }
  });
});
