/**
 * The record batch: Kafka's RecordBatch v2 (magic 2), byte for byte. The gateway (or any Kafka
 * client) produces it, the log-node stores it as it came and Fetch answers with the stored bytes,
 * the serve-node decodes the same bytes. The layout is written down in FORMAT.md beside this file;
 * keep both in step.
 */
import { isUtf8 } from 'node:buffer';
import { assert } from './assert.js';
import { crc32c } from './crc32c.js';
import { badRequest, type TailbaseError, tooLarge } from './errors.js';
import { readVarint, VarintCursor, varintBytes, writeVarint } from './varint.js';
import {
  BATCH_INFLATED_BYTES_FORMAT_MAX,
  BATCH_INFLATED_BYTES_MAX_DEFAULT,
  CODECS,
  codecName,
  deflateRecords,
  deflateRecordsSync,
  inflateRecords,
  isSupportedCodec,
} from './batch-compression.js';

export const BATCH_MAGIC = 2;
export const BATCH_HEADER_BYTES = 61;
/** The fields the log-node stamps on append stand before the CRC'd region. */
export const BATCH_CRC_START = 21;
export const NO_PRODUCER_ID = -1;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
/** A batch sequence is an int32: the last a producer id can number. */
export const SEQUENCE_MAX = 0x7fffffff;
/**
 * The largest batch the format holds (batchLength is an int32). What is on disk is bounded by
 * this and by its segment file, never by the append limits, which may have been higher.
 */
export const BATCH_BYTES_FORMAT_MAX = 2 ** 31 - 1;
export const KEY_BYTES_MAX = 1024;
/**
 * Record timestamps of one batch lie within −2^52..2^52 − 1 ms of its base timestamp: the deltas
 * whose zigzag form is a safe integer, so readVarlong reads them back exactly.
 */
export const TIMESTAMP_SPREAD_MAX = 2 ** 52;
/** attributes bits 0-2: the compression codec of the records section (batch-compression.ts). */
export const COMPRESSION_MASK = 0x07;
/** attributes bit 4 (transactional) and bit 5 (control): transactions are not supported. */
export const TRANSACTIONAL_BIT = 0x10;
export const CONTROL_BIT = 0x20;

const OFF_BASE_OFFSET = 0;
const OFF_BATCH_LENGTH = 8;
const OFF_LEADER_EPOCH = 12;
const OFF_MAGIC = 16;
const OFF_CRC = 17;
const OFF_ATTRIBUTES = 21;
const OFF_LAST_OFFSET_DELTA = 23;
const OFF_BASE_TIMESTAMP = 27;
const OFF_MAX_TIMESTAMP = 35;
const OFF_PRODUCER_ID = 43;
const OFF_PRODUCER_EPOCH = 51;
const OFF_BASE_SEQUENCE = 53;
const OFF_RECORD_COUNT = 57;
/** batchLength counts the bytes after its own field. */
const LENGTH_FIELD_END = 12;

export interface RecordHeader {
  key: string;
  value: Uint8Array | null;
}

export interface LogRecord {
  key: string;
  /** The document's bytes (JSON, UTF-8); null is a tombstone. */
  value: Uint8Array | null;
  timestampMs: number;
  headers?: readonly RecordHeader[];
}

export interface StoredRecord extends LogRecord {
  offset: number;
}

/** A record whose key may be any bytes or none, as internal topics and Kafka clients write. */
export interface RawRecord {
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  timestampMs: number;
  headers: RecordHeader[];
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
  /** Kafka's baseTimestamp: record timestamps are deltas from it. */
  firstTimestampMs: number;
  maxTimestampMs: number;
  /** −1: no idempotent producer. */
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

export interface BatchLimits {
  batchBytesMax: number;
  recordBytesMax: number;
  recordsPerBatchMax: number;
  /** Bytes a compressed batch's records may inflate to; BATCH_INFLATED_BYTES_MAX_DEFAULT if absent. */
  batchInflatedBytesMax?: number;
}

export interface EncodeBatchOptions {
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
  baseOffset?: number;
  leaderEpoch?: number;
  /** Offset deltas of the records; dense (0..n-1) unless the cleaner rewrites a batch. */
  offsetDeltas?: readonly number[];
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
  buf.writeBigInt64BE(BigInt(value), at);
}

/** An int64 field as a number; values past 2^53 come back unsafe and every check refuses them. */
function readInt64(buf: Buffer, at: number): number {
  return Number(buf.readBigInt64BE(at));
}

/** The bytes as a Buffer over the same memory (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

interface EncodedRecord {
  key: Uint8Array;
  value: Uint8Array | null;
  timestampMs: number;
  headers: { key: Uint8Array; value: Uint8Array | null }[];
}

function bytesOf(text: string, what: string): Uint8Array {
  // TextEncoder would turn a lone surrogate into U+FFFD: a different key, silently.
  if (LONE_SURROGATE.test(text)) {
    throw badRequest('invalid_record', `${what} must be well-formed Unicode`);
  }
  return utf8.encode(text);
}

/** Bytes of a record's body (after its length varint). */
function recordBodyBytes(r: EncodedRecord, timestampDelta: number, offsetDelta: number): number {
  let size = 1 + varintBytes(timestampDelta) + varintBytes(offsetDelta);
  size += varintBytes(r.key.length) + r.key.length;
  size += r.value === null ? varintBytes(-1) : varintBytes(r.value.length) + r.value.length;
  size += varintBytes(r.headers.length);
  for (const h of r.headers) {
    size += varintBytes(h.key.length) + h.key.length;
    size += h.value === null ? varintBytes(-1) : varintBytes(h.value.length) + h.value.length;
  }
  return size;
}

/**
 * Encodes records as one batch, base offset and leader epoch 0 until the log-node stamps them.
 * The base timestamp is the first record's, as Kafka's producers write it.
 */
export function encodeBatch(
  records: readonly LogRecord[],
  options: EncodeBatchOptions = {},
): Buffer {
  assert(records.length > 0, 'a batch holds at least one record');
  const encoded: EncodedRecord[] = records.map((r) => ({
    key: bytesOf(r.key, 'keys'),
    value: r.value,
    timestampMs: r.timestampMs,
    headers: (r.headers ?? []).map((h) => ({ key: bytesOf(h.key, 'header keys'), value: h.value })),
  }));
  for (const r of encoded) {
    if (r.key.length === 0 || r.key.length > KEY_BYTES_MAX) {
      throw badRequest('invalid_record', `a key must be 1..${KEY_BYTES_MAX} bytes`);
    }
  }
  const firstTimestampMs = encoded[0].timestampMs;
  let maxTimestampMs = -Infinity;
  for (const r of encoded) {
    maxTimestampMs = Math.max(maxTimestampMs, r.timestampMs);
    // A delta's zigzag form must stay a safe integer for readVarlong to read it back exactly.
    const delta = r.timestampMs - firstTimestampMs;
    if (delta >= TIMESTAMP_SPREAD_MAX || delta < -TIMESTAMP_SPREAD_MAX) {
      throw badRequest('invalid_record', 'the timestamps of one batch must lie within 2^52 ms');
    }
  }
  const offsetDeltas = options.offsetDeltas ?? encoded.map((_, i) => i);
  assert(offsetDeltas.length === encoded.length, 'one offset delta per record');
  const lastOffsetDelta = options.lastOffsetDelta ?? offsetDeltas[offsetDeltas.length - 1];

  let size = BATCH_HEADER_BYTES;
  const bodies = encoded.map((r, i) => {
    const body = recordBodyBytes(r, r.timestampMs - firstTimestampMs, offsetDeltas[i]);
    size += varintBytes(body) + body;
    return body;
  });
  const buf = Buffer.allocUnsafe(size);
  writeInt53(buf, options.baseOffset ?? 0, OFF_BASE_OFFSET);
  buf.writeInt32BE(size - LENGTH_FIELD_END, OFF_BATCH_LENGTH);
  buf.writeInt32BE(options.leaderEpoch ?? 0, OFF_LEADER_EPOCH);
  buf.writeInt8(BATCH_MAGIC, OFF_MAGIC);
  buf.writeInt16BE(0, OFF_ATTRIBUTES);
  buf.writeInt32BE(lastOffsetDelta, OFF_LAST_OFFSET_DELTA);
  writeInt53(buf, firstTimestampMs, OFF_BASE_TIMESTAMP);
  writeInt53(buf, maxTimestampMs, OFF_MAX_TIMESTAMP);
  writeInt53(buf, options.producerId ?? NO_PRODUCER_ID, OFF_PRODUCER_ID);
  buf.writeInt16BE(options.producerEpoch ?? NO_PRODUCER_EPOCH, OFF_PRODUCER_EPOCH);
  buf.writeInt32BE(options.baseSequence ?? NO_SEQUENCE, OFF_BASE_SEQUENCE);
  buf.writeInt32BE(encoded.length, OFF_RECORD_COUNT);

  let at = BATCH_HEADER_BYTES;
  encoded.forEach((r, i) => {
    at = writeVarint(buf, bodies[i], at);
    buf.writeInt8(0, at++);
    at = writeVarint(buf, r.timestampMs - firstTimestampMs, at);
    at = writeVarint(buf, offsetDeltas[i], at);
    at = writeVarint(buf, r.key.length, at);
    buf.set(r.key, at);
    at += r.key.length;
    at = writeBytes(buf, r.value, at);
    at = writeVarint(buf, r.headers.length, at);
    for (const h of r.headers) {
      at = writeVarint(buf, h.key.length, at);
      buf.set(h.key, at);
      at += h.key.length;
      at = writeBytes(buf, h.value, at);
    }
  });
  assert(at === size, 'encoded batch size matches its computed size');
  buf.writeUInt32BE(crc32c(buf.subarray(BATCH_CRC_START)), OFF_CRC);
  return buf;
}

function writeBytes(buf: Buffer, bytes: Uint8Array | null, at: number): number {
  if (bytes === null) return writeVarint(buf, -1, at);
  const end = writeVarint(buf, bytes.length, at);
  buf.set(bytes, end);
  return end + bytes.length;
}

/** The codec a batch's attributes name (0: none). */
export function batchCodec(batch: Uint8Array): number {
  return asBuffer(batch).readInt16BE(OFF_ATTRIBUTES) & COMPRESSION_MASK;
}

/**
 * An uncompressed batch (encodeBatch's) with its records section deflated by `codec`: the header
 * keeps every field but the length, the codec bits and the CRC, which covers the new bytes. A
 * batch that compressing does not shrink stays as it is (as librdkafka sends it), so a writer's
 * batch never outgrows the bound it was cut to.
 */
export function compressBatchSync(batch: Buffer, codec: number): Buffer {
  if (codec === CODECS.none) return batch;
  return withRecords(batch, codec, deflateRecordsSync(codec, batch.subarray(BATCH_HEADER_BYTES)));
}

/** compressBatchSync with the deflating on libuv's thread pool. */
export async function compressBatch(batch: Buffer, codec: number): Promise<Buffer> {
  if (codec === CODECS.none) return batch;
  return withRecords(batch, codec, await deflateRecords(codec, batch.subarray(BATCH_HEADER_BYTES)));
}

function withRecords(batch: Buffer, codec: number, records: Buffer): Buffer {
  assert(batchCodec(batch) === CODECS.none, 'only an uncompressed batch is compressed');
  if (BATCH_HEADER_BYTES + records.length >= batch.length) return batch;
  const out = Buffer.allocUnsafe(BATCH_HEADER_BYTES + records.length);
  batch.copy(out, 0, 0, BATCH_HEADER_BYTES);
  records.copy(out, BATCH_HEADER_BYTES);
  out.writeInt32BE(out.length - LENGTH_FIELD_END, OFF_BATCH_LENGTH);
  out.writeInt16BE(batch.readInt16BE(OFF_ATTRIBUTES) | codec, OFF_ATTRIBUTES);
  out.writeUInt32BE(crc32c(out.subarray(BATCH_CRC_START)), OFF_CRC);
  return out;
}

/**
 * The batch with its records section plain: itself when uncompressed, else its header followed
 * by the inflated records (the layouts of a compressed batch's records lie in this copy).
 */
function plainBatch(
  batch: Buffer,
  header: BatchHeader,
  inflatedBytesMax: number,
): { ok: true; buf: Buffer } | { ok: false; reason: string; detail: string } {
  const codec = header.attributes & COMPRESSION_MASK;
  if (codec === CODECS.none) return { ok: true, buf: batch };
  const inflated = inflateRecords(codec, batch.subarray(BATCH_HEADER_BYTES), inflatedBytesMax);
  if (!inflated.ok) return inflated;
  return {
    ok: true,
    buf: Buffer.concat([batch.subarray(0, BATCH_HEADER_BYTES), inflated.records]),
  };
}

/** Reads the header of the batch at `at`; null when fewer than a header's bytes remain. */
export function readBatchHeader(bytes: Uint8Array, at = 0): BatchHeader | null {
  if (bytes.length - at < BATCH_HEADER_BYTES) return null;
  const buf = asBuffer(bytes);
  return {
    baseOffset: readInt64(buf, at + OFF_BASE_OFFSET),
    sizeBytes: buf.readInt32BE(at + OFF_BATCH_LENGTH) + LENGTH_FIELD_END,
    leaderEpoch: buf.readInt32BE(at + OFF_LEADER_EPOCH),
    magic: buf.readInt8(at + OFF_MAGIC),
    crc: buf.readUInt32BE(at + OFF_CRC),
    attributes: buf.readInt16BE(at + OFF_ATTRIBUTES),
    lastOffsetDelta: buf.readInt32BE(at + OFF_LAST_OFFSET_DELTA),
    firstTimestampMs: readInt64(buf, at + OFF_BASE_TIMESTAMP),
    maxTimestampMs: readInt64(buf, at + OFF_MAX_TIMESTAMP),
    producerId: readInt64(buf, at + OFF_PRODUCER_ID),
    producerEpoch: buf.readInt16BE(at + OFF_PRODUCER_EPOCH),
    baseSequence: buf.readInt32BE(at + OFF_BASE_SEQUENCE),
    recordCount: buf.readInt32BE(at + OFF_RECORD_COUNT),
  };
}

/**
 * The size of the batch at `at` (its header present), without building a header: the read path
 * walks every batch it answers, thousands a read when batches are small.
 */
export function batchSizeAt(buf: Buffer, at: number): number {
  return buf.readInt32BE(at + OFF_BATCH_LENGTH) + LENGTH_FIELD_END;
}

/** The last offset the batch at `at` holds (a stored batch: its base offset is stamped, >= 0). */
export function batchLastOffsetAt(buf: Buffer, at: number): number {
  const baseOffset = buf.readUInt32BE(at + OFF_BASE_OFFSET) * 2 ** 32 + buf.readUInt32BE(at + 4);
  return baseOffset + buf.readInt32BE(at + OFF_LAST_OFFSET_DELTA);
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
 * magic is known, the CRC matches, its codec is one this build reads and its records inflate
 * within the format's bound, and the records parse exactly to its end.
 */
export function checkBatch(
  bytes: Uint8Array,
  at = 0,
  sizeBytesMax = BATCH_BYTES_FORMAT_MAX,
): BatchCheck {
  const check = checkLayouts(bytes, at, sizeBytesMax, BATCH_INFLATED_BYTES_FORMAT_MAX);
  return check.ok ? { ok: true, header: check.header } : check;
}

type LayoutsCheck =
  | { ok: true; header: BatchHeader; buf: Buffer; layouts: RecordLayout[] }
  | { ok: false; reason: 'incomplete' | 'corrupt'; detail: string; inflatedTooLarge?: true };

/**
 * checkBatch, keeping the record layouts its walk found (so a caller need not walk again) and
 * the bytes they lie in (the inflated copy of a compressed batch).
 */
function checkLayouts(
  bytes: Uint8Array,
  at: number,
  sizeBytesMax: number,
  inflatedBytesMax: number,
): LayoutsCheck {
  const frame = checkBatchFrame(bytes, at, sizeBytesMax);
  if (!frame.ok) return frame;
  const { header } = frame;
  const plain = plainBatch(
    asBuffer(bytes.subarray(at, at + header.sizeBytes)),
    header,
    inflatedBytesMax,
  );
  if (!plain.ok) {
    return {
      ok: false,
      reason: 'corrupt',
      detail: plain.detail,
      ...(plain.reason === 'inflated_too_large' ? { inflatedTooLarge: true as const } : {}),
    };
  }
  const layouts = walkRecords(plain.buf, header);
  if (typeof layouts === 'string') return { ok: false, reason: 'corrupt', detail: layouts };
  return { ok: true, header, buf: plain.buf, layouts };
}

/**
 * checkBatch, answering where each record's key and value lie in the batch instead of record
 * objects: for a caller that looks at a few bytes of every record (the Kafka listener's document
 * checks, which record objects had made mostly garbage collection).
 */
export function checkRecordSpans(
  bytes: Uint8Array,
  inflatedBytesMax = BATCH_INFLATED_BYTES_MAX_DEFAULT,
):
  | { ok: true; header: BatchHeader; plain: Buffer; records: readonly RecordSpan[] }
  | Extract<LayoutsCheck, { ok: false }> {
  const check = checkLayouts(bytes, 0, BATCH_BYTES_FORMAT_MAX, inflatedBytesMax);
  return check.ok
    ? { ok: true, header: check.header, plain: check.buf, records: check.layouts }
    : check;
}

/**
 * Where a record's key, value and headers lie in its plain batch (the inflated copy of a
 * compressed one); a length of −1 is null.
 */
export interface RecordSpan {
  keyAt: number;
  keyLength: number;
  valueAt: number;
  valueLength: number;
  headersAt: number;
  headerCount: number;
}

/**
 * checkBatch but for its walk of the records: the header's length, offset and magic, the bytes
 * present, the CRC (over the records as stored, compressed or not).
 */
function checkBatchFrame(
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
  return { ok: true, header };
}

/** Where each field of a record lies; byte positions within the batch. */
interface RecordLayout extends RecordSpan {
  /** Bytes of the whole record, its length varint included. */
  sizeBytes: number;
  timestampDelta: number;
  offsetDelta: number;
}

/**
 * Parses every record of an uncompressed batch, checking lengths against the bytes present and
 * offset deltas against the header; the layouts, or what is wrong.
 */
function walkRecords(buf: Buffer, header: BatchHeader): RecordLayout[] | string {
  if (header.recordCount < 1) return `record count ${header.recordCount} invalid`;
  if (header.lastOffsetDelta < header.recordCount - 1) return 'last offset delta too small';
  if (header.maxTimestampMs < header.firstTimestampMs - 0x7fff_ffff) return 'max timestamp invalid';
  // Every record takes at least 7 bytes: a count past the bytes present is corrupt, not a loop.
  if (header.recordCount > (buf.length - BATCH_HEADER_BYTES) / 7) return 'record count too large';
  const layouts: RecordLayout[] = [];
  const cursor = new VarintCursor(buf);
  let at = BATCH_HEADER_BYTES;
  let previousDelta = -1;
  for (let i = 0; i < header.recordCount; i++) {
    const layout = readRecordLayout(buf, at, cursor);
    if (typeof layout === 'string') return `record ${i}: ${layout}`;
    if (layout.offsetDelta <= previousDelta || layout.offsetDelta > header.lastOffsetDelta) {
      return `record ${i} offset delta out of order`;
    }
    previousDelta = layout.offsetDelta;
    layouts.push(layout);
    at += layout.sizeBytes;
  }
  if (at !== buf.length) return 'bytes after the last record';
  return layouts;
}

function readRecordLayout(buf: Buffer, start: number, cursor: VarintCursor): RecordLayout | string {
  const length = cursor.varint(start, buf.length);
  if (Number.isNaN(length)) return 'length cut short';
  const end = cursor.next + length;
  if (length < 1 || end > buf.length) return 'length invalid';
  const timestampDelta = cursor.varlong(cursor.next + 1, end);
  if (Number.isNaN(timestampDelta)) return 'timestamp delta invalid';
  const offsetDelta = cursor.varint(cursor.next, end);
  if (!(offsetDelta >= 0)) return 'offset delta invalid';
  const keyLength = cursor.varint(cursor.next, end);
  const keyAt = cursor.next;
  if (!(keyLength >= -1) || keyAt + Math.max(keyLength, 0) > end) return 'key overruns record';
  const valueLength = cursor.varint(keyAt + Math.max(keyLength, 0), end);
  const valueAt = cursor.next;
  if (!(valueLength >= -1) || valueAt + Math.max(valueLength, 0) > end) {
    return 'value overruns record';
  }
  const headerCount = cursor.varint(valueAt + Math.max(valueLength, 0), end);
  if (!(headerCount >= 0)) return 'header count invalid';
  const headersAt = cursor.next;
  let at = headersAt;
  for (let h = 0; h < headerCount; h++) {
    const hKey = cursor.varint(at, end);
    if (!(hKey >= 0) || cursor.next + hKey > end) return `header ${h} key overruns record`;
    const hValue = cursor.varint(cursor.next + hKey, end);
    if (!(hValue >= -1) || cursor.next + Math.max(hValue, 0) > end) {
      return `header ${h} value overruns record`;
    }
    at = cursor.next + Math.max(hValue, 0);
  }
  if (at !== end) return 'bytes after the last field';
  return {
    sizeBytes: end - start,
    timestampDelta,
    offsetDelta,
    keyAt,
    keyLength,
    valueAt,
    valueLength,
    headersAt,
    headerCount,
  };
}

function layoutsOf(batch: Uint8Array): {
  header: BatchHeader;
  buf: Buffer;
  layouts: RecordLayout[];
} {
  const header = readBatchHeader(batch);
  assert(header !== null, 'batch has a header');
  const plain = plainBatch(asBuffer(batch), header, BATCH_INFLATED_BYTES_FORMAT_MAX);
  if (!plain.ok) throw new Error(`batch is corrupt: ${plain.detail}`);
  const buf = plain.buf;
  const layouts = walkRecords(buf, header);
  if (typeof layouts === 'string') throw new Error(`batch is corrupt: ${layouts}`);
  return { header, buf, layouts };
}

function readHeaders(buf: Buffer, layout: RecordLayout): RecordHeader[] {
  const headers: RecordHeader[] = [];
  let at = layout.headersAt;
  for (let h = 0; h < layout.headerCount; h++) {
    const key = readVarint(buf, at) as { value: number; next: number };
    const keyEnd = key.next + key.value;
    const value = readVarint(buf, keyEnd) as { value: number; next: number };
    headers.push({
      key: utf8Strict.decode(buf.subarray(key.next, keyEnd)),
      value: value.value < 0 ? null : buf.subarray(value.next, value.next + value.value),
    });
    at = value.next + Math.max(value.value, 0);
  }
  return headers;
}

/**
 * Decodes a whole batch with any key bytes (internal topics); values are views into the batch
 * (into its inflated copy when compressed).
 */
export function decodeRawRecords(batch: Uint8Array): RawRecord[] {
  const { header, buf, layouts } = layoutsOf(batch);
  return rawRecordsOf(header, buf, layouts);
}

function rawRecordsOf(header: BatchHeader, buf: Buffer, layouts: RecordLayout[]): RawRecord[] {
  return layouts.map((l) => ({
    offset: header.baseOffset + l.offsetDelta,
    key: l.keyLength < 0 ? null : buf.subarray(l.keyAt, l.keyAt + l.keyLength),
    value: l.valueLength < 0 ? null : buf.subarray(l.valueAt, l.valueAt + l.valueLength),
    timestampMs: header.firstTimestampMs + l.timestampDelta,
    headers: readHeaders(buf, l),
  }));
}

/**
 * Decodes a whole batch the log already checked, whose keys are text (collection topics and the
 * settings topic). Keys are decoded strictly: a missing key or bytes that are not UTF-8 make the
 * batch corrupt rather than silently becoming another key.
 */
export function decodeRecords(batch: Uint8Array): StoredRecord[] {
  const { header, buf, layouts } = layoutsOf(batch);
  return layouts.map((l) => {
    if (l.keyLength < 1) throw new Error('batch is corrupt: a record without a key');
    return {
      offset: header.baseOffset + l.offsetDelta,
      key: utf8Strict.decode(buf.subarray(l.keyAt, l.keyAt + l.keyLength)),
      value: l.valueLength < 0 ? null : buf.subarray(l.valueAt, l.valueAt + l.valueLength),
      timestampMs: header.firstTimestampMs + l.timestampDelta,
      ...(l.headerCount > 0 ? { headers: readHeaders(buf, l) } : {}),
    };
  });
}

/**
 * Checks a stored batch as a reader of the log does: the frame and the CRC, and for an
 * uncompressed batch the record walk. A compressed batch's records are checked when decoded, so a
 * reader inflates each batch once; the CRC is paid once either way.
 */
export function checkStoredBatch(bytes: Uint8Array, at = 0): BatchCheck {
  const frame = checkBatchFrame(bytes, at);
  if (!frame.ok || (frame.header.attributes & COMPRESSION_MASK) !== CODECS.none) return frame;
  const { header } = frame;
  const layouts = walkRecords(asBuffer(bytes.subarray(at, at + header.sizeBytes)), header);
  return typeof layouts === 'string' ? { ok: false, reason: 'corrupt', detail: layouts } : frame;
}

/** Walks concatenated batches (a read answer); throws at the first incomplete or corrupt one. */
export function* iterateBatches(
  bytes: Uint8Array,
): Generator<{ header: BatchHeader; bytes: Uint8Array }> {
  let at = 0;
  while (at < bytes.length) {
    const check = checkStoredBatch(bytes, at);
    if (!check.ok) throw new Error(`batch at byte ${at} is ${check.reason}: ${check.detail}`);
    yield { header: check.header, bytes: bytes.subarray(at, at + check.header.sizeBytes) };
    at += check.header.sizeBytes;
  }
}

/**
 * The most bytes an append inflates a producer's compressed records to: batchInflatedBytesMax, or
 * less where the header says so. A record's bytes count its length varint, so the records section
 * is the sum of its records: past recordCount x recordBytesMax some record is too large.
 */
export function inflateCapOf(header: BatchHeader | null, limits: BatchLimits): number {
  const inflatedBytesMax = limits.batchInflatedBytesMax ?? BATCH_INFLATED_BYTES_MAX_DEFAULT;
  if (header === null || header.recordCount < 1) return inflatedBytesMax;
  return Math.min(inflatedBytesMax, header.recordCount * limits.recordBytesMax);
}

function tooManyRecords(header: BatchHeader, limits: BatchLimits) {
  return tooLarge(
    'too_many_records',
    `batch of ${header.recordCount} records exceeds recordsPerBatchMax`,
    { limit: 'recordsPerBatchMax', max: limits.recordsPerBatchMax, actual: header.recordCount },
  );
}

/**
 * The limits a producer's batch meets before any of its records is read, from its length and
 * header alone: batchBytesMax, a codec this build reads, no transactional batch, a compressed
 * batch's count within recordsPerBatchMax. Answers the header (null when the bytes hold none) and
 * the most bytes its records may inflate to (inflateCapOf); throws the refusal as a TailbaseError.
 */
export function enforceHeaderLimits(
  batch: Uint8Array,
  limits: BatchLimits,
): { header: BatchHeader | null; capBytes: number } {
  if (batch.length > limits.batchBytesMax) {
    throw tooLarge('batch_too_large', `batch of ${batch.length} bytes exceeds batchBytesMax`, {
      limit: 'batchBytesMax',
      max: limits.batchBytesMax,
      actual: batch.length,
    });
  }
  const early = readBatchHeader(batch);
  if (early !== null && early.magic === BATCH_MAGIC) {
    const codec = early.attributes & COMPRESSION_MASK;
    if (!isSupportedCodec(codec)) {
      throw badRequest(
        'unsupported_compression',
        `batch rejected: compression codec ${codec} (${codecName(codec)}) is not supported`,
        { field: 'attributes', codec },
      );
    }
    if ((early.attributes & (TRANSACTIONAL_BIT | CONTROL_BIT)) !== 0) {
      throw badRequest('invalid_batch', 'batch rejected: transactional batches are not supported', {
        field: 'attributes',
        actual: early.attributes,
      });
    }
    // Before the inflate: a count past the limit needs no records read to be refused (a plain
    // batch's count is checked against its bytes first, where a lie is invalid_batch).
    if (codec !== CODECS.none && early.recordCount > limits.recordsPerBatchMax) {
      throw tooManyRecords(early, limits);
    }
  }
  return { header: early, capBytes: inflateCapOf(early, limits) };
}

/** The refusal of a batch whose records inflated past `capBytes`, enforceHeaderLimits' bound. */
export function inflatedTooLarge(
  capBytes: number,
  limits: BatchLimits,
  detail: string,
): TailbaseError {
  const inflatedBytesMax = limits.batchInflatedBytesMax ?? BATCH_INFLATED_BYTES_MAX_DEFAULT;
  if (capBytes < inflatedBytesMax) {
    return tooLarge(
      'record_too_large',
      `batch rejected: its records inflate past recordCount x recordBytesMax (${capBytes} bytes)`,
      { limit: 'recordBytesMax', max: limits.recordBytesMax, inflatedBytesMax: capBytes },
    );
  }
  return tooLarge('batch_inflated_too_large', `batch rejected: ${detail}`, {
    limit: 'batchInflatedBytesMax',
    max: inflatedBytesMax,
  });
}

/**
 * Enforces the configured batch limits on a producer's batch (413 or 400 with the limit or field
 * named), and the rules only a producer's batch meets (checkProducerFields). Batches the log-node
 * writes itself, the cleaner's rewrites with their offset gaps, never come through here.
 */
export function enforceBatchLimits(batch: Uint8Array, limits: BatchLimits): BatchHeader {
  const { capBytes } = enforceHeaderLimits(batch, limits);
  const check = checkLayouts(batch, 0, BATCH_BYTES_FORMAT_MAX, capBytes);
  if (!check.ok && check.inflatedTooLarge) throw inflatedTooLarge(capBytes, limits, check.detail);
  if (!check.ok || check.header.sizeBytes !== batch.length) {
    const detail = check.ok ? 'bytes after the batch' : check.detail;
    throw badRequest('invalid_batch', `batch rejected: ${detail}`);
  }
  const { header, layouts, buf } = check;
  if (header.recordCount > limits.recordsPerBatchMax) throw tooManyRecords(header, limits);
  checkProducerFields(header, layouts);
  layouts.forEach((l, i) => {
    if (l.sizeBytes > limits.recordBytesMax) {
      throw tooLarge(
        'record_too_large',
        `record ${i} of ${l.sizeBytes} bytes exceeds recordBytesMax`,
        { limit: 'recordBytesMax', max: limits.recordBytesMax, actual: l.sizeBytes },
      );
    }
    if (l.keyLength < 1 || l.keyLength > KEY_BYTES_MAX) {
      throw badRequest(
        'invalid_record',
        `record ${i} key of ${Math.max(l.keyLength, 0)} bytes; a key is 1..${KEY_BYTES_MAX} bytes`,
        { record: i },
      );
    }
    if (!isUtf8(buf.subarray(l.keyAt, l.keyAt + l.keyLength))) {
      throw badRequest('invalid_record', `record ${i} key is not valid UTF-8`, { record: i });
    }
    let at = l.headersAt;
    for (let h = 0; h < l.headerCount; h++) {
      const key = readVarint(buf, at) as { value: number; next: number };
      if (!isUtf8(buf.subarray(key.next, key.next + key.value))) {
        throw badRequest('invalid_record', `record ${i} header ${h} key is not valid UTF-8`, {
          record: i,
        });
      }
      const value = readVarint(buf, key.next + key.value) as { value: number; next: number };
      at = value.next + Math.max(value.value, 0);
    }
  });
  return header;
}

/**
 * What checkBatch allows in a stored batch but a producer may not send: the log acknowledges
 * offsets baseOffset..baseOffset + lastOffsetDelta, so a gap would be offsets that hold no record
 * (invariant 2). Producer fields must be Kafka's (an id of −1 or from InitProducerId, with its
 * epoch and sequence). Record timestamps must be safe integers, not before the epoch, and the
 * header's max timestamp the latest record's: retention and producer expiry read it.
 */
function checkProducerFields(header: BatchHeader, layouts: readonly RecordLayout[]): void {
  const invalid = (message: string, details: Record<string, unknown>) =>
    badRequest('invalid_batch', `batch rejected: ${message}`, details);
  const { producerId, producerEpoch, baseSequence } = header;
  if (!Number.isSafeInteger(producerId) || producerId < NO_PRODUCER_ID) {
    throw invalid(`producerId ${producerId} is not −1 or an id this log handed out`, {
      field: 'producerId',
    });
  }
  // Without a producer id Kafka ignores epoch and sequence (kafkajs sends 0 and 0, others −1).
  if (producerId !== NO_PRODUCER_ID && (producerEpoch < 0 || baseSequence < 0)) {
    throw invalid('an idempotent batch needs a producerEpoch and a baseSequence', {
      field: producerEpoch < 0 ? 'producerEpoch' : 'baseSequence',
    });
  }
  if (!Number.isSafeInteger(header.firstTimestampMs)) {
    throw invalid(`baseTimestamp ${header.firstTimestampMs} is not a safe integer`, {
      field: 'baseTimestamp',
    });
  }
  let latest = -Infinity;
  layouts.forEach((l, i) => {
    if (l.offsetDelta !== i) {
      throw invalid(`record ${i} has offsetDelta ${l.offsetDelta}; a producer's are 0..n-1`, {
        field: 'offsetDelta',
        record: i,
        expected: i,
        actual: l.offsetDelta,
      });
    }
    const timestampMs = header.firstTimestampMs + l.timestampDelta;
    if (!Number.isSafeInteger(timestampMs) || timestampMs < 0) {
      throw invalid(`record ${i} timestamp ${timestampMs} is not from 0 to 2^53 - 1 ms`, {
        field: 'timestampDelta',
        record: i,
        min: 0,
        max: Number.MAX_SAFE_INTEGER,
        actual: timestampMs,
      });
    }
    latest = Math.max(latest, timestampMs);
  });
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
  if (header.maxTimestampMs !== latest) {
    throw invalid('maxTimestamp is not the latest record timestamp', {
      field: 'maxTimestamp',
      expected: latest,
      actual: header.maxTimestampMs,
    });
  }
}
