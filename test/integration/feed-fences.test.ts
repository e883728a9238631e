// Proves a change feed's count of a view partition's epochs before its start (gateway/feed-fences.ts)
// fails, retryable (503), when the log answers nothing below the start, instead of answering an epoch
// that may be too low (which would send a fenced writer's record), and answers the greatest epoch
// when the log answers; that a second feed counts on from the gateway's mark of the first one's
// count (gateway/feed-epochs.ts), reading only the records written since, and still leaves out a
// fenced writer's record; and that a mark does not outlive its topic: after the view's topic is
// dropped and created again, a record of the new topic's lower epochs goes out; and that the counts
// that end together check their topic's incarnation with one read of the topics, begun after them
// (a read under way began too early to say what they read; calls in one turn share a read that
// has not begun). A real log node
// with views declared, read over its Kafka listener; the empty answer is injected at the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type StoredRecord,
} from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewCatalog } from '../../shared/view-catalog.js';
import { epochHeader } from '../../shared/view-epoch.js';
import { DEFAULT_LIMITS } from '../../gateway/config.js';
import { FeedEpochs } from '../../gateway/feed-epochs.js';
import { FeedFences } from '../../gateway/feed-fences.js';
import { CollectionIncarnations } from '../../gateway/incarnations.js';
import { interceptLog } from '../harness/index.js';
import { startLog, type LogFixture } from './gateway-harness.js';

const VIEW = 'per_country';
/** A view of many records, read by two feeds one after the other. */
const MANY = 'many';
/** A view whose topic is dropped and created again. */
const AGAIN = 'again';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const READ_BYTES_MAX = 1 << 20;
/** Small reads, so a count of the whole partition takes many. */
const COUNT_READ_BYTES_MAX = 4096;
const INCARNATIONS_REFRESH_MS = 60_000;
/** How many turns of the microtask queue a read of the topics asked for may take to begin. */
const MICROTASK_TURNS_MAX = 10;
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** Appends `count` records of `epoch` to partition 0 of `topic`, in batches of up to 100. */
async function appendEpochs(topic: string, epoch: number, count: number): Promise<void> {
  for (let done = 0; done < count; done += 100) {
    const records = Array.from({ length: Math.min(100, count - done) }, (_, i) => ({
      key: `k${done + i}`,
      value: encode({ n: epoch }),
      timestampMs: Date.now(),
      headers: [epochHeader(epoch)],
    }));
    await log.node.client.append(topic, 0, encodeBatch(records));
  }
}

/** The record at `offset` of partition 0 of `topic`. */
async function recordAt(topic: string, offset: number): Promise<StoredRecord> {
  const read = await log.node.client.read(topic, 0, offset, { maxBytes: READ_BYTES_MAX });
  for (const batch of iterateBatches(read.batches)) {
    for (const record of decodeRecords(batch.bytes)) if (record.offset === offset) return record;
  }
  throw new Error(`no record at offset ${offset} of ${topic}`);
}

/** One feed's fences on the gateway's shared marks; `counted` adds up the records it counts. */
function feedOn(epochs: FeedEpochs, incarnations: CollectionIncarnations) {
  const tally = { counted: 0 };
  const fences = new FeedFences({
    log: log.client,
    views: new ViewCatalog(log.client, READ_BYTES_MAX),
    epochs,
    incarnations,
    readBytesMax: COUNT_READ_BYTES_MAX,
    readsMax: DEFAULT_LIMITS.feedEpochReadsMax,
    signal: new AbortController().signal,
    counted: (records) => (tally.counted += records),
    reading: () => undefined,
  });
  return { fences, tally };
}

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(1);
  await log.node.client.ensureTopic(VIEW);
  // Records of epochs 3, 7, 5 (a fenced writer's), then the feed's first record, a fenced
  // writer's again. Written before the view is declared: the log-node lets only its processor
  // write a view's topic.
  for (const epoch of [3, 7, 5, 5]) {
    await log.node.client.append(
      VIEW,
      0,
      encodeBatch([
        {
          key: 'DE',
          value: encode({ n: epoch }),
          timestampMs: Date.now(),
          headers: [epochHeader(epoch)],
        },
      ]),
    );
  }
  await log.node.client.ensureTopic(VIEWS_TOPIC);
  for (const name of [VIEW, MANY, AGAIN]) {
    await log.node.client.ensureTopic(name);
    await log.node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([{ key: name, value: encode(DEFINITION), timestampMs: Date.now() }]),
    );
  }
});
afterAll(() => log.stop());

/** The log client, its partition reads answering no batches while `empty`. */
function emptyReads(client: LogClient, state: { empty: boolean }): LogClient {
  return interceptLog(client, {
    read: async (...args) => {
      const read = await client.read(...args);
      return state.empty ? { ...read, batches: Buffer.alloc(0) } : read;
    },
  });
}

describe('FeedFences', () => {
  it('fails retryably when the log answers nothing before the feed start, and fences once it does', async () => {
    const state = { empty: true };
    const client = emptyReads(log.node.client, state);
    const fences = new FeedFences({
      log: client,
      views: new ViewCatalog(log.node.client, READ_BYTES_MAX),
      epochs: new FeedEpochs(16),
      incarnations: new CollectionIncarnations(log.node.client, INCARNATIONS_REFRESH_MS),
      readBytesMax: READ_BYTES_MAX,
      readsMax: DEFAULT_LIMITS.feedEpochReadsMax,
      signal: new AbortController().signal,
      counted: () => undefined,
      reading: () => undefined,
    });
    const first = await recordAt(VIEW, 3);
    await expect(fences.kept(VIEW, 0, [[first]])).rejects.toMatchObject({
      status: 503,
      code: 'feed_epochs_unread',
    });
    state.empty = false;
    // Epoch 7 was seen before the start: the record of epoch 5 is left out.
    const [kept] = await fences.kept(VIEW, 0, [[first]]);
    expect(kept?.has(first)).toBe(false);
  });

  it("counts on from the last feed's mark: the second feed reads only the records written since", async () => {
    const epochs = new FeedEpochs(16);
    const incarnations = new CollectionIncarnations(log.client, INCARNATIONS_REFRESH_MS);
    // 400 records of epoch 9, then a fenced writer's record of epoch 4: the first feed's start.
    await appendEpochs(MANY, 9, 400);
    await appendEpochs(MANY, 4, 1);
    const first = feedOn(epochs, incarnations);
    const [firstKept] = await first.fences.kept(MANY, 0, [[await recordAt(MANY, 400)]]);
    expect(firstKept?.has(await recordAt(MANY, 400))).toBe(false);
    expect(first.tally.counted).toBe(400);
    // Ten more of epoch 9, and a fenced writer's record again: the second feed's start.
    await appendEpochs(MANY, 9, 10);
    await appendEpochs(MANY, 4, 1);
    const second = feedOn(epochs, incarnations);
    const start = await recordAt(MANY, 411);
    const [secondKept] = await second.fences.kept(MANY, 0, [[start]]);
    expect(secondKept?.has(start)).toBe(false);
    // From the first feed's start (400) to its own (411): not the 411 records from the log start.
    expect(second.tally.counted).toBe(11);
    expect(epochs.size).toBe(1);
  });

  it("forgets a mark when the view's topic is dropped and created again", async () => {
    const epochs = new FeedEpochs(16);
    const incarnations = new CollectionIncarnations(log.client, INCARNATIONS_REFRESH_MS);
    incarnations.update(await log.client.topics());
    await appendEpochs(AGAIN, 50, 100);
    const first = feedOn(epochs, incarnations);
    await first.fences.kept(AGAIN, 0, [[await recordAt(AGAIN, 99)]]);
    expect(first.tally.counted).toBe(99);

    // The topic again, written from offset 0 by a processor whose epochs start low.
    await log.node.client.deleteTopic(AGAIN);
    await log.node.client.ensureTopic(AGAIN);
    await appendEpochs(AGAIN, 3, 120);
    const record = await recordAt(AGAIN, 119);
    const second = feedOn(epochs, incarnations);
    // This gateway last saw the old topic: the count finds out, and is read again (503).
    await expect(second.fences.kept(AGAIN, 0, [[record]])).rejects.toMatchObject({
      status: 503,
      code: 'feed_epochs_unread',
    });
    second.tally.counted = 0;
    const [kept] = await second.fences.kept(AGAIN, 0, [[record]]);
    // The old topic's epoch 50 would fence it.
    expect(kept?.has(record)).toBe(true);
    // Counted from the new topic's log start, not on from the old topic's mark.
    expect(second.tally.counted).toBe(119);
  });

  it('reads the incarnations of counts that end together with one read of the topics, begun after them', async () => {
    const state = { reads: 0, begun: [] as number[] };
    const client = interceptLog(log.client, {
      topics: () => {
        state.reads += 1;
        state.begun.push(performance.now());
        return log.client.topics();
      },
    });
    const incarnations = new CollectionIncarnations(client, INCARNATIONS_REFRESH_MS);
    const first = incarnations.fresh(MANY);
    // Calls in the same turn share a read not yet begun; wait until it is under way.
    for (let turn = 0; turn < MICROTASK_TURNS_MAX && state.reads === 0; turn++) {
      await Promise.resolve();
    }
    expect(state.reads).toBe(1);
    // Arriving while the first read is under way: they share the next one, begun after it.
    const askedAt = performance.now();
    const later = [incarnations.fresh(MANY), incarnations.fresh(AGAIN), incarnations.fresh(VIEW)];
    await Promise.all([first, ...later]);
    expect(state.reads).toBe(2);
    expect(state.begun[1]).toBeGreaterThanOrEqual(askedAt);
    const held = (await log.client.topics()).find((topic) => topic.name === AGAIN);
    expect(await incarnations.fresh(AGAIN)).toBe(held?.incarnation ?? 0);
    expect(state.reads).toBe(3);
  });
});
