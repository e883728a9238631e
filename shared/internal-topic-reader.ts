/**
 * Reads partition 0 of an internal topic (settings, view definitions) forward from an offset up
 * to the end offset seen first: these topics are compacted and small, so gateways read them
 * from the log itself and every answer includes every write acknowledged before it began.
 */
import { decodeRecords, iterateBatches } from './batch-codec.js';
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
