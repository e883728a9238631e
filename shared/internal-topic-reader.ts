/**
 * Reads partition 0 of an internal topic (settings, view definitions) forward from an offset up
 * to the end offset seen first: these topics are compacted and small, so gateways read them
 * from the log itself and every answer includes every write acknowledged before it began.
 */
import { decodeRecords, iterateBatches } from './batch-codec.js';
import { unavailable } from './errors.js';
import type { LogClient } from './log-api.js';

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
  const bounds = (await log.offsets()).find(
    (o) => o.topic === topic && o.partition === INTERNAL_PARTITION,
  );
  // offsets() leaves out a partition without a leader or whose log failed: that is not an empty
  // topic, and reading it as one would forget every setting or view it holds.
  if (bounds === undefined && (await log.topics()).some((t) => t.name === topic)) {
    throw unavailable(
      'partition_unavailable',
      `${topic} partition ${INTERNAL_PARTITION} has no leader or its log failed`,
      { topic, partitions: [INTERNAL_PARTITION] },
    );
  }
  let offset = Math.max(from, bounds?.logStartOffset ?? 0);
  const end = bounds?.endOffset ?? 0;
  while (offset < end) {
    const read = await log.read(topic, INTERNAL_PARTITION, offset, { maxBytes: readBytesMax });
    const start = offset;
    for (const batch of iterateBatches(read.batches)) {
      for (const record of decodeRecords(batch.bytes)) {
        if (record.offset >= start) visit(record.key, record.value, record.offset);
      }
      offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
    }
    if (offset === start) break;
  }
  return Math.max(offset, from);
}
