/**
 * The record batch: the unit the gateway produces, the log-node stores byte for byte, and the
 * serve-node applies. The layout is written down in FORMAT.md beside this file; keep both in step.
 */
import { isUtf8 } from 'node:buffer';
import { assert } from './assert.js';
import { crc32c } from './crc32c.js';
import { badRequest, tooLarge } from './errors.js';

export const BATCH_MAGIC = 2;
export const BATCH_HEADER_BYTES = 67;
/** The fields the log-node stamps on append stand before the CRC'd region. */
export const BATCH_CRC_START = 21;
export const RECORD_OVERHEAD_BYTES = 4 + 4 + 4 + 1 + 2 + 4;
export const PRODUCER_ID_BYTES = 16;
export const NO_SEQUENCE = -1;
/** A batch sequence is an int32: the last a producer id can number. */
export const SEQUENCE_MAX = 0x7fffffff;
/**
 * The largest batch the format holds (batchLength is an int32). What is on disk is bounded by
 * this and by its segment file, never by the append limits, which may have been higher.
 */
export const BATCH_BYTES_FORMAT_MAX = 2 ** 31 - 1;
export const COLLECTION_BYTES_MAX = 64;
export const KEY_BYTES_MAX = 1024;

const OFF_BASE_OFFSET = 0;
const OFF_BATCH_LENGTH = 8;
const OFF_LEADER_EPOCH = 12;
const OFF_MAGIC = 16;
const OFF_CRC = 17;
const OFF_ATTRIBUTES = 21;
const OFF_LAST_OFFSET_DELTA = 23;
const OFF_FIRST_TIMESTAMP = 27;
const OFF_MAX_TIMESTAMP = 35;
const OFF_PRODUCER_ID = 43;
const OFF_BASE_SEQUENCE = 59;
const OFF_RECORD_COUNT = 63;
/** batchLength counts the bytes after its own field. */
const LENGTH_FIELD_END = 12;

export interface LogRecord {
  collection: string;
  key: string;
  /** The document's bytes (JSON, UTF-8); null is a tombstone. */
  value: Uint8Array | null;
  timestampMs: number;
}

export interface StoredRecord extends LogRecord {
  offset: number;
}

export interface BatchHeader {
  baseOffset: number;
  /** Bytes of the whole batch, header included. */
  sizeBytes: number;
  leaderEpoch: number;
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  firstTimestampMs: number;
  maxTimestampMs: number;
  producerId: Uint8Array;
  baseSequence: number;
  recordCount: number;
}

export interface BatchLimits {
  batchBytesMax: number;
  recordBytesMax: number;
  recordsPerBatchMax: number;
}

export interface EncodeBatchOptions {
  producerId?: Uint8Array;
  baseSequence?: number;
  baseOffset?: number;
  leaderEpoch?: number;
  /** Offset deltas of the records; dense (0..n-1) unless the cleaner rewrites a batch. */
  offsetDeltas?: number[];
  /** Kept through compaction so the batch still ends where it ended. */
  lastOffsetDelta?: number;
}

const utf8 = new TextEncoder();
/** In `u` mode only unpaired surrogates match: they have no UTF-8 form. */
const LONE_SURROGATE = /\p{Surrogate}/u;
// ignoreBOM: a leading U+FEFF in a key is data and must survive the round trip.
const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function writeInt53(buf: Buffer, value: number, at: number): void {
  assert(Number.isSafeInteger(value), `int64 field out of safe range: ${value}`);
  const high = Math.floor(value / 0x1_0000_0000);
  buf.writeInt32BE(high, at);
  buf.writeUInt32BE(value - high * 0x1_0000_0000, at + 4);
}

function readInt53(buf: Uint8Array, at: number): number {
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return view.readInt32BE(at) * 0x1_0000_0000 + view.readUInt32BE(at + 4);
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** Encodes records as one batch, base offset and leader epoch 0 until the log-node stamps them. */
export function encodeBatch(
  records: readonly LogRecord[],
  options: EncodeBatchOptions = {},
): Buffer {
  assert(records.length > 0, 'a batch holds at least one record');
  for (const r of records) {
    // TextEncoder would turn a lone surrogate into U+FFFD: a different key, silently.
    if (LONE_SURROGATE.test(r.collection) || LONE_SURROGATE.test(r.key)) {
      throw badRequest('invalid_record', 'collections and keys must be well-formed Unicode');
    }
  }
  const encoded = records.map((r) => ({
    collection: utf8.encode(r.collection),
    key: utf8.encode(r.key),
    value: r.value,
    timestampMs: r.timestampMs,
  }));
  for (const r of encoded) {
    if (r.collection.length === 0 || r.collection.length > COLLECTION_BYTES_MAX) {
      throw badRequest('invalid_record', `a collection must be 1..${COLLECTION_BYTES_MAX} bytes`);
    }
    if (r.key.length === 0 || r.key.length > KEY_BYTES_MAX) {
      throw badRequest('invalid_record', `a key must be 1..${KEY_BYTES_MAX} bytes`);
    }
  }
  let size = BATCH_HEADER_BYTES;
  for (const r of encoded) {
    size += RECORD_OVERHEAD_BYTES + r.collection.length + r.key.length + (r.value?.length ?? 0);
  }
  const buf = Buffer.allocUnsafe(size);
  let firstTimestampMs = Infinity;
  let maxTimestampMs = -Infinity;
  for (const r of encoded) {
    firstTimestampMs = Math.min(firstTimestampMs, r.timestampMs);
    maxTimestampMs = Math.max(maxTimestampMs, r.timestampMs);
  }
  if (maxTimestampMs - firstTimestampMs > 0x7fff_ffff) {
    throw badRequest('invalid_record', 'the timestamps of one batch must lie within 2^31 ms');
  }
  const offsetDeltas = options.offsetDeltas ?? encoded.map((_, i) => i);
  assert(offsetDeltas.length === encoded.length, 'one offset delta per record');
  const lastOffsetDelta = options.lastOffsetDelta ?? offsetDeltas[offsetDeltas.length - 1];

  writeInt53(buf, options.baseOffset ?? 0, OFF_BASE_OFFSET);
  buf.writeInt32BE(size - LENGTH_FIELD_END, OFF_BATCH_LENGTH);
  buf.writeInt32BE(options.leaderEpoch ?? 0, OFF_LEADER_EPOCH);
  buf.writeInt8(BATCH_MAGIC, OFF_MAGIC);
  buf.writeInt16BE(0, OFF_ATTRIBUTES);
  buf.writeInt32BE(lastOffsetDelta, OFF_LAST_OFFSET_DELTA);
  writeInt53(buf, firstTimestampMs, OFF_FIRST_TIMESTAMP);
  writeInt53(buf, maxTimestampMs, OFF_MAX_TIMESTAMP);
  const producerId = options.producerId ?? new Uint8Array(PRODUCER_ID_BYTES);
  assert(producerId.length === PRODUCER_ID_BYTES, 'producer id is 16 bytes');
  buf.set(producerId, OFF_PRODUCER_ID);
  buf.writeInt32BE(options.baseSequence ?? NO_SEQUENCE, OFF_BASE_SEQUENCE);
  buf.writeInt32BE(encoded.length, OFF_RECORD_COUNT);

  let at = BATCH_HEADER_BYTES;
  encoded.forEach((r, i) => {
    const valueLength = r.value === null ? 0 : r.value.length;
    const recordLength =
      RECORD_OVERHEAD_BYTES - 4 + r.collection.length + r.key.length + valueLength;
    buf.writeInt32BE(recordLength, at);
    buf.writeInt32BE(offsetDeltas[i], at + 4);
    buf.writeInt32BE(r.timestampMs - firstTimestampMs, at + 8);
    buf.writeUInt8(r.collection.length, at + 12);
    buf.set(r.collection, at + 13);
    at += 13 + r.collection.length;
    buf.writeUInt16BE(r.key.length, at);
    buf.set(r.key, at + 2);
    at += 2 + r.key.length;
    buf.writeInt32BE(r.value === null ? -1 : r.value.length, at);
    at += 4;
    if (r.value !== null) {
      buf.set(r.value, at);
      at += r.value.length;
    }
  });
  assert(at === size, 'encoded batch size matches its computed size');
  buf.writeUInt32BE(crc32c(buf.subarray(BATCH_CRC_START)), OFF_CRC);
  return buf;
}

/** Reads the header of the batch at `at`; null when fewer than a header's bytes remain. */
export function readBatchHeader(bytes: Uint8Array, at = 0): BatchHeader | null {
  if (bytes.length - at < BATCH_HEADER_BYTES) return null;
  const buf = asBuffer(bytes);
  return {
    baseOffset: readInt53(buf, at + OFF_BASE_OFFSET),
    sizeBytes: buf.readInt32BE(at + OFF_BATCH_LENGTH) + LENGTH_FIELD_END,
    leaderEpoch: buf.readInt32BE(at + OFF_LEADER_EPOCH),
    magic: buf.readInt8(at + OFF_MAGIC),
    crc: buf.readUInt32BE(at + OFF_CRC),
    attributes: buf.readInt16BE(at + OFF_ATTRIBUTES),
    lastOffsetDelta: buf.readInt32BE(at + OFF_LAST_OFFSET_DELTA),
    firstTimestampMs: readInt53(buf, at + OFF_FIRST_TIMESTAMP),
    maxTimestampMs: readInt53(buf, at + OFF_MAX_TIMESTAMP),
    producerId: buf.subarray(at + OFF_PRODUCER_ID, at + OFF_PRODUCER_ID + PRODUCER_ID_BYTES),
    baseSequence: buf.readInt32BE(at + OFF_BASE_SEQUENCE),
    recordCount: buf.readInt32BE(at + OFF_RECORD_COUNT),
  };
}

/** The log-node's stamp: base offset and leader epoch lie outside the CRC, so no re-checksum. */
export function stampBatch(batch: Buffer, baseOffset: number, leaderEpoch: number): void {
  writeInt53(batch, baseOffset, OFF_BASE_OFFSET);
  batch.writeInt32BE(leaderEpoch, OFF_LEADER_EPOCH);
}

export type BatchCheck =
  | { ok: true; header: BatchHeader }
  | { ok: false; reason: 'incomplete' | 'corrupt'; detail: string };

/**
 * Checks the batch at `at` without trusting any of its fields: its length fits the bytes, the
 * magic is known, the CRC matches, and the records parse exactly to the batch's end.
 */
export function checkBatch(
  bytes: Uint8Array,
  at = 0,
  sizeBytesMax = BATCH_BYTES_FORMAT_MAX,
): BatchCheck {
  const header = readBatchHeader(bytes, at);
  if (header === null) return { ok: false, reason: 'incomplete', detail: 'header cut short' };
  if (header.sizeBytes < BATCH_HEADER_BYTES || header.sizeBytes > sizeBytesMax) {
    return { ok: false, reason: 'corrupt', detail: `batch length ${header.sizeBytes} invalid` };
  }
  if (header.baseOffset < 0 || !Number.isSafeInteger(header.baseOffset)) {
    return { ok: false, reason: 'corrupt', detail: `base offset ${header.baseOffset} invalid` };
  }
  if (header.magic !== BATCH_MAGIC) {
    return { ok: false, reason: 'corrupt', detail: `unknown magic ${header.magic}` };
  }
  if (bytes.length - at < header.sizeBytes) {
    return { ok: false, reason: 'incomplete', detail: 'batch cut short' };
  }
  const body = bytes.subarray(at + BATCH_CRC_START, at + header.sizeBytes);
  if (crc32c(body) !== header.crc) {
    return { ok: false, reason: 'corrupt', detail: 'CRC-32C mismatch' };
  }
  const structure = checkRecords(bytes.subarray(at, at + header.sizeBytes), header);
  if (structure !== null) return { ok: false, reason: 'corrupt', detail: structure };
  return { ok: true, header };
}

function checkRecords(batch: Uint8Array, header: BatchHeader): string | null {
  const buf = asBuffer(batch);
  if (header.recordCount < 1) return `record count ${header.recordCount} invalid`;
  if (header.lastOffsetDelta < header.recordCount - 1) return 'last offset delta too small';
  if (header.maxTimestampMs < header.firstTimestampMs) return 'max timestamp before first';
  let at = BATCH_HEADER_BYTES;
  let previousDelta = -1;
  for (let i = 0; i < header.recordCount; i++) {
    if (buf.length - at < RECORD_OVERHEAD_BYTES) return `record ${i} cut short`;
    const length = buf.readInt32BE(at);
    const end = at + 4 + length;
    if (length < RECORD_OVERHEAD_BYTES - 4 || end > buf.length) return `record ${i} length invalid`;
    const offsetDelta = buf.readInt32BE(at + 4);
    if (offsetDelta <= previousDelta || offsetDelta > header.lastOffsetDelta) {
      return `record ${i} offset delta out of order`;
    }
    previousDelta = offsetDelta;
    if (buf.readInt32BE(at + 8) < 0) return `record ${i} timestamp delta negative`;
    const collectionLength = buf.readUInt8(at + 12);
    let field = at + 13 + collectionLength;
    if (field + 2 > end) return `record ${i} collection overruns record`;
    const keyLength = buf.readUInt16BE(field);
    field += 2 + keyLength;
    if (field + 4 > end) return `record ${i} key overruns record`;
    const valueLength = buf.readInt32BE(field);
    field += 4 + Math.max(valueLength, 0);
    if (valueLength < -1 || field !== end) return `record ${i} value length invalid`;
    at = end;
  }
  if (at !== buf.length) return 'bytes after the last record';
  return null;
}

/**
 * Decodes a whole batch the log already checked. Strings are decoded strictly: bytes that are
 * not UTF-8 make the batch corrupt rather than silently becoming U+FFFD.
 */
export function decodeRecords(batch: Uint8Array): StoredRecord[] {
  const header = readBatchHeader(batch);
  assert(header !== null, 'batch has a header');
  const buf = asBuffer(batch);
  const records: StoredRecord[] = [];
  let at = BATCH_HEADER_BYTES;
  for (let i = 0; i < header.recordCount; i++) {
    const length = buf.readInt32BE(at);
    const offsetDelta = buf.readInt32BE(at + 4);
    const timestampDelta = buf.readInt32BE(at + 8);
    const collectionLength = buf.readUInt8(at + 12);
    let field = at + 13;
    const collection = utf8Strict.decode(buf.subarray(field, field + collectionLength));
    field += collectionLength;
    const keyLength = buf.readUInt16BE(field);
    field += 2;
    const key = utf8Strict.decode(buf.subarray(field, field + keyLength));
    field += keyLength;
    const valueLength = buf.readInt32BE(field);
    field += 4;
    const value = valueLength < 0 ? null : buf.subarray(field, field + valueLength);
    records.push({
      offset: header.baseOffset + offsetDelta,
      collection,
      key,
      value,
      timestampMs: header.firstTimestampMs + timestampDelta,
    });
    at += 4 + length;
  }
  return records;
}

/** Walks concatenated batches (a read answer); throws at the first incomplete or corrupt one. */
export function* iterateBatches(
  bytes: Uint8Array,
): Generator<{ header: BatchHeader; bytes: Uint8Array }> {
  let at = 0;
  while (at < bytes.length) {
    const check = checkBatch(bytes, at);
    if (!check.ok) throw new Error(`batch at byte ${at} is ${check.reason}: ${check.detail}`);
    yield { header: check.header, bytes: bytes.subarray(at, at + check.header.sizeBytes) };
    at += check.header.sizeBytes;
  }
}

/**
 * Enforces the configured batch limits on a producer's batch (413 or 400 with the limit named),
 * and the rules only a producer's batch meets (checkProducerFields). Batches the log-node writes
 * itself, the cleaner's rewrites with their offset gaps, never come through here.
 */
export function enforceBatchLimits(batch: Uint8Array, limits: BatchLimits): BatchHeader {
  if (batch.length > limits.batchBytesMax) {
    throw tooLarge('batch_too_large', `batch of ${batch.length} bytes exceeds batchBytesMax`, {
      limit: 'batchBytesMax',
      max: limits.batchBytesMax,
      actual: batch.length,
    });
  }
  const check = checkBatch(batch, 0);
  if (!check.ok || check.header.sizeBytes !== batch.length) {
    const detail = check.ok ? 'bytes after the batch' : check.detail;
    throw badRequest('invalid_batch', `batch rejected: ${detail}`);
  }
  const { header } = check;
  const buf = asBuffer(batch);
  checkProducerFields(buf, header);
  if (header.recordCount > limits.recordsPerBatchMax) {
    throw tooLarge(
      'too_many_records',
      `batch of ${header.recordCount} records exceeds recordsPerBatchMax`,
      {
        limit: 'recordsPerBatchMax',
        max: limits.recordsPerBatchMax,
        actual: header.recordCount,
      },
    );
  }
  let at = BATCH_HEADER_BYTES;
  for (let i = 0; i < header.recordCount; i++) {
    const recordBytes = buf.readInt32BE(at) + 4;
    if (recordBytes > limits.recordBytesMax) {
      throw tooLarge(
        'record_too_large',
        `record ${i} of ${recordBytes} bytes exceeds recordBytesMax`,
        {
          limit: 'recordBytesMax',
          max: limits.recordBytesMax,
          actual: recordBytes,
        },
      );
    }
    const collectionLength = buf.readUInt8(at + 12);
    const keyLength = buf.readUInt16BE(at + 13 + collectionLength);
    if (collectionLength === 0 || collectionLength > COLLECTION_BYTES_MAX) {
      throw badRequest(
        'invalid_record',
        `record ${i} collection length ${collectionLength} invalid`,
      );
    }
    if (keyLength === 0 || keyLength > KEY_BYTES_MAX) {
      throw badRequest('invalid_record', `record ${i} key length ${keyLength} invalid`);
    }
    const collectionAt = at + 13;
    const keyAt = collectionAt + collectionLength + 2;
    if (
      !isUtf8(buf.subarray(collectionAt, collectionAt + collectionLength)) ||
      !isUtf8(buf.subarray(keyAt, keyAt + keyLength))
    ) {
      throw badRequest('invalid_record', `record ${i} collection or key is not valid UTF-8`);
    }
    at += recordBytes;
  }
  return header;
}

/**
 * What checkBatch allows in a stored batch but a producer may not send: the log acknowledges
 * offsets baseOffset..baseOffset + lastOffsetDelta, so a gap would be offsets that hold no record
 * (invariant 2), and a lastOffsetDelta near 2^31 would push offsets past what a segment's index
 * can hold. Timestamps must be safe integers, not before the epoch, and the header's first and
 * max timestamps those of the earliest and latest record, as encodeBatch writes them: compaction
 * re-encodes records from them, and retention and producer expiry read the header's.
 */
function checkProducerFields(buf: Buffer, header: BatchHeader): void {
  const invalid = (message: string, details: Record<string, unknown>) =>
    badRequest('invalid_batch', `batch rejected: ${message}`, details);
  const { firstTimestampMs, maxTimestampMs } = header;
  for (const [field, value] of [
    ['firstTimestamp', firstTimestampMs],
    ['maxTimestamp', maxTimestampMs],
  ] as const) {
    if (value < 0 || !Number.isSafeInteger(value)) {
      throw invalid(`${field} ${value} is not a timestamp from 0 to 2^53 - 1 ms`, {
        field,
        min: 0,
        max: Number.MAX_SAFE_INTEGER,
        actual: value,
      });
    }
  }
  let at = BATCH_HEADER_BYTES;
  let deltaMin = Infinity;
  let deltaMax = -Infinity;
  for (let i = 0; i < header.recordCount; i++) {
    const offsetDelta = buf.readInt32BE(at + 4);
    if (offsetDelta !== i) {
      throw invalid(`record ${i} has offsetDelta ${offsetDelta}; a producer's are 0..n-1`, {
        field: 'offsetDelta',
        record: i,
        expected: i,
        actual: offsetDelta,
      });
    }
    const timestampDelta = buf.readInt32BE(at + 8);
    if (firstTimestampMs + timestampDelta > maxTimestampMs) {
      throw invalid(`record ${i} has a timestampDelta past maxTimestamp`, {
        field: 'timestampDelta',
        record: i,
        max: maxTimestampMs - firstTimestampMs,
        actual: timestampDelta,
      });
    }
    deltaMin = Math.min(deltaMin, timestampDelta);
    deltaMax = Math.max(deltaMax, timestampDelta);
    at += 4 + buf.readInt32BE(at);
  }
  if (header.lastOffsetDelta !== header.recordCount - 1) {
    throw invalid(
      `lastOffsetDelta ${header.lastOffsetDelta} does not end at the last of ${header.recordCount} records`,
      {
        field: 'lastOffsetDelta',
        expected: header.recordCount - 1,
        actual: header.lastOffsetDelta,
      },
    );
  }
  if (deltaMin !== 0) {
    throw invalid('firstTimestamp is not the earliest record timestamp', {
      field: 'firstTimestamp',
      expected: firstTimestampMs + deltaMin,
      actual: firstTimestampMs,
    });
  }
  if (firstTimestampMs + deltaMax !== maxTimestampMs) {
    throw invalid('maxTimestamp is not the latest record timestamp', {
      field: 'maxTimestamp',
      expected: firstTimestampMs + deltaMax,
      actual: maxTimestampMs,
    });
  }
}
