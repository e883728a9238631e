// Proves a change feed's counts of views' partitions below its start hold at most
// `feedEpochReadsMax` reads in flight (feed-fences.ts), so at most that many times
// `feedReadBytesMax` bytes, however many partitions one read answer begins counting at once: 16
// partitions of a view, each count's read held a while by the log, reach the bound and never pass
// it, and every count still answers its partition's fence. A real log-node read over its Kafka
// listener; the reads are watched (and slowed) at the client. And that the bound is on each read,
// not on a count's whole range: counts that each take several reads move forward together (every
// partition's first read before any partition's next), rather than in waves of `READS_MAX`
// partitions whose first read waited for others' counts to end, their log start chosen meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewCatalog } from '../../shared/view-catalog.js';
import { epochHeader } from '../../shared/view-epoch.js';
import { FeedEpochs } from '../../gateway/feed-epochs.js';
import { FeedFences } from '../../gateway/feed-fences.js';
import { CollectionIncarnations } from '../../gateway/incarnations.js';
import { interceptLog, keysIn } from '../harness/index.js';
import { startLog, type LogFixture } from './gateway-harness.js';

const PARTITIONS = 16;
const VIEW = 'wide';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const READ_BYTES_MAX = 1 << 20;
const READS_MAX = 3;
/** How long the log holds each count's read, so the counts begun together overlap. */
const READ_HELD_MS = 30;
/** Epochs of each partition's records: the third, a fenced writer's, is where the feed starts. */
const EPOCHS = [2, 4, 3];
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(PARTITIONS);
  await log.node.client.ensureTopic(VIEW);
  for (let p = 0; p < PARTITIONS; p++) {
    const keys = keysIn(p, PARTITIONS, EPOCHS.length);
    for (const [i, epoch] of EPOCHS.entries()) {
      await log.node.client.append(
        VIEW,
        p,
        encodeBatch([
          {
            key: keys[i],
            value: encode({ n: epoch }),
            timestampMs: Date.now(),
            headers: [epochHeader(epoch)],
          },
        ]),
      );
    }
  }
  // Declared after its records: the log-node lets only a view's processor write its topic.
  await log.node.client.ensureTopic(VIEWS_TOPIC);
  await log.node.client.append(
    VIEWS_TOPIC,
    0,
    encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
  );
});
afterAll(() => log?.stop());

/** The client, its reads of the view counted while in flight (and their bytes asked for). */
function watchedReads(client: LogClient) {
  const seen = {
    inFlight: 0,
    inFlightMax: 0,
    bytes: 0,
    bytesMax: 0,
    reads: 0,
    /** The offset each read of the view began at, in the order they began. */
    offsets: [] as number[],
  };
  const watched = interceptLog(client, {
    read: async (...args) => {
      if (args[0] !== VIEW) return client.read(...args);
      const bytes = args[3]?.maxBytes ?? 0;
      seen.reads += 1;
      seen.offsets.push(args[2]);
      seen.inFlight += 1;
      seen.bytes += bytes;
      seen.inFlightMax = Math.max(seen.inFlightMax, seen.inFlight);
      seen.bytesMax = Math.max(seen.bytesMax, seen.bytes);
      try {
        await new Promise((resolve) => setTimeout(resolve, READ_HELD_MS));
        return await client.read(...args);
      } finally {
        seen.inFlight -= 1;
        seen.bytes -= bytes;
      }
    },
  });
  return { watched, seen };
}

describe("a feed's epoch counts", () => {
  it(`hold at most ${READS_MAX} reads of ${READ_BYTES_MAX} bytes over ${PARTITIONS} partitions`, async () => {
    const { watched, seen } = watchedReads(log.client);
    const gauge = { inFlight: 0, inFlightMax: 0 };
    const takes = await countAll(watched, READ_BYTES_MAX, (delta) => {
      gauge.inFlight += delta;
      gauge.inFlightMax = Math.max(gauge.inFlightMax, gauge.inFlight);
    });
    // What /v1/status reports: the reads as the log saw them, none left once the counts end.
    expect(gauge).toEqual({ inFlight: 0, inFlightMax: READS_MAX });
    expect(seen.reads).toBeGreaterThanOrEqual(PARTITIONS);
    expect(seen.inFlightMax).toBe(READS_MAX);
    expect(seen.bytesMax).toBeLessThanOrEqual(READS_MAX * READ_BYTES_MAX);
    // Epoch 3 after epoch 4: each partition's first record past the start is a fenced writer's.
    for (const take of takes) expect(take()).toEqual([new Set()]);
  });

  it('move forward together when each takes several reads', async () => {
    const { watched, seen } = watchedReads(log.client);
    // A byte: each read answers one batch, so each count reads its partition's records one by one.
    const takes = await countAll(watched, 1);
    const below = EPOCHS.length - 1;
    expect(seen.reads).toBe(PARTITIONS * below);
    expect(seen.inFlightMax).toBe(READS_MAX);
    const firstNext = seen.offsets.findIndex((offset) => offset > 0);
    expect(seen.offsets.slice(0, firstNext)).toEqual(Array<number>(PARTITIONS).fill(0));
    for (const take of takes) expect(take()).toEqual([new Set()]);
  });
});

/** Every partition's count begun in the same turn, as a feed's read answer begins them. */
async function countAll(
  watched: LogClient,
  readBytesMax: number,
  reading: (delta: 1 | -1) => void = () => undefined,
) {
  const fences = new FeedFences({
    log: watched,
    views: new ViewCatalog(log.client, READ_BYTES_MAX),
    epochs: new FeedEpochs(PARTITIONS),
    incarnations: new CollectionIncarnations(log.client, 60_000),
    readBytesMax,
    readsMax: READS_MAX,
    signal: new AbortController().signal,
    counted: () => undefined,
    reading,
  });
  const start = EPOCHS.length - 1;
  const firsts = await Promise.all(
    Array.from({ length: PARTITIONS }, async (_, p) => {
      const read = await log.client.read(VIEW, p, start, { maxBytes: READ_BYTES_MAX });
      const records = [...iterateBatches(read.batches)].flatMap((batch) =>
        decodeRecords(batch.bytes),
      );
      return records.filter((record) => record.offset >= start);
    }),
  );
  return Promise.all(firsts.map((records, p) => fences.ready(VIEW, p, [records])));
}
