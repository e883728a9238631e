/**
 * Reads a segment file sequentially, batch by batch, through a bounded buffer: the one loop that
 * recovery, index rebuilds, compaction and offset lookups share.
 */
import {
  BATCH_BYTES_FORMAT_MAX,
  BATCH_HEADER_BYTES,
  type BatchHeader,
  checkBatch,
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
   * Check every batch's CRC and structure (recovery, rebuilds); headers only otherwise. A batch on
   * disk is bounded by the format and by `until`, never by batchBytesMax, which bounds new appends
   * and may have been higher when the batch was written.
   */
  verify: boolean;
  /**
   * The chunk to read into, for a caller that scans one file in many calls (allocateScanChunk);
   * a batch larger than it is read into a larger one of this call's own.
   */
  buffer?: Buffer;
}

/** A scan chunk for `spanBytes` of a file: a tailing reader's lookup scans only a few KiB. */
export function allocateScanChunk(spanBytes: number): Buffer {
  return Buffer.allocUnsafe(Math.max(BATCH_HEADER_BYTES, Math.min(spanBytes, SCAN_CHUNK_BYTES)));
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
  let buffer = options.buffer ?? allocateScanChunk(options.until - (options.from ?? 0));
  let bufferStart = options.from ?? 0;
  let bufferLength = 0;
  let position = bufferStart;
  /** Makes at least needBytes from `position` available in the buffer, as far as the file has them. */
  const fill = (needBytes: number): number => {
    const offsetInBuffer = position - bufferStart;
    if (offsetInBuffer + needBytes <= bufferLength) return bufferLength - offsetInBuffer;
    const keep = Math.max(0, bufferLength - offsetInBuffer);
    if (needBytes > buffer.length) {
      const larger = Buffer.allocUnsafe(Math.max(needBytes, buffer.length * 2));
      if (keep > 0) buffer.copy(larger, 0, offsetInBuffer, bufferLength);
      buffer = larger;
    } else if (keep > 0) {
      buffer.copy(buffer, 0, offsetInBuffer, bufferLength);
    }
    bufferStart = position;
    bufferLength = keep;
    while (bufferLength < needBytes && bufferStart + bufferLength < options.until) {
      const want = Math.min(
        buffer.length - bufferLength,
        options.until - bufferStart - bufferLength,
      );
      const read = io.read(fd, buffer, bufferLength, want, bufferStart + bufferLength);
      if (read === 0) break;
      bufferLength += read;
    }
    return bufferLength;
  };

  while (position < options.until) {
    const headerBytes = BATCH_HEADER_BYTES;
    if (fill(headerBytes) < headerBytes) {
      return { kind: 'invalid', position, reason: 'incomplete', detail: 'header cut short' };
    }
    const at = position - bufferStart;
    const header = readBatchHeader(buffer.subarray(at, bufferLength));
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
      const start = position - bufferStart;
      const check = checkBatch(buffer.subarray(start, start + header.sizeBytes), 0);
      if (!check.ok)
        return { kind: 'invalid', position, reason: check.reason, detail: check.detail };
      const keepGoing = visit({
        header: check.header,
        position,
        bytes: buffer.subarray(start, start + header.sizeBytes),
      });
      if (keepGoing === false) return { kind: 'stopped', position };
    } else {
      const keepGoing = visit({ header, position, bytes: buffer.subarray(at, at + headerBytes) });
      if (keepGoing === false) return { kind: 'stopped', position };
    }
    position += header.sizeBytes;
  }
  return { kind: 'end', position };
}
