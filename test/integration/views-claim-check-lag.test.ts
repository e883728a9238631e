// Proves that a view processor's claim check waits out a log whose appended records are not yet
// readable (a high watermark that lags the append, as after a leader change) rather than failing
// the round on its first empty answer: after an answer that brings nothing it asks again with the
// fetch wait, which the log answers as soon as the records are readable. Asked back to back with
// no wait, three answers a millisecond apart all come back empty and every round fails unpublished.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VIEW_TASK_LIMITS_DEFAULT } from '../../views/view-task.js';
import { expectedView, lastOffsets, readSourceDocuments, viewThrough } from './view-check.js';
import { interceptLog } from '../harness/intercept-log.js';
import { openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 2;
const SOURCE = 'orders';
const TOPIC = 'by_country_lagging';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
/** How long an append to the view's topic stays unreadable; below the rig's fetch wait (50 ms). */
const LAG_MS = 25;
const WAIT_MS = 30_000;
const WRITES = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a view task's claim check against a log whose appends are readable late", () => {
  let rig: ViewTaskRig;
  beforeAll(async () => {
    rig = await openViewTaskRig('views-claim-check-lag', SOURCE, PARTITIONS, DEFINITION);
    await rig.node.client.ensureTopic(TOPIC);
  });

  afterAll(async () => {
    await rig?.close();
  });

  it('publishes every round: no run of empty answers reaches the stall limit', async () => {
    const log = rig.node.client;
    let readableAtMs = 0;
    let emptyInARow = 0;
    let emptyInARowMax = 0;
    // The claim check's reads (of the view's topic alone) see nothing appended until LAG_MS after
    // the last append; a read that may wait is answered once the records are readable.
    const lagging = interceptLog(log, {
      append: async (...args) => {
        const appended = await log.append(...args);
        if (args[0] === TOPIC) readableAtMs = Date.now() + LAG_MS;
        return appended;
      },
      fetch: async (positions, options) => {
        if (!positions.every((p) => p.topic === TOPIC)) return log.fetch(positions, options);
        const unreadableMs = readableAtMs - Date.now();
        if (unreadableMs > 0 && (options?.waitMs ?? 0) > 0) {
          await sleep(Math.min(unreadableMs, options!.waitMs!));
        }
        const fetched = await log.fetch(positions, options);
        if (Date.now() >= readableAtMs) {
          emptyInARow = 0;
          return fetched;
        }
        emptyInARowMax = Math.max(emptyInARowMax, ++emptyInARow);
        return fetched.map((o) => ('error' in o ? o : { ...o, batches: Buffer.alloc(0) }));
      },
    });
    const task = rig.start({ topic: TOPIC, takeover: true, log: lagging });
    for (let i = 0; i < WRITES; i++) {
      await rig.write([[`o${i}`, { country: i % 2 === 0 ? 'AT' : 'BE' }]]);
      await task.waiters.wait(await lastOffsets(log, SOURCE), WAIT_MS);
    }
    const ends = await task.waiters.wait(await lastOffsets(log, SOURCE), WAIT_MS);
    expect(await viewThrough(log, TOPIC, ends)).toEqual(
      Object.fromEntries(
        expectedView(DEFINITION, await readSourceDocuments(log, SOURCE, PARTITIONS)),
      ),
    );
    // The lag was met: each round's check had an empty answer to wait out.
    expect(emptyInARowMax).toBeGreaterThan(0);
    expect(emptyInARowMax).toBeLessThan(VIEW_TASK_LIMITS_DEFAULT.claimCheckStallsMax);
  });
});
