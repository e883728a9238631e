/**
 * Cuts a log read answer into slices, each applied as its own transactions with the event loop
 * let run between them. Applied whole, one answer (4 MiB a partition) of a bulk load of large
 * texts held the serve thread 1.6 to 3.5 s: the timers of waiting reads (their 504) and the reads
 * themselves waited that long. A slice holds at most `recordsMax` offsets and about `bytesMax`
 * bytes (a batch's bytes spread evenly over its offsets), over every topic-partition it holds; a
 * slice may cut a batch, whose records then go in two transactions, each with its checkpoint.
 */
import { readBatchHeader } from '../shared/batch-codec.js';
import type { ApplyPart } from './replica.js';

export interface SliceBounds {
  recordsMax: number;
  bytesMax: number;
}

/** The slices of `parts`, in order; a topic-partition's pieces keep their offset order. */
export function applySlices(parts: readonly ApplyPart[], bounds: SliceBounds): ApplyPart[][] {
  const slices: ApplyPart[][] = [[]];
  let records = 0;
  let bytes = 0;
  const full = () => records >= bounds.recordsMax || bytes >= bounds.bytesMax;
  for (const part of parts) {
    let from = part.fromOffset;
    let startByte = 0;
    for (let at = 0; ;) {
      const header = readBatchHeader(part.batches, at);
      if (header === null || at + header.sizeBytes > part.batches.length) break;
      const end = header.baseOffset + header.lastOffsetDelta + 1;
      const offsetBytes = header.sizeBytes / (header.lastOffsetDelta + 1);
      let cursor = Math.max(from, header.baseOffset);
      while (cursor < end) {
        if (full()) {
          if (cursor > from) {
            slices[slices.length - 1].push({
              ...part,
              fromOffset: from,
              untilOffset: cursor,
              batches: part.batches.subarray(startByte, at + header.sizeBytes),
            });
            from = cursor;
            // The batch holding `cursor` begins the next piece.
            startByte = at;
          }
          slices.push([]);
          records = 0;
          bytes = 0;
        }
        const taken = Math.min(
          end - cursor,
          bounds.recordsMax - records,
          Math.max(Math.ceil((bounds.bytesMax - bytes) / offsetBytes), 1),
        );
        cursor += taken;
        records += taken;
        bytes += taken * offsetBytes;
      }
      at += header.sizeBytes;
    }
    slices[slices.length - 1].push({
      ...part,
      fromOffset: from,
      batches: part.batches.subarray(startByte),
    });
  }
  return slices.filter((slice) => slice.length > 0);
}
