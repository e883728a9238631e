// Proves that a view processor never publishes frontiers without the view offsets that cover
// them, when a round fails after some of its output was acknowledged: a later chunk of the outbox
// refused, or (a takeover's held output) the read of the view topic's ends after the append. A
// token read waits until the published frontiers pass its source offsets and then reads the view
// through the published ends; before, those ends left out what the failed round had appended
// (its offsets were forgotten with the round), and such a read missed groups the frontiers
// covered. A log-node in-process; the faults are the log's own answers, refused once.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { partitionFor } from '../../shared/partitioner.js';
import { parseViewDefinition } from '../../shared/view-definition.js';
import { VIEW_TASK_LIMITS_DEFAULT, ViewTask } from '../../views/view-task.js';
import { tempDir } from '../harness/temp-dir.js';
import {
  expectedView,
  isClaimBatch,
  lastOffsets,
  readSourceDocuments,
  viewThrough,
} from './view-check.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const WAIT_MS = 20_000;

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
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
  return new Proxy(log, {
    get(target, property, receiver) {
      if (property === 'append') {
        const append: LogClient['append'] = (topic, partition, bytes, ...rest) => {
          if (refuse({ call: 'append', topic, claim: isClaimBatch(bytes) })) {
            return Promise.reject(new Error('append refused (fault)'));
          }
          return target.append(topic, partition, bytes, ...rest);
        };
        return append;
      }
      if (property === 'offsets') {
        const offsets: LogClient['offsets'] = () =>
          refuse({ call: 'offsets' })
            ? Promise.reject(new Error('offsets refused (fault)'))
            : target.offsets();
        return offsets;
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

describe('published view frontiers always come with the view offsets that cover them', () => {
  const dir = tempDir('views-published-ends');
  let node: OpenLogNode;
  const logger = pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));
  const tasks: ViewTask[] = [];

  const write = async (orders: [key: string, country: string][]) => {
    for (const [key, country] of orders) {
      await node.client.append(
        SOURCE,
        partitionFor(key, PARTITIONS),
        encodeBatch([{ key, value: encode({ country }), timestampMs: Date.now() }]),
      );
    }
  };
  const startTask = (topic: string, takeover: boolean, log: LogClient) => {
    const task = new ViewTask(
      {
        view: parseViewDefinition(topic, DEFINITION),
        version: 1,
        topic,
        sourceTopic: SOURCE,
        sourceIsView: false,
        takeover,
      },
      `${dir.path}/views/${topic}`,
      PARTITIONS,
      log,
      logger,
      { ...VIEW_TASK_LIMITS_DEFAULT, fetchWaitMs: 50, retryMs: 50, appendRecordsMax: 1 },
    );
    tasks.push(task);
    task.start();
    return task;
  };
  /** A token read: waits for the frontiers, then reads through the ends they came with. */
  const expectTokenReadWhole = async (task: ViewTask, topic: string) => {
    const ends = await task.waiters.wait(await lastOffsets(node.client, SOURCE), WAIT_MS);
    const expected = expectedView(
      DEFINITION,
      await readSourceDocuments(node.client, SOURCE, PARTITIONS),
    );
    expect(await viewThrough(node.client, topic, ends)).toEqual(Object.fromEntries(expected));
  };

  beforeAll(async () => {
    node = await openLogNode({ dataDir: `${dir.path}/log`, partitions: PARTITIONS, logger });
    await node.client.ensureTopic(SOURCE);
  });

  afterAll(async () => {
    for (const task of tasks) await task.stop();
    await node?.stop();
    dir.cleanup();
  });

  it('keeps the offsets of an outbox chunk appended before a later chunk failed', async () => {
    const topic = 'by_country_chunks';
    await node.client.ensureTopic(topic);
    const countries = countriesApart();
    await write(countries.map((c, i) => [`c${i}`, c]));
    // One output record an append (appendRecordsMax 1), in key order: the second is refused, once.
    let outputAppends = 0;
    const log = faultyLog(node.client, (c) => {
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
    await node.client.ensureTopic(topic);
    await write(countriesApart().map((c, i) => [`t${i}`, c]));
    // The first look at the offsets after the held output is appended is refused, once.
    let outputAppended = false;
    let refused = false;
    const log = faultyLog(node.client, (c) => {
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
