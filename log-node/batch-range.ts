/**
 * Where a read's answer lies in bytes read from a segment at a batch boundary (the offset index's
 * entry, or where an earlier walk stopped): the batch holding the offset asked for, then as many
 * whole batches after it as fit the read's bytes. Headers only: the batches were checked when
 * they were appended or recovered.
 */
import { assert } from '../shared/assert.js';
import { BATCH_HEADER_BYTES, batchLastOffsetAt, batchSizeAt } from '../shared/batch-codec.js';

export type BatchRange =
  /** Whole batches at [start, end): the one holding the offset, then those within maxBytes. */
  | { kind: 'batches'; start: number; end: number }
  /** The batch holding the offset starts at `start` but does not end within the bytes read. */
  | { kind: 'cut'; start: number; sizeBytes: number }
  /** Every batch that starts in the bytes read ends before the offset; the next starts at `next`. */
  | { kind: 'before'; next: number };

export function locateBatches(
  buf: Buffer,
  length: number,
  offset: number,
  maxBytes: number,
): BatchRange {
  let start = 0;
  while (start + BATCH_HEADER_BYTES <= length && batchLastOffsetAt(buf, start) < offset) {
    const size = batchSizeAt(buf, start);
    assert(size >= BATCH_HEADER_BYTES, 'a committed batch is at least a header long');
    start += size;
  }
  if (start + BATCH_HEADER_BYTES > length) return { kind: 'before', next: start };
  const first = batchSizeAt(buf, start);
  assert(first >= BATCH_HEADER_BYTES, 'a committed batch is at least a header long');
  if (start + first > length) return { kind: 'cut', start, sizeBytes: first };
  // The first batch goes whole even past maxBytes, so a large batch never blocks a reader.
  let end = start + first;
  while (end + BATCH_HEADER_BYTES <= length) {
    const size = batchSizeAt(buf, end);
    if (end + size > length || end + size - start > maxBytes) break;
    end += size;
  }
  return { kind: 'batches', start, end };
}
