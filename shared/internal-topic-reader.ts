/**
 * Reads partition 0 of an internal topic (settings, view definitions) forward from an offset up
 * to the end offset seen first: these topics are compacted and small, so gateways read them
 * from the log itself and every answer includes every write acknowledged before it began. The
 * read loop serves any topic-partition too (a change feed counting a view's epochs before its
 * start, gateway/feed-fences.ts).
 */
import { decodeRecords, iterateBatches, type StoredRecord } from './batch-codec.js';
import type { LogClient } from './log-api.js';
import { topicOffsets } from './topic-offsets.js';

const INTERNAL_PARTITION = 0;

export type InternalRecordVisitor = (
  key: string | null,
  value: Uint8Array | null,
  offset: number,
) => void;

/** Visits every record at or past `from` in order; answers the next offset to read. */
export async function readInternalTopic(
  log: LogClient,
  topic: string,
  from: number,
  readBytesMax: number,
  visit: InternalRecordVisitor,
): Promise<number> {
  const bounds = (await topicOffsets(log, topic, [INTERNAL_PARTITION])).get(INTERNAL_PARTITION);
  const next = await readPartitionRange(
    log,
    { topic, partition: INTERNAL_PARTITION },
    Math.max(from, bounds?.logStartOffset ?? 0),
    bounds?.endOffset ?? 0,
    { readBytesMax },
    (record) => visit(record.key, record.value, record.offset),
  );
  return Math.max(next, from);
}

/**
 * Visits the records of a topic-partition from `from` in order, read by read until a read ends at
 * or past `until` (the last read's records past `until` are visited too); answers the next offset
 * to read, below `until` when a read answered nothing there (the caller decides what that means).
 */
export async function readPartitionRange(
  log: Pick<LogClient, 'read'>,
  { topic, partition }: { topic: string; partition: number },
  from: number,
  until: number,
  options: { readBytesMax: number; signal?: AbortSignal },
  visit: (record: StoredRecord) => void,
): Promise<number> {
  let offset = from;
  while (offset < until) {
    const read = await log.read(topic, partition, offset, {
      maxBytes: options.readBytesMax,
      signal: options.signal,
    });
    const start = offset;
    for (const batch of iterateBatches(read.batches)) {
      for (const record of decodeRecords(batch.bytes)) {
        if (record.offset >= start) visit(record);
      }
      offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
    }
    if (offset === start) break;
  }
  return offset;
}
