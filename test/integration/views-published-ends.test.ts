// Proves that a view processor never publishes frontiers without the view offsets that cover
// them, when a round fails after some of its output was acknowledged: a later chunk of the outbox
// refused, or (a takeover's held output) the read of the view topic's ends after the append. A
// token read waits until the published frontiers pass its source offsets and then reads the view
// through the published ends; before, those ends left out what the failed round had appended
// (its offsets were forgotten with the round), and such a read missed groups the frontiers
// covered. A log-node in-process; the faults are the log's own answers, refused once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogClient } from '../../shared/log-api.js';
import { partitionFor } from '../../shared/partitioner.js';
import type { ViewTask } from '../../views/view-task.js';
import {
  expectedView,
  isClaimBatch,
  lastOffsets,
  readSourceDocuments,
  viewThrough,
} from './view-check.js';
import { interceptLog } from '../harness/index.js';
import { openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const WAIT_MS = 20_000;

const groupKey = (country: string) => JSON.stringify([country]);

/**
 * Countries whose groups sort first-then-rest with the first alone in its view partition: the
 * outbox is appended in key order, so a fault on the second append leaves the first one's
 * partition covered by nothing appended after it.
 */
function countriesApart(): string[] {
  const codes = ['AT', 'BE', 'CH', 'DE', 'ES', 'FR', 'GR', 'IT', 'NL', 'PT', 'SE', 'UK'];
  const [first, ...rest] = codes;
  const apart = rest.filter(
    (c) => partitionFor(groupKey(c), PARTITIONS) !== partitionFor(groupKey(first), PARTITIONS),
  );
  expect(apart.length).toBeGreaterThanOrEqual(2);
  return [first, ...apart.slice(0, 2)];
}

type Call = { call: 'append'; topic: string; claim: boolean } | { call: 'offsets' };

/** The log, but the calls `refuse` picks fail (an Error, as a lost connection would). */
function faultyLog(log: LogClient, refuse: (call: Call) => boolean): LogClient {
  return interceptLog(log, {
    append: (topic, partition, bytes, ...rest) => {
      if (refuse({ call: 'append', topic, claim: isClaimBatch(bytes) })) {
        return Promise.reject(new Error('append refused (fault)'));
      }
      return log.append(topic, partition, bytes, ...rest);
    },
    offsets: () =>
      refuse({ call: 'offsets' })
        ? Promise.reject(new Error('offsets refused (fault)'))
        : log.offsets(),
  });
}

describe('published view frontiers always come with the view offsets that cover them', () => {
  let rig: ViewTaskRig;
  const write = (orders: [key: string, country: string][]) =>
    rig.write(orders.map(([key, country]) => [key, { country }]));
  const startTask = (topic: string, takeover: boolean, log: LogClient) =>
    rig.start({ topic, takeover, log, limits: { appendRecordsMax: 1 } });
  /** A token read: waits for the frontiers, then reads through the ends they came with. */
  const expectTokenReadWhole = async (task: ViewTask, topic: string) => {
    const ends = await task.waiters.wait(await lastOffsets(rig.node.client, SOURCE), WAIT_MS);
    const expected = expectedView(
      DEFINITION,
      await readSourceDocuments(rig.node.client, SOURCE, PARTITIONS),
    );
    expect(await viewThrough(rig.node.client, topic, ends)).toEqual(Object.fromEntries(expected));
  };

  beforeAll(async () => {
    rig = await openViewTaskRig('views-published-ends', SOURCE, PARTITIONS, DEFINITION);
  });

  afterAll(() => rig?.close());

  it('keeps the offsets of an outbox chunk appended before a later chunk failed', async () => {
    const topic = 'by_country_chunks';
    await rig.node.client.ensureTopic(topic);
    const countries = countriesApart();
    await write(countries.map((c, i) => [`c${i}`, c]));
    // One output record an append (appendRecordsMax 1), in key order: the second is refused, once.
    let outputAppends = 0;
    const log = faultyLog(rig.node.client, (c) => {
      if (c.call !== 'append' || c.topic !== topic || c.claim) return false;
      outputAppends += 1;
      return outputAppends === 2;
    });
    const task = startTask(topic, false, log);
    await expectTokenReadWhole(task, topic);
    expect(outputAppends).toBeGreaterThan(countries.length);
  });

  it("keeps the offsets of a takeover's held output when reading the topic's ends failed", async () => {
    const topic = 'by_country_takeover';
    await rig.node.client.ensureTopic(topic);
    await write(countriesApart().map((c, i) => [`t${i}`, c]));
    // The first look at the offsets after the held output is appended is refused, once.
    let outputAppended = false;
    let refused = false;
    const log = faultyLog(rig.node.client, (c) => {
      if (c.call === 'append') {
        if (c.topic === topic && !c.claim) outputAppended = true;
        return false;
      }
      if (!outputAppended || refused) return false;
      refused = true;
      return true;
    });
    const task = startTask(topic, true, log);
    await waitUntil(() => Promise.resolve(refused));
    // A later write moves one partition: its round publishes, and must carry every end.
    await write([['late', 'AT']]);
    await expectTokenReadWhole(task, topic);
  });
});

async function waitUntil(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await done())) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
