// Proves that a view processor's claim check (views-claim-before-append) reads every partition it
// appended to through what it appended, even when a Fetch answer has no room for that partition:
// a Fetch answer is bounded (Kafka's fetch.max.bytes, 16 MiB by the client's default) and filled
// in the order asked, so a partition behind others that use it up comes back with no records
// although it has some past the offset asked. The check took such a partition as checked, and a
// task whose output a later claim had fenced there published its frontiers: a token read then saw
// a view without the write. The task is a serve-node's processor over the Kafka protocol, whose
// client asks for answers of a few bytes (one batch each), against a log-node in-process. And that
// the check's reads are bounded: answers that bring nothing fail the round, unpublished, and a
// later round publishes it once they bring the records, though the source has not moved.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { partitionFor } from '../../shared/partitioner.js';
import { VIEW_WRITER_USERNAME } from '../../shared/view-api.js';
import { VIEW_TASK_LIMITS_DEFAULT } from '../../views/view-task.js';
import { expectedView, lastOffsets, readSourceDocuments, viewThrough } from './view-check.js';
import { interceptLog } from '../harness/index.js';
import { claimingLog, openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const TOPIC = 'by_country';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const SECRET = 'views-claim-check-empty-fetch-secret';
/** Below one batch: every Fetch answer holds the first batch of the first partition that has one. */
const ANSWER_BYTES_MAX = 64;
const WAIT_MS = 30_000;
/** How long a token read waits on the frontiers of the fenced round before it is let go. */
const STALE_WAIT_MS = 1_500;
const COUNTRIES = ['AT', 'BE', 'CH', 'DE', 'ES', 'FR', 'GB', 'IT', 'NL', 'PL', 'PT', 'SE'];

const silent = pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));

/** A country whose group's output lands in `partition` of the view's topic. */
function countryIn(partition: number): string {
  const found = COUNTRIES.find((c) => partitionFor(JSON.stringify([c]), PARTITIONS) === partition);
  if (found === undefined) throw new Error(`no country's group lands in partition ${partition}`);
  return found;
}

/** `count` keys of the source that land in its `partition`. */
function keysIn(partition: number, count: number, prefix: string): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count && i < 10_000; i++) {
    if (partitionFor(`${prefix}${i}`, PARTITIONS) === partition) keys.push(`${prefix}${i}`);
  }
  return keys;
}

describe("a view task's claim check where a Fetch answer has no room for a partition", () => {
  let rig: ViewTaskRig;
  let kafka: KafkaLogClient;
  const encoder = new TextEncoder();
  const expected = async () =>
    Object.fromEntries(
      expectedView(DEFINITION, await readSourceDocuments(rig.node.client, SOURCE, PARTITIONS)),
    );
  /** One source batch: every document in one round of the task. */
  const writeBatch = async (docs: readonly [key: string, country: string][]) => {
    const partition = partitionFor(docs[0][0], PARTITIONS);
    const records = docs.map(([key, country]) => ({
      key,
      value: encoder.encode(JSON.stringify({ country })),
      timestampMs: Date.now(),
    }));
    await rig.node.client.append(SOURCE, partition, encodeBatch(records));
  };
  beforeAll(async () => {
    rig = await openViewTaskRig('views-claim-check-empty-fetch', SOURCE, PARTITIONS, DEFINITION, {
      kafka: { host: '127.0.0.1', port: 0 },
      clusterSecret: SECRET,
    });
    await rig.node.client.ensureTopic(TOPIC);
    // As bin/serve-node-views.ts connects, but with answers of one batch.
    kafka = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${rig.node.kafkaPort}`],
      sasl: { username: VIEW_WRITER_USERNAME, password: SECRET },
      appendCreatesTopics: false,
      fetchBytesMax: ANSWER_BYTES_MAX,
      logger: silent,
    });
  });

  afterAll(async () => {
    await rig?.close();
    kafka?.close();
  });

  it('reads the partition again until it is checked: the fenced round is not published', async () => {
    // The view's output before the write lands in partition `first` alone, so the check asks for
    // `first` before `fenced`, and the answer is full after `first`'s batch.
    const first = countryIn(1);
    const fenced = countryIn(2);
    const [a, b, c] = keysIn(3, 3, 'o');
    await writeBatch([[a, first]]);
    const { log, arm } = claimingLog(kafka, rig.node.client, TOPIC, PARTITIONS, 2);
    let deposed = false;
    const task = rig.start({
      topic: TOPIC,
      takeover: true,
      log,
      events: { published: () => undefined, deposed: () => (deposed = true) },
    });
    expect(
      await viewThrough(
        rig.node.client,
        TOPIC,
        await task.waiters.wait(await lastOffsets(rig.node.client, SOURCE), WAIT_MS),
      ),
    ).toEqual(await expected());

    arm();
    // One round appends to `first` and to `fenced`, after a claim there above the task's.
    await writeBatch([
      [b, first],
      [c, fenced],
    ]);
    const needs = await lastOffsets(rig.node.client, SOURCE);
    // A token read of the write: answered only with a view that holds it, or not at all.
    const answered = await task.waiters.wait(needs, STALE_WAIT_MS).then(
      (ends) => ends,
      () => null,
    );
    if (answered !== null) {
      expect(await viewThrough(rig.node.client, TOPIC, answered)).toEqual(await expected());
    }
    const deadline = Date.now() + WAIT_MS;
    while (!deposed && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(deposed).toBe(true);

    // Dealt the view again, the member resumes with a claim above the late one, over the same
    // one-batch answers: the fenced key is appended again and the write's frontier published.
    await rig.stop(task);
    const second = rig.start({ topic: TOPIC, takeover: true, log: kafka });
    expect(
      await viewThrough(rig.node.client, TOPIC, await second.waiters.wait(needs, WAIT_MS)),
    ).toEqual(await expected());
  });

  it('fails the round while the answers bring nothing, and publishes it once they do', async () => {
    const topic = 'by_country_stalled';
    await rig.node.client.ensureTopic(topic);
    let emptyAnswers = false;
    let emptied = 0;
    // Reads of the view's topic (the claim check's, and the read-back's beside the source)
    // answered with offsets and no records, as a Kafka whose answer others filled does, for as
    // long as `emptyAnswers` holds.
    const log = interceptLog(kafka, {
      fetch: async (positions, options) => {
        const fetched = await kafka.fetch(positions, options);
        if (!emptyAnswers) return fetched;
        if (positions.every((p) => p.topic === topic)) emptied++;
        return fetched.map((o) =>
          'error' in o || o.topic !== topic ? o : { ...o, batches: Buffer.alloc(0) },
        );
      },
    });
    const task = rig.start({ topic, takeover: true, log });
    const [d] = keysIn(0, 1, 'stalled');
    await writeBatch([[d, countryIn(3)]]);
    await task.waiters.wait(await lastOffsets(rig.node.client, SOURCE), WAIT_MS);

    emptyAnswers = true;
    const [e] = keysIn(0, 1, 'stalled-again');
    await writeBatch([[e, countryIn(3)]]);
    const needs = await lastOffsets(rig.node.client, SOURCE);
    // Unchecked, the round is not published: a token read of the write waits.
    await expect(task.waiters.wait(needs, STALE_WAIT_MS)).rejects.toThrow();
    expect(emptied).toBeGreaterThanOrEqual(2 * VIEW_TASK_LIMITS_DEFAULT.claimCheckStallsMax);
    // Answered again, a later round checks and publishes it, though the source has not moved.
    emptyAnswers = false;
    const ends = await task.waiters.wait(needs, WAIT_MS);
    expect(
      (await viewThrough(rig.node.client, topic, ends))[JSON.stringify([countryIn(3)])],
    ).toEqual({ country: countryIn(3), n: 2 });
  });
});
