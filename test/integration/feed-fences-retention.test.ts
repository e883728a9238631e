// Proves what a change feed leaves out of a view's partition is a function of the log, not of the
// gateway's marks (gateway/feed-epochs.ts): once retention has moved the partition's log start, a
// feed on a gateway holding a mark (one behind the new log start, or one at the feed's start whose
// epoch came from records since removed) keeps the same records as a feed on a gateway with none,
// which counts from the log start as a rebuilt serve-node does. A real log node with retention,
// read over its Kafka listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewCatalog } from '../../shared/view-catalog.js';
import { epochHeader } from '../../shared/view-epoch.js';
import { DEFAULT_LIMITS } from '../../gateway/config.js';
import { FeedEpochs } from '../../gateway/feed-epochs.js';
import { FeedFences } from '../../gateway/feed-fences.js';
import { CollectionIncarnations } from '../../gateway/incarnations.js';
import { startLog, type LogFixture } from './gateway-harness.js';

const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const SEGMENT_BYTES_MAX = 2048;
/** About a dozen of the records below: retention keeps the last ones of the fenced writer's. */
const RETENTION_BYTES = 4096;
const READ_BYTES_MAX = 1 << 20;
const INCARNATIONS_REFRESH_MS = 60_000;
/** Records of the processor's epoch, then of a fenced writer's lower one. */
const OWNER_RECORDS = 20;
const FENCED_RECORDS = 40;
const OWNER_EPOCH = 7;
const FENCED_EPOCH = 5;
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(1, { segmentBytesMax: SEGMENT_BYTES_MAX, batchBytesMax: SEGMENT_BYTES_MAX });
  await log.node.client.ensureTopic(VIEW, {
    cleanupPolicy: 'delete',
    retentionBytes: RETENTION_BYTES,
  });
  const append = async (epoch: number, count: number) => {
    for (let i = 0; i < count; i++) {
      const value = encode({ n: epoch, pad: 'x'.repeat(200) });
      const headers = [epochHeader(epoch)];
      await log.node.client.append(
        VIEW,
        0,
        encodeBatch([{ key: `k${i}`, value, timestampMs: Date.now(), headers }]),
      );
    }
  };
  await append(OWNER_EPOCH, OWNER_RECORDS);
  await append(FENCED_EPOCH, FENCED_RECORDS);
  await log.node.client.ensureTopic(VIEWS_TOPIC);
  await log.node.client.append(
    VIEWS_TOPIC,
    0,
    encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
  );
});
afterAll(() => log.stop());

/** A feed's fences on a gateway's marks. */
function feedOn(epochs: FeedEpochs) {
  return new FeedFences({
    log: log.client,
    views: new ViewCatalog(log.client, READ_BYTES_MAX),
    epochs,
    incarnations: new CollectionIncarnations(log.client, INCARNATIONS_REFRESH_MS),
    readBytesMax: READ_BYTES_MAX,
    readsMax: DEFAULT_LIMITS.feedEpochReadsMax,
    signal: new AbortController().signal,
    counted: () => undefined,
    reading: () => undefined,
  });
}

/** The records of the partition from `from` on, as one read answer. */
async function recordsFrom(from: number) {
  const read = await log.client.read(VIEW, 0, from, { maxBytes: READ_BYTES_MAX });
  return [...iterateBatches(read.batches)].flatMap((batch) =>
    decodeRecords(batch.bytes).filter((record) => record.offset >= from),
  );
}

/** The offsets a feed starting at `from` keeps of what it reads first. */
async function keptFrom(fences: FeedFences, from: number): Promise<number[]> {
  const records = await recordsFrom(from);
  const [kept] = await fences.kept(VIEW, 0, [records]);
  return records.filter((record) => kept?.has(record) ?? true).map((record) => record.offset);
}

describe('a change feed of a view after retention', () => {
  it("keeps the same records with or without the gateway's marks", async () => {
    const last = OWNER_RECORDS + FENCED_RECORDS - 1;
    // One gateway's mark at the fenced writer's first record, another's at its last record.
    const behind = new FeedEpochs(16);
    const atStart = new FeedEpochs(16);
    expect(await keptFrom(feedOn(behind), OWNER_RECORDS)).toEqual([]);
    expect(await keptFrom(feedOn(atStart), last)).toEqual([]);

    const cleaned = (await log.node.cleaner.runOnce()).find((summary) => summary.topic === VIEW);
    expect(cleaned?.segmentsDeleted).toBeGreaterThan(0);
    const bounds = (await log.client.offsets()).find((p) => p.topic === VIEW);
    const logStart = bounds?.logStartOffset ?? 0;
    // Every record of the processor's epoch is gone; the mark `behind` is before the log start.
    expect(logStart).toBeGreaterThan(OWNER_RECORDS);
    expect(logStart).toBeLessThan(last);

    // Counted from the log start: only the fenced writer's epoch is left, so its records change
    // documents, as on a serve-node rebuilt from this log.
    const fresh = await keptFrom(feedOn(new FeedEpochs(16)), last);
    expect(fresh).toEqual([last]);
    expect(await keptFrom(feedOn(behind), last)).toEqual(fresh);
    expect(await keptFrom(feedOn(atStart), last)).toEqual(fresh);
  });
});
