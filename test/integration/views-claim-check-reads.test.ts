// Proves that a view processor's check for a claim before its output (views-claim-before-append)
// reads each byte of its own topic about once, however far its read-back lags: the read-back
// moves one fetch a round, and a check that started from it read the whole unread rest of the
// topic again every round (quadratic in the output of a takeover). A log-node in-process; the
// check's fetches (its own topic only, no wait) are counted through a proxy of the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { lastOffsets } from './view-check.js';
import { interceptLog } from '../harness/index.js';
import { openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const TOPIC = 'by_country';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const DOCS = 2_000;
/** Small, with small appends, so the read-back of the task's own output takes many rounds. */
const FETCH_BYTES_MAX = 8 * 1024;
const APPEND_RECORDS_MAX = 20;
const WAIT_MS = 60_000;
/** Rounds of the task after it caught up, for a check that reads again to show itself. */
const SETTLE_MS = 1_500;

describe("a view task's claim check", () => {
  let rig: ViewTaskRig;

  beforeAll(async () => {
    rig = await openViewTaskRig('views-claim-check-reads', SOURCE, PARTITIONS, DEFINITION);
    await rig.node.client.ensureTopic(TOPIC);
  });

  afterAll(() => rig?.close());

  it('reads what the task appended about once, not again every round its read-back lags', async () => {
    const encoder = new TextEncoder();
    const byPartition = new Map<
      number,
      { key: string; value: Uint8Array; timestampMs: number }[]
    >();
    for (let i = 0; i < DOCS; i++) {
      const key = `o${i}`;
      const records = byPartition.get(partitionFor(key, PARTITIONS)) ?? [];
      records.push({
        key,
        value: encoder.encode(JSON.stringify({ country: `c${i}` })),
        timestampMs: Date.now(),
      });
      byPartition.set(partitionFor(key, PARTITIONS), records);
    }
    for (const [partition, records] of byPartition) {
      await rig.node.client.append(SOURCE, partition, encodeBatch(records));
    }
    let appendedBytes = 0;
    let checkBytes = 0;
    const client = rig.node.client;
    const log = interceptLog(client, {
      append: (topic, partition, bytes, ...rest) => {
        if (topic === TOPIC) appendedBytes += bytes.length;
        return client.append(topic, partition, bytes, ...rest);
      },
      fetch: async (positions, options) => {
        const fetched = await client.fetch(positions, options);
        if (options?.waitMs === 0 && positions.every((p) => p.topic === TOPIC)) {
          for (const outcome of fetched) {
            if ('error' in outcome) continue;
            for (const batch of iterateBatches(outcome.batches)) {
              checkBytes += batch.bytes.length;
            }
          }
        }
        return fetched;
      },
    });
    const task = rig.start({
      topic: TOPIC,
      takeover: true,
      log,
      limits: { fetchBytesMax: FETCH_BYTES_MAX, appendRecordsMax: APPEND_RECORDS_MAX },
    });
    await task.waiters.wait(await lastOffsets(rig.node.client, SOURCE), WAIT_MS);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await rig.stop(task);
    expect(appendedBytes).toBeGreaterThan(10 * FETCH_BYTES_MAX);
    // Each offset read once (a check starts past the last batch it read); without that, every
    // round read the rest again: 2.7 times what was appended here.
    expect(checkBytes).toBeLessThanOrEqual(1.25 * appendedBytes);
  });
});
