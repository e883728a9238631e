// Proves the partition writer against a real log-node: concurrent writes coalesce into few
// batches with dense offsets; a lost acknowledgement is retried with the same producer id and
// sequence and appended once; a rejected batch does not consume its sequence; an unknown outcome
// moves to a fresh producer id starting at 0, so no later batch is ever refused or duplicated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WRITER, type WriterConfig } from '../../gateway/config.js';
import { startGateway } from '../../gateway/index.js';
import { startLogNode } from '../../log-node/index.js';
import { tempDir } from '../harness/index.js';
import { PartitionWriter } from '../../gateway/partition-writer.js';
import { closeGatewayServices, writeRecords } from '../../gateway/services.js';
import {
  decodeRecords,
  iterateBatches,
  SEQUENCE_MAX,
  type LogRecord,
} from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { TailbaseError } from '../../shared/errors.js';
import type { AppendResult, LogClient } from '../../shared/log-client.js';
import { gatewayApp, silent, startLog, type LogFixture } from './gateway-harness.js';

let fixture: LogFixture;

beforeAll(async () => {
  fixture = await startLog(4);
});

afterAll(async () => {
  await fixture.stop();
});

const record = (key: string, bytes = 16): LogRecord => ({
  collection: 'w',
  key,
  value: Buffer.from(JSON.stringify({ pad: 'x'.repeat(bytes) })),
  timestampMs: Date.now(),
});

async function batchesOf(partition: number) {
  const read = await fixture.client.read(partition, 0);
  return [...iterateBatches(read.batches)].map(({ header, bytes }) => ({
    producer: Buffer.from(header.producerId).toString('hex'),
    sequence: header.baseSequence,
    keys: decodeRecords(bytes).map((r) => r.key),
  }));
}

/** The real log underneath; `fail` decides per call whether the answer is lost or never sent. */
function faulty(
  fail: (call: number) => 'lose-answer' | 'unreachable' | 'refuse' | 'misconfigured' | null,
): LogClient {
  let calls = 0;
  return {
    cluster: () => fixture.client.cluster(),
    read: (p, o, options) => fixture.client.read(p, o, options),
    fetch: (positions, options) => fixture.client.fetch(positions, options),
    fetchGroups: (partitions) => fixture.client.fetchGroups(partitions),
    offsets: () => fixture.client.offsets(),
    async append(partition, batch, signal): Promise<AppendResult> {
      const mode = fail(calls++);
      if (mode === 'unreachable') throw new TailbaseError(503, 'log_unreachable', 'down');
      if (mode === 'refuse') throw new TailbaseError(401, 'unauthorized', 'wrong secret');
      if (mode === 'misconfigured') {
        throw new TailbaseError(502, 'cluster_misconfigured', 'a node refused the call');
      }
      const result = await fixture.client.append(partition, batch, signal);
      if (mode === 'lose-answer') throw new DOMException('timed out', 'TimeoutError');
      return result;
    },
  };
}

const config = { ...DEFAULT_WRITER, appendRetryBackoffMs: 1 };
const writerOn = (partition: number, log: LogClient = fixture.client) =>
  new PartitionWriter(partition, log, config, silent);

describe('partition writer', () => {
  it('coalesces 300 concurrent writes into few batches with dense, distinct offsets', async () => {
    const writer = writerOn(0);
    const offsets = (
      await Promise.all(Array.from({ length: 300 }, (_, i) => writer.write([record(`c${i}`)])))
    ).flat();
    expect(new Set(offsets).size).toBe(300);
    expect(Math.max(...offsets) - Math.min(...offsets)).toBe(299);
    const batches = await batchesOf(0);
    expect(batches.length).toBeLessThan(30);
    expect(batches.map((b) => b.sequence)).toEqual(batches.map((_, i) => i));
    await writer.close();
  });

  it('retries a batch whose acknowledgement was lost without appending it twice', async () => {
    const writer = writerOn(
      1,
      faulty((n) => (n === 0 ? 'lose-answer' : null)),
    );
    const [offset] = await writer.write([record('once')]);
    const [next] = await writer.write([record('after')]);
    expect(next).toBe(offset + 1);
    const batches = await batchesOf(1);
    expect(batches.flatMap((b) => b.keys)).toEqual(['once', 'after']);
    expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
    await writer.close();
  });

  it('keeps the sequence after a rejected batch', async () => {
    const writer = writerOn(2);
    await writer.write([record('a')]);
    const tooBig = record('huge', 3 * 1024 * 1024);
    await expect(writer.write([tooBig])).rejects.toMatchObject({ status: 413 });
    await writer.write([record('b')]);
    const batches = await batchesOf(2);
    expect(batches.map((b) => b.sequence)).toEqual([0, 1]);
    expect(new Set(batches.map((b) => b.producer)).size).toBe(1);
    await writer.close();
  });

  it('a refusal after a lost answer is an unknown outcome, never a free sequence', async () => {
    // The first attempt is appended but its answer lost; the retry is refused (e.g. a changed
    // secret). Keeping the sequence would have the log answer the next batch as a duplicate of
    // the first, acknowledging records it never stored.
    const writer = writerOn(
      0,
      faulty((n) => (n === 0 ? 'lose-answer' : n === 1 ? 'refuse' : null)),
    );
    const before = (await batchesOf(0)).length;
    await expect(writer.write([record('maybe')])).rejects.toMatchObject({
      code: 'write_outcome_unknown',
    });
    const [offset] = await writer.write([record('next')]);
    const batches = (await batchesOf(0)).slice(before);
    expect(batches.flatMap((b) => b.keys)).toEqual(['maybe', 'next']);
    const read = await fixture.client.read(0, offset);
    const [stored] = [...iterateBatches(read.batches)].flatMap((b) => decodeRecords(b.bytes));
    expect(stored).toMatchObject({ key: 'next', offset });
    await writer.close();
  });

  it('a node refusing the call is a definite refusal: no retry, the sequence kept', async () => {
    const writer = writerOn(
      2,
      faulty((n) => (n === 0 ? 'misconfigured' : null)),
    );
    const before = await batchesOf(2);
    await expect(writer.write([record('refused')])).rejects.toMatchObject({
      code: 'cluster_misconfigured',
    });
    await writer.write([record('taken')]);
    const after = (await batchesOf(2)).slice(before.length);
    expect(after.map((b) => b.keys)).toEqual([['taken']]);
    expect(after[0].sequence).toBe(0);
    await writer.close();
  });

  it('after an unknown outcome starts a fresh producer at sequence 0', async () => {
    const log = faulty((n) => (n >= 1 && n <= 3 ? 'unreachable' : null));
    const writer = writerOn(3, log);
    await writer.write([record('first')]);
    await expect(writer.write([record('lost')])).rejects.toMatchObject({
      code: 'write_outcome_unknown',
    });
    await writer.write([record('third')]);
    const batches = await batchesOf(3);
    expect(batches.flatMap((b) => b.keys)).toEqual(['first', 'third']);
    expect(batches.map((b) => b.sequence)).toEqual([0, 0]);
    expect(batches[0].producer).not.toBe(batches[1].producer);
    await writer.close();
  });

  it('numbers past the int32 sequence under a fresh producer id from 0', async () => {
    const writer = writerOn(1);
    await writer.write([record('under-first-id')]);
    const [firstId] = (await batchesOf(1)).slice(-1);
    // As if SEQUENCE_MAX had just been acknowledged: the next number does not fit the format.
    (writer as unknown as { nextSequence: number }).nextSequence = SEQUENCE_MAX + 1;
    await writer.write([record('under-next-id')]);
    const [next] = (await batchesOf(1)).slice(-1);
    expect(next).toMatchObject({ sequence: 0, keys: ['under-next-id'] });
    expect(next.producer).not.toBe(firstId.producer);
    await writer.close();
  });

  it('a bulk turned away as overloaded leaves nothing queued on any partition', async () => {
    const own = await startLog(2);
    const gateway = await gatewayApp(own.client, [], {
      writer: { lingerMs: 300, pendingBytesMax: 400 },
    });
    try {
      const keyIn = (partition: number, prefix: string) => {
        for (let i = 0; ; i++)
          if (partitionFor('w', `${prefix}${i}`, 2) === partition) return `${prefix}${i}`;
      };
      const [crowded, other] = [keyIn(0, 'a'), keyIn(1, 'b')];
      // Lingers in partition 0's queue while the bulk arrives.
      const waiting = writeRecords(gateway.services, [record(crowded)], new Map());
      const bulk = [record(other), record(crowded, 500)];
      await expect(writeRecords(gateway.services, bulk, new Map())).rejects.toMatchObject({
        status: 503,
        code: 'overloaded',
      });
      await waiting;
      const offsets = await own.client.offsets();
      expect(offsets.map((p) => p.endOffset)).toEqual([1, 0]);
    } finally {
      await closeGatewayServices(gateway.services);
      await own.stop();
    }
  });

  it('refuses to start with batches the log would refuse', async () => {
    const dir = tempDir('strict-log');
    const strict = await startLogNode({
      dataDir: dir.path,
      port: 0,
      partitions: 1,
      recordsPerBatchMax: 100,
      logger: silent,
    });
    try {
      const start = (writer: Partial<WriterConfig>) =>
        startGateway({ logUrls: [strict.url], serveUrls: [], writer }, { logger: silent });
      await expect(start({})).rejects.toThrow(
        /batchRecordsMax 1000 exceeds the log's recordsPerBatchMax 100/,
      );
      const fitting = await start({ batchRecordsMax: 100 });
      await fitting.stop();
    } finally {
      await strict.stop();
      dir.cleanup();
    }
  });
});
