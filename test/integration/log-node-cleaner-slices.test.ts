// Proves the cleaner gives the log-node's thread back while it works: appends sent while a pass
// reads, plans and rewrites a partition of many MB are acknowledged before the pass ends (a pass
// done in one go held every append of the node for all of it: 8-40 s in the 10^7 scale run), and
// a pass cut into slices of 1 ms still compacts to the latest value of every key. The test is
// about the log-node's own store, so it reaches the node by its in-process binding.
import { describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { createLogger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import { readPartition, recordsOf, tempDir } from '../harness/index.js';

const TOPIC = 'slices';
const KEYS = 24_000;
const RECORDS_PER_BATCH = 1_000;
const VALUE_BYTES = 300;
/** Appends sent while the pass runs, at most (each waits for the one before). */
const APPENDS_DURING_PASS_MAX = 10_000;

function batchOf(first: number, round: number): Buffer {
  const records: LogRecord[] = Array.from({ length: RECORDS_PER_BATCH }, (_, i) => ({
    key: `k${first + i}`,
    value: Buffer.from(JSON.stringify({ round, pad: '.'.repeat(VALUE_BYTES) })),
    timestampMs: Date.now(),
  }));
  return encodeBatch(records);
}

describe('log-node cleaner slices', () => {
  it('acknowledges appends while a pass works through a large partition, and still compacts', async () => {
    const dir = tempDir('cleaner-slices');
    const running = await openLogNode({
      dataDir: dir.path,
      partitions: 1,
      fsync: 'interval',
      segmentBytesMax: 2 * 1024 * 1024,
      batchBytesMax: 1024 * 1024,
      cleanerIntervalMs: 3_600_000,
      cleanerSliceMsMax: 1,
      logger: createLogger('test', 'silent'),
    });
    try {
      const { client } = running;
      // Every key twice (~15 MB): the first round's segments are all superseded, so the pass
      // reads the whole partition and rewrites half of it.
      for (const round of [1, 2]) {
        for (let first = 0; first < KEYS; first += RECORDS_PER_BATCH) {
          await client.append(TOPIC, 0, batchOf(first, round));
        }
      }
      let passEnded = false;
      const pass = running.cleaner.runOnce().finally(() => {
        passEnded = true;
      });
      let ackedDuringPass = 0;
      let lateAppends = 0;
      for (let i = 0; i < APPENDS_DURING_PASS_MAX && !passEnded; i++) {
        lateAppends++;
        await client.append(
          TOPIC,
          0,
          encodeBatch([{ key: `late${i}`, value: Buffer.from('x'), timestampMs: Date.now() }]),
        );
        if (!passEnded) ackedDuringPass++;
      }
      const summary = (await pass).find((s) => s.topic === TOPIC)!;
      expect(summary.error).toBeUndefined();
      expect(summary.segmentsCompacted, 'the first round compacted').toBeGreaterThan(0);
      expect(ackedDuringPass, 'appends acknowledged while the pass ran').toBeGreaterThanOrEqual(2);

      const latest = new Map<string, unknown>();
      let late = 0;
      for (const record of recordsOf((await readPartition(client, TOPIC, 0)).batches)) {
        if (record.key.startsWith('late')) late++;
        else latest.set(record.key, JSON.parse(Buffer.from(record.value!).toString()).round);
      }
      expect(latest.size).toBe(KEYS);
      for (let k = 0; k < KEYS; k++) expect(latest.get(`k${k}`), `k${k}`).toBe(2);
      expect(late, 'every append sent during the pass is in the log').toBe(lateAppends);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});
