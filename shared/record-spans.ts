/**
 * Where each record's key and value lie in an uncompressed batch, found without making an object
 * a record. The Kafka listener looks at every record of every produced batch (its document
 * checks); with checkRawRecords' record objects, layouts and varint results a batched produce
 * spent a quarter of the log-node's time collecting garbage (profiled). The walk bounds every
 * field by the bytes present; what it passes is checked again, whole, by the log's append.
 */
import { BATCH_HEADER_BYTES, type BatchHeader } from './batch-codec.js';

/** Where a record's key and value lie in the batch; a length of −1 is null. */
export type RecordVisitor = (
  index: number,
  keyAt: number,
  keyLength: number,
  valueAt: number,
  valueLength: number,
) => boolean;

export type RecordWalk = 'whole' | 'stopped' | { corrupt: string };

const VARINT_BYTES_MAX = 5;
const VARLONG_BYTES_MAX = 10;

/**
 * Calls `visit` for each of the header's records of the batch at the start of `batch` (its frame
 * already checked), in order; `visit` returns false to stop. 'whole' when every record parsed to
 * the batch's end.
 */
export function walkRecordSpans(
  batch: Buffer,
  header: BatchHeader,
  visit: RecordVisitor,
): RecordWalk {
  const end = header.sizeBytes;
  const reader = new SpanReader(batch);
  let at = BATCH_HEADER_BYTES;
  for (let index = 0; index < header.recordCount; index++) {
    const length = reader.zigzag(at, end, VARINT_BYTES_MAX);
    const recordEnd = reader.next + length;
    if (!(length >= 1) || recordEnd > end) return { corrupt: `record ${index}: length invalid` };
    // Attributes (one byte), then the timestamp and offset deltas: skipped, the log checks them.
    reader.zigzag(reader.next + 1, recordEnd, VARLONG_BYTES_MAX);
    reader.zigzag(reader.next, recordEnd, VARINT_BYTES_MAX);
    const keyLength = reader.zigzag(reader.next, recordEnd, VARINT_BYTES_MAX);
    const keyAt = reader.next;
    if (!(keyLength >= -1) || keyAt + Math.max(keyLength, 0) > recordEnd) {
      return { corrupt: `record ${index}: key overruns record` };
    }
    const valueLength = reader.zigzag(keyAt + Math.max(keyLength, 0), recordEnd, VARINT_BYTES_MAX);
    const valueAt = reader.next;
    if (!(valueLength >= -1) || valueAt + Math.max(valueLength, 0) > recordEnd) {
      return { corrupt: `record ${index}: value overruns record` };
    }
    const headers = reader.zigzag(valueAt + Math.max(valueLength, 0), recordEnd, VARINT_BYTES_MAX);
    if (!(headers >= 0)) return { corrupt: `record ${index}: header count invalid` };
    let field = reader.next;
    for (let h = 0; h < headers * 2 && field <= recordEnd; h++) {
      // A header's key (never null), then its value (−1: null).
      const bytes = reader.zigzag(field, recordEnd, VARINT_BYTES_MAX);
      if (!(bytes >= (h % 2 === 0 ? 0 : -1))) {
        return { corrupt: `record ${index}: header ${h >> 1} invalid` };
      }
      field = reader.next + Math.max(bytes, 0);
    }
    if (field !== recordEnd) return { corrupt: `record ${index}: bytes after the last field` };
    if (!visit(index, keyAt, keyLength, valueAt, valueLength)) return 'stopped';
    at = recordEnd;
  }
  return at === end ? 'whole' : { corrupt: 'bytes after the last record' };
}

/** Zigzag varints read in place: the value returned, where it ended in `next` (no object). */
class SpanReader {
  next = 0;

  constructor(private readonly buf: Buffer) {}

  /** NaN when cut short by `end` or longer than bytesMax; then `next` is `end`. */
  zigzag(at: number, end: number, bytesMax: number): number {
    let raw = 0;
    let scale = 1;
    for (let i = at; i < end && i - at < bytesMax; i++) {
      const byte = this.buf[i];
      raw += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) {
        this.next = i + 1;
        return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
      }
      scale *= 128;
    }
    this.next = end;
    return NaN;
  }
}
