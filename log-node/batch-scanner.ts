/**
 * Reads a segment file sequentially, batch by batch, through a bounded buffer: the one loop that
 * recovery, index rebuilds, compaction and offset lookups share.
 */
import {
  BATCH_BYTES_FORMAT_MAX,
  BATCH_HEADER_BYTES,
  type BatchHeader,
  checkStoredBatch,
  readBatchHeader,
} from '../shared/batch-codec.js';
import type { FileIO } from '../shared/file-io.js';

export const SCAN_CHUNK_BYTES = 1024 * 1024;

export interface ScannedBatch {
  header: BatchHeader;
  position: number;
  /** The batch's bytes; valid only until the visitor returns. */
  bytes: Buffer;
}

export type ScanEnd =
  | { kind: 'end'; position: number }
  | { kind: 'invalid'; position: number; reason: 'incomplete' | 'corrupt'; detail: string }
  | { kind: 'stopped'; position: number };

export interface ScanOptions {
  from?: number;
  until: number;
  /**
   * Check every batch's CRC and structure (recovery, rebuilds), a compressed batch's records only
   * when a visitor decodes them, so none is inflated twice; headers only otherwise. A batch on
   * disk is bounded by the format and by `until`, never by batchBytesMax, which bounds new appends
   * and may have been higher when the batch was written.
   */
  verify: boolean;
  /**
   * Where a caller that scans one file in many calls keeps its chunk and what the last call read
   * into it (scanCursor): a call that starts inside that window reads only past it. Without one,
   * each call reads its chunk anew from `from`.
   */
  cursor?: ScanCursor;
}

/** A chunk of a file and the bytes of it that were read: [start, start + length). */
export interface ScanCursor {
  buffer: Buffer;
  start: number;
  length: number;
}

/** A scan chunk for `spanBytes` of a file: a tailing reader's lookup scans only a few KiB. */
function allocateScanChunk(spanBytes: number): Buffer {
  return Buffer.allocUnsafe(Math.max(BATCH_HEADER_BYTES, Math.min(spanBytes, SCAN_CHUNK_BYTES)));
}

/** A cursor for scanning `spanBytes` of one file in many calls (one chunk for all of them). */
export function scanCursor(spanBytes: number): ScanCursor {
  return { buffer: allocateScanChunk(spanBytes), start: 0, length: 0 };
}

/** Calls `visit` per batch in file order; `visit` returns false to stop early. */
export function scanBatches(
  io: FileIO,
  fd: number,
  options: ScanOptions,
  visit: (batch: ScannedBatch) => boolean | void,
): ScanEnd {
  // A full chunk for each tailing reader's lookup was most of the log-node's garbage under write
  // load (profiled): the chunk is sized to the span.
  const from = options.from ?? 0;
  const chunk = options.cursor ?? scanCursor(options.until - from);
  if (from < chunk.start || from > chunk.start + chunk.length) {
    chunk.start = from;
    chunk.length = 0;
  }
  let position = from;
  /** Makes at least needBytes from `position` available in the chunk, as far as the file has them. */
  const fill = (needBytes: number): number => {
    const offsetInBuffer = position - chunk.start;
    if (offsetInBuffer + needBytes <= chunk.length) return chunk.length - offsetInBuffer;
    const keep = Math.max(0, chunk.length - offsetInBuffer);
    if (needBytes > chunk.buffer.length) {
      const larger = Buffer.allocUnsafe(Math.max(needBytes, chunk.buffer.length * 2));
      if (keep > 0) chunk.buffer.copy(larger, 0, offsetInBuffer, chunk.length);
      chunk.buffer = larger;
    } else if (keep > 0) {
      chunk.buffer.copy(chunk.buffer, 0, offsetInBuffer, chunk.length);
    }
    chunk.start = position;
    chunk.length = keep;
    while (chunk.length < needBytes && chunk.start + chunk.length < options.until) {
      const want = Math.min(
        chunk.buffer.length - chunk.length,
        options.until - chunk.start - chunk.length,
      );
      const read = io.read(fd, chunk.buffer, chunk.length, want, chunk.start + chunk.length);
      if (read === 0) break;
      chunk.length += read;
    }
    return chunk.length;
  };

  while (position < options.until) {
    const headerBytes = BATCH_HEADER_BYTES;
    if (fill(headerBytes) < headerBytes) {
      return { kind: 'invalid', position, reason: 'incomplete', detail: 'header cut short' };
    }
    const at = position - chunk.start;
    const header = readBatchHeader(chunk.buffer.subarray(at, chunk.length));
    if (
      header === null ||
      header.sizeBytes < headerBytes ||
      header.sizeBytes > BATCH_BYTES_FORMAT_MAX
    ) {
      return {
        kind: 'invalid',
        position,
        reason: 'corrupt',
        detail: `batch length ${header?.sizeBytes} invalid`,
      };
    }
    if (position + header.sizeBytes > options.until) {
      return { kind: 'invalid', position, reason: 'incomplete', detail: 'batch cut short' };
    }
    if (options.verify) {
      if (fill(header.sizeBytes) < header.sizeBytes) {
        return { kind: 'invalid', position, reason: 'incomplete', detail: 'batch cut short' };
      }
      const start = position - chunk.start;
      const check = checkStoredBatch(chunk.buffer.subarray(start, start + header.sizeBytes), 0);
      if (!check.ok)
        return { kind: 'invalid', position, reason: check.reason, detail: check.detail };
      const keepGoing = visit({
        header: check.header,
        position,
        bytes: chunk.buffer.subarray(start, start + header.sizeBytes),
      });
      if (keepGoing === false) return { kind: 'stopped', position };
    } else {
      const keepGoing = visit({
        header,
        position,
        bytes: chunk.buffer.subarray(at, at + headerBytes),
      });
      if (keepGoing === false) return { kind: 'stopped', position };
    }
    position += header.sizeBytes;
  }
  return { kind: 'end', position };
}
