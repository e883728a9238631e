/**
 * Reading a log back for checks: every batch of a topic-partition through the log contract, or
 * every batch of a partition directory straight from its segment files, each one verified by
 * checkBatch.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  batchCodec,
  type BatchHeader,
  checkBatch,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type LogRecord,
  type StoredRecord,
} from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';

export interface ReadBatch {
  header: BatchHeader;
  bytes: Buffer;
}

/** The bytes a producer sent, as stored: everything after the fields the log-node stamps. */
export function producerBytes(batch: Uint8Array): Buffer {
  return Buffer.from(batch.buffer, batch.byteOffset + 16, batch.byteLength - 16);
}

export const lastOffsetOf = (header: BatchHeader) => header.baseOffset + header.lastOffsetDelta;

/** A topic-partition's directory under a log-node's data directory (log-node/FORMAT.md). */
export function partitionDirOf(dataDir: string, topic: string, partition: number): string {
  return path.join(dataDir, 'topics', topic, String(partition));
}

/** Every batch of a topic-partition from `fromOffset` to its end offset, in pages of maxBytes. */
export async function readPartition(
  client: LogClient,
  topic: string,
  partition: number,
  options: { fromOffset?: number; maxBytes?: number; readsMax?: number } = {},
): Promise<{ batches: ReadBatch[]; logStartOffset: number; endOffset: number }> {
  const batches: ReadBatch[] = [];
  let offset = options.fromOffset ?? 0;
  const first = await client.read(topic, partition, offset, { maxBytes: options.maxBytes });
  const { logStartOffset, endOffset } = first;
  for (let reads = 0; offset < endOffset; reads++) {
    if (reads >= (options.readsMax ?? 100_000)) throw new Error('readPartition: too many reads');
    const page =
      reads === 0
        ? first
        : await client.read(topic, partition, offset, { maxBytes: options.maxBytes });
    if (page.batches.length === 0) throw new Error(`empty read at ${offset} before ${endOffset}`);
    for (const { header, bytes } of iterateBatches(page.batches)) {
      if (lastOffsetOf(header) < offset) continue;
      batches.push({ header, bytes: Buffer.from(bytes) });
      offset = lastOffsetOf(header) + 1;
    }
  }
  return { batches, logStartOffset, endOffset };
}

export function recordsOf(batches: readonly ReadBatch[]): StoredRecord[] {
  return batches.flatMap((batch) => decodeRecords(batch.bytes));
}

/** Every `.log` file of a partition directory, each parsed whole; throws at any invalid byte. */
export function readSegmentFiles(
  partitionDir: string,
): { file: string; baseOffset: number; batches: ReadBatch[] }[] {
  const files = fs
    .readdirSync(partitionDir)
    .filter((name) => /^\d{20}\.log$/.test(name))
    .sort();
  return files.map((name) => {
    const bytes = fs.readFileSync(path.join(partitionDir, name));
    const batches: ReadBatch[] = [];
    for (let at = 0; at < bytes.length;) {
      const check = checkBatch(bytes, at);
      if (!check.ok) throw new Error(`${name} byte ${at}: ${check.reason} (${check.detail})`);
      batches.push({
        header: check.header,
        bytes: Buffer.from(bytes.subarray(at, at + check.header.sizeBytes)),
      });
      at += check.header.sizeBytes;
    }
    return { file: name, baseOffset: Number(name.slice(0, 20)), batches };
  });
}

/** The codecs (`batchCodec`) of the batches stored in a topic's segment files, all partitions. */
export function storedCodecs(dataDir: string, topic: string): Set<number> {
  const topicDir = path.join(dataDir, 'log', 'topics', topic);
  const codecs = new Set<number>();
  for (const partition of fs.readdirSync(topicDir)) {
    if (!/^\d+$/.test(partition)) continue;
    for (const segment of readSegmentFiles(path.join(topicDir, partition))) {
      for (const { bytes } of segment.batches) codecs.add(batchCodec(bytes));
    }
  }
  return codecs;
}

/**
 * Appends planned batches to one topic, `inFlight` requests at a time (so group commits share
 * fsyncs), and records each record of `history[partition]` at the offset its ack gave it.
 */
export async function appendPlanned(
  client: LogClient,
  topic: string,
  planned: readonly { partition: number; records: LogRecord[] }[],
  inFlight: number,
  history: Map<number, LogRecord>[],
): Promise<void> {
  let next = 0;
  const sender = async () => {
    while (next < planned.length) {
      const { partition, records } = planned[next++];
      const ack = await client.append(topic, partition, encodeBatch(records));
      records.forEach((record, i) => history[partition].set(ack.baseOffset + i, record));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, sender));
}
