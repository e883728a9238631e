// Proves the record batch codec (Kafka's RecordBatch v2) round-trips any valid batch, writes the
// bytes a hand-written assembler of the spec writes, and that checkBatch catches every single
// flipped bit, every truncation and every structural lie behind a valid CRC (seeded with
// fast-check; replay a failure with FC_SEED). Byte-exactness against kafkajs lives in
// batch-codec-kafkajs.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BATCH_CRC_START,
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  CONTROL_BIT,
  KEY_BYTES_MAX,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  TRANSACTIONAL_BIT,
  checkBatch,
  decodeRawRecords,
  decodeRecords,
  encodeBatch,
  enforceBatchLimits,
  iterateBatches,
  readBatchHeader,
  stampBatch,
} from '../../shared/batch-codec.js';
import type {
  BatchHeader,
  BatchLimits,
  EncodeBatchOptions,
  LogRecord,
  RecordHeader,
} from '../../shared/batch-codec.js';
import { crc32c } from '../../shared/crc32c.js';
import { TailbaseError } from '../../shared/errors.js';

const seed = readSeed();
console.info(`batch-codec properties: seed ${seed} (replay with FC_SEED=${seed})`);

function readSeed(): number {
  const fromEnv = process.env.FC_SEED;
  if (fromEnv === undefined || fromEnv === '') return Math.floor(Math.random() * 0x7fff_ffff);
  const parsed = Number(fromEnv);
  if (!Number.isSafeInteger(parsed)) throw new Error(`FC_SEED must be an integer, got ${fromEnv}`);
  return parsed;
}

function check<Ts>(property: fc.IProperty<Ts>, numRuns: number): void {
  fc.assert(property, { seed, numRuns });
}

// Code points at each UTF-8 width boundary, NUL and the BOM: where encoders and decoders slip.
const edgeCodePoints = [
  '\u0000',
  '\u007f',
  '\u0080',
  '\u07ff',
  '\u0800',
  '\ufeff',
  '\uffff',
  '\u{10000}',
  '\u{10ffff}',
  'é',
  '€',
  '中',
  '😀',
];

const textUnit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom(...edgeCodePoints) },
);

/**
 * Valid UTF-8 text of 1..bytesMax bytes, multi-byte code points included: a head fast-check draws
 * unit by unit (and shrinks), then cheap seeded filler up to a drawn byte length, since drawing
 * a thousand units one by one for each of 50 keys would eat the time budget.
 */
function utf8Text(bytesMax: number): fc.Arbitrary<string> {
  return fc
    .record({
      head: fc.string({ unit: textUnit, minLength: 1, maxLength: 8 }),
      bytes: fc.integer({ min: 1, max: bytesMax }),
      fill: fc.integer(),
    })
    .map(({ head, bytes, fill }) => {
      const firstWidth = Buffer.byteLength(String.fromCodePoint(head.codePointAt(0) ?? 0));
      return fitUtf8(head + pseudoRandomText(bytes, fill), Math.max(bytes, firstWidth));
    });
}

function fitUtf8(text: string, bytesMax: number): string {
  let fitted = '';
  let bytes = 0;
  for (const codePoint of text) {
    const width = Buffer.byteLength(codePoint);
    if (bytes + width > bytesMax) break;
    fitted += codePoint;
    bytes += width;
  }
  return fitted;
}

function* xorshift32(seedWord: number): Generator<number, never> {
  let state = seedWord | 1;
  for (;;) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    yield state >>> 0;
  }
}

function pseudoRandomBytes(length: number, seedWord: number): Uint8Array {
  const bytes = new Uint8Array(length);
  const words = xorshift32(seedWord);
  for (let i = 0; i < length; i++) bytes[i] = words.next().value & 0xff;
  return bytes;
}

/** At least `bytesMin` bytes of text: edge code points, ASCII and any Unicode scalar value. */
function pseudoRandomText(bytesMin: number, seedWord: number): string {
  const words = xorshift32(seedWord);
  let text = '';
  for (let bytes = 0; bytes < bytesMin;) {
    const word = words.next().value;
    const pick = word % 4;
    let codePoint: string;
    if (pick === 0) codePoint = edgeCodePoints[(word >>> 2) % edgeCodePoints.length];
    else if (pick === 1) codePoint = String.fromCodePoint(0x20 + ((word >>> 2) % 0x5f));
    else {
      const scalar = (word >>> 2) % 0x11_0000;
      const isSurrogate = scalar >= 0xd800 && scalar <= 0xdfff;
      codePoint = String.fromCodePoint(isSurrogate ? 0xfffd : scalar);
    }
    text += codePoint;
    bytes += Buffer.byteLength(codePoint);
  }
  return text;
}

/* ------------------------------------------------------------------------------------------- */
/* The spec, written out by hand (BigInt arithmetic, no shared code): Kafka's RecordBatch v2.   */
/* ------------------------------------------------------------------------------------------- */

/** Kafka's zigzag varint / varlong: zigzag, then unsigned LEB128. */
function varint(value: number | bigint): number[] {
  const v = BigInt(value);
  let unsigned = v >= 0n ? v << 1n : (-v << 1n) - 1n;
  const out: number[] = [];
  while (unsigned >= 0x80n) {
    out.push(Number(unsigned & 0x7fn) | 0x80);
    unsigned >>= 7n;
  }
  out.push(Number(unsigned));
  return out;
}

/** A varint-length-prefixed byte string; null is length −1 and no bytes. */
function sized(bytes: Uint8Array | string | null): number[] {
  if (bytes === null) return varint(-1);
  const raw = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return [...varint(raw.length), ...raw];
}

interface RecordSpec {
  timestampDelta?: number | bigint;
  offsetDelta: number;
  key: Uint8Array | string | null;
  value: Uint8Array | string | null;
  headers?: readonly (readonly [Uint8Array | string, Uint8Array | string | null])[];
}

function recordBody(r: RecordSpec): number[] {
  const headers = r.headers ?? [];
  return [
    0, // attributes: unused
    ...varint(r.timestampDelta ?? 0),
    ...varint(r.offsetDelta),
    ...sized(r.key),
    ...sized(r.value),
    ...varint(headers.length),
    ...headers.flatMap(([key, value]) => [...sized(key), ...sized(value)]),
  ];
}

/** A record's bytes, its length varint first. */
function specRecord(r: RecordSpec): Buffer {
  const body = recordBody(r);
  return Buffer.from([...varint(body.length), ...body]);
}

/** A record whose body bytes are given as they are, length varint in front. */
function rawRecord(body: readonly number[], length = body.length): Buffer {
  return Buffer.from([...varint(length), ...body]);
}

interface HeaderSpec {
  baseOffset?: bigint;
  batchLength?: number;
  leaderEpoch?: number;
  magic?: number;
  attributes?: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  recordCount: number;
}

/** A whole batch per the spec: its length and CRC-32C (attributes..end) computed, unless given. */
function specBatch(h: HeaderSpec, records: readonly Uint8Array[]): Buffer {
  const body = Buffer.concat(records);
  const b = Buffer.alloc(61 + body.length);
  b.writeBigInt64BE(h.baseOffset ?? 0n, 0);
  b.writeInt32BE(h.batchLength ?? b.length - 12, 8);
  b.writeInt32BE(h.leaderEpoch ?? 0, 12);
  b.writeInt8(h.magic ?? 2, 16);
  b.writeInt16BE(h.attributes ?? 0, 21);
  b.writeInt32BE(h.lastOffsetDelta, 23);
  b.writeBigInt64BE(h.baseTimestamp, 27);
  b.writeBigInt64BE(h.maxTimestamp, 35);
  b.writeBigInt64BE(h.producerId ?? -1n, 43);
  b.writeInt16BE(h.producerEpoch ?? -1, 51);
  b.writeInt32BE(h.baseSequence ?? -1, 53);
  b.writeInt32BE(h.recordCount, 57);
  body.copy(b, 61);
  b.writeUInt32BE(crc32c(b.subarray(21)), 17);
  return b;
}

/** Writes a fresh CRC, so a test can forge a batch that is damaged only where it means to be. */
function reseal(bytes: Buffer): Buffer {
  bytes.writeUInt32BE(crc32c(bytes.subarray(BATCH_CRC_START)), 17);
  return bytes;
}

/* ------------------------------------------------------------------------------------------- */
/* Generated batches.                                                                           */
/* ------------------------------------------------------------------------------------------- */

interface BatchShape {
  recordsMax: number;
  keyBytesMax: number;
  valueBytesMax: number;
  headersMax: number;
}

interface GeneratedBatch {
  records: LogRecord[];
  options: EncodeBatchOptions;
  offsetDeltas: number[];
  lastOffsetDelta: number;
}

const fullShape: BatchShape = {
  recordsMax: 50,
  keyBytesMax: 1024,
  valueBytesMax: 4096,
  headersMax: 4,
};
const smallShape: BatchShape = { recordsMax: 4, keyBytesMax: 16, valueBytesMax: 64, headersMax: 2 };

function bytesArb(bytesMax: number, nullFreq: number): fc.Arbitrary<Uint8Array | null> {
  return fc.option(
    fc
      .record({ length: fc.integer({ min: 0, max: bytesMax }), fill: fc.integer() })
      .map(({ length, fill }) => pseudoRandomBytes(length, fill)),
    { nil: null, freq: nullFreq },
  );
}

/** Kafka's producer fields: none (−1, any epoch and sequence), or an idempotent producer's. */
const producerArb: fc.Arbitrary<EncodeBatchOptions> = fc.oneof(
  fc.constant({}),
  fc.record({
    producerId: fc.constant(NO_PRODUCER_ID),
    producerEpoch: fc.constantFrom(NO_PRODUCER_EPOCH, 0),
    baseSequence: fc.constantFrom(NO_SEQUENCE, 0),
  }),
  fc.record({
    producerId: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.maxSafeNat()),
    producerEpoch: fc.integer({ min: 0, max: 0x7fff }),
    baseSequence: fc.integer({ min: 0, max: 0x7fff_ffff }),
  }),
);

/** Timestamp deltas from the first record: small, or far apart either way (varlong). */
const timestampDeltaArb = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
);

/**
 * `stored`: any batch the log may hold, the cleaner's rewrites with offset gaps included;
 * `producer`: what a producer may append (offsets 0..n-1, timestamps not before the epoch).
 */
function batchArb(
  shape: BatchShape,
  kind: 'stored' | 'producer' = 'stored',
): fc.Arbitrary<GeneratedBatch> {
  const header = fc.record({
    key: fc.oneof(
      { weight: 4, arbitrary: utf8Text(16) },
      { weight: 1, arbitrary: fc.constant('') },
    ),
    value: bytesArb(32, 3),
  });
  const record = fc.record({
    key: utf8Text(shape.keyBytesMax),
    value: bytesArb(shape.valueBytesMax, 4),
    timestampDeltaMs: timestampDeltaArb,
    headers: fc.array(header, { maxLength: shape.headersMax }),
  });
  return fc
    .record({
      firstTimestampMs:
        kind === 'producer'
          ? fc.integer({ min: 2 ** 40, max: 2 ** 45 })
          : fc.integer({ min: -(2 ** 40), max: 2 ** 45 }),
      // fast-check's default size keeps arrays under ~20 items, far from recordsMax.
      records: fc.array(record, { minLength: 1, maxLength: shape.recordsMax, size: 'max' }),
      producer: producerArb,
      // Batches the cleaner rewrote keep their records' offset deltas, so gaps appear.
      offsetGaps:
        kind === 'producer'
          ? fc.constant(null)
          : fc.option(
              fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 50, maxLength: 50 }),
            ),
      trailingGap: fc.integer({ min: 0, max: 1000 }),
    })
    .map(({ firstTimestampMs, records, producer, offsetGaps, trailingGap }) => {
      const offsetDeltas: number[] = [];
      records.forEach((_, i) => {
        const previous = i === 0 ? -1 : offsetDeltas[i - 1];
        offsetDeltas.push(previous + (offsetGaps === null ? 1 : offsetGaps[i]));
      });
      const last = offsetDeltas[offsetDeltas.length - 1];
      const lastOffsetDelta = offsetGaps === null ? last : last + trailingGap;
      const options: EncodeBatchOptions = { ...producer };
      if (offsetGaps !== null) Object.assign(options, { offsetDeltas, lastOffsetDelta });
      return {
        records: records.map((r, i) => ({
          key: r.key,
          value: r.value,
          // The base timestamp is the first record's; later ones may lie either side of it.
          timestampMs: firstTimestampMs + (i === 0 ? 0 : r.timestampDeltaMs),
          ...(r.headers.length > 0 ? { headers: r.headers } : {}),
        })),
        options,
        offsetDeltas,
        lastOffsetDelta,
      };
    });
}

function encode(batch: GeneratedBatch): Buffer {
  return encodeBatch(batch.records, batch.options);
}

/** The batch as the spec assembler writes it, from the same fields. */
function specOf(batch: GeneratedBatch, baseOffset = 0n, leaderEpoch = 0): Buffer {
  const first = batch.records[0].timestampMs;
  const max = Math.max(...batch.records.map((r) => r.timestampMs));
  return specBatch(
    {
      baseOffset,
      leaderEpoch,
      lastOffsetDelta: batch.lastOffsetDelta,
      baseTimestamp: BigInt(first),
      maxTimestamp: BigInt(max),
      producerId: BigInt(batch.options.producerId ?? -1),
      producerEpoch: batch.options.producerEpoch ?? -1,
      baseSequence: batch.options.baseSequence ?? -1,
      recordCount: batch.records.length,
    },
    batch.records.map((r, i) =>
      specRecord({
        timestampDelta: r.timestampMs - first,
        offsetDelta: batch.offsetDeltas[i],
        key: r.key,
        value: r.value,
        headers: (r.headers ?? []).map((h) => [h.key, h.value] as const),
      }),
    ),
  );
}

const hex = (bytes: Uint8Array | null) =>
  bytes === null ? null : Buffer.from(bytes).toString('hex');

const hexHeaders = (headers: readonly RecordHeader[]) =>
  headers.map((h) => ({ key: h.key, value: hex(h.value) }));

function expectedRecords(batch: GeneratedBatch, baseOffset: number) {
  return batch.records.map((r, i) => ({
    offset: baseOffset + batch.offsetDeltas[i],
    key: r.key,
    value: hex(r.value),
    timestampMs: r.timestampMs,
    ...(r.headers && r.headers.length > 0 ? { headers: hexHeaders(r.headers) } : {}),
  }));
}

function decodedRecords(bytes: Uint8Array) {
  return decodeRecords(bytes).map((r) => ({
    ...r,
    value: hex(r.value),
    ...(r.headers ? { headers: hexHeaders(r.headers) } : {}),
  }));
}

function decodedRawRecords(bytes: Uint8Array) {
  return decodeRawRecords(bytes).map((r) => ({
    offset: r.offset,
    key: r.key === null ? null : r.key.toString('utf8'),
    value: hex(r.value),
    timestampMs: r.timestampMs,
    ...(r.headers.length > 0 ? { headers: hexHeaders(r.headers) } : {}),
  }));
}

/** A copy in a plain Uint8Array at an odd byte offset of a bigger buffer, as a read answer is. */
function misalignedCopy(bytes: Uint8Array): Uint8Array {
  const backing = new Uint8Array(bytes.length + 7);
  backing.set(bytes, 3);
  return backing.subarray(3, 3 + bytes.length);
}

function expectValid(bytes: Uint8Array, at = 0): BatchHeader {
  const result = checkBatch(bytes, at);
  if (!result.ok) throw new Error(`expected a valid batch, got ${result.reason}: ${result.detail}`);
  return result.header;
}

function expectHeaderOf(
  header: BatchHeader,
  bytes: Uint8Array,
  batch: GeneratedBatch,
  baseOffset: number,
  leaderEpoch: number,
) {
  const timestamps = batch.records.map((r) => r.timestampMs);
  expect(header).toEqual({
    baseOffset,
    sizeBytes: bytes.length,
    leaderEpoch,
    magic: BATCH_MAGIC,
    crc: crc32c(bytes.subarray(BATCH_CRC_START)),
    attributes: 0,
    lastOffsetDelta: batch.lastOffsetDelta,
    firstTimestampMs: timestamps[0],
    maxTimestampMs: Math.max(...timestamps),
    producerId: batch.options.producerId ?? NO_PRODUCER_ID,
    producerEpoch: batch.options.producerEpoch ?? NO_PRODUCER_EPOCH,
    baseSequence: batch.options.baseSequence ?? NO_SEQUENCE,
    recordCount: batch.records.length,
  });
}

function flipBit(bytes: Uint8Array, at: number, bit: number): void {
  bytes[at] ^= 1 << bit;
}

function expectRejected(
  run: () => unknown,
  status: number,
  code: string,
  details: Record<string, unknown> = {},
  name = '',
) {
  let caught: unknown = null;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught, name).toBeInstanceOf(TailbaseError);
  const error = caught as TailbaseError;
  expect({ status: error.status, code: error.code }, name).toEqual({ status, code });
  expect(error.details, name).toMatchObject(details);
}

const T = 1_700_000_000_000;
/** Headers (a null value among them), a tombstone, a negative timestamp delta, a producer. */
const fixedRecords: LogRecord[] = [
  {
    key: 'ada',
    value: Buffer.from('{"n":1}'),
    timestampMs: T,
    headers: [
      { key: 'trace', value: Buffer.from('x1') },
      { key: 'gone', value: null },
    ],
  },
  { key: 'bob', value: null, timestampMs: T + 5 },
  { key: '東京', value: Buffer.from('{}'), timestampMs: T - 3 },
];
const fixedOptions: EncodeBatchOptions = { producerId: 4242, producerEpoch: 3, baseSequence: 7 };
const fixedBatch = () => encodeBatch(fixedRecords, fixedOptions);

describe('batch codec round trip', () => {
  it('random batches survive encodeBatch -> checkBatch -> decodeRecords with every field, bytes as the spec lays them out', () => {
    check(
      fc.property(batchArb(fullShape), (batch) => {
        const bytes = encode(batch);
        expect(hex(bytes)).toBe(hex(specOf(batch)));
        for (const view of [bytes, misalignedCopy(bytes)]) {
          expectHeaderOf(expectValid(view), bytes, batch, 0, 0);
          expect(readBatchHeader(view)).toEqual(expectValid(view));
          expect(decodedRecords(view)).toEqual(expectedRecords(batch, 0));
          expect(decodedRawRecords(view)).toEqual(expectedRecords(batch, 0));
        }
      }),
      60,
    );
  });

  it('stampBatch sets baseOffset and leaderEpoch and leaves the CRC and the CRC region alone', () => {
    check(
      fc.property(
        batchArb(fullShape),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 100_000 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (batch, baseOffset, leaderEpoch) => {
          const bytes = encode(batch);
          const crcRegion = hex(bytes.subarray(16));
          stampBatch(bytes, baseOffset, leaderEpoch);
          expect(hex(bytes.subarray(16))).toBe(crcRegion);
          expect(hex(bytes)).toBe(hex(specOf(batch, BigInt(baseOffset), leaderEpoch)));
          expectHeaderOf(expectValid(bytes), bytes, batch, baseOffset, leaderEpoch);
          expect(decodedRecords(bytes)).toEqual(expectedRecords(batch, baseOffset));
          // The same fields given to encodeBatch write the same bytes.
          const direct = encodeBatch(batch.records, { ...batch.options, baseOffset, leaderEpoch });
          expect(hex(direct)).toBe(hex(bytes));
        },
      ),
      40,
    );
  });

  it('writes the producer fields as given and −1 for none', () => {
    const record: LogRecord = { key: 'k', value: null, timestampMs: 1 };
    expect(readBatchHeader(encodeBatch([record]))).toMatchObject({
      baseOffset: 0,
      leaderEpoch: 0,
      producerId: -1,
      producerEpoch: -1,
      baseSequence: -1,
      attributes: 0,
      magic: 2,
    });
    const max = {
      producerId: Number.MAX_SAFE_INTEGER,
      producerEpoch: 0x7fff,
      baseSequence: 2 ** 31 - 1,
    };
    expect(readBatchHeader(encodeBatch([record], max))).toMatchObject(max);
    // kafkajs's defaults without an idempotent producer.
    const kafkajs = { producerId: -1, producerEpoch: 0, baseSequence: 0 };
    expect(readBatchHeader(encodeBatch([record], kafkajs))).toMatchObject(kafkajs);
  });

  it('the base timestamp is the first record’s and deltas may be negative', () => {
    const bytes = fixedBatch();
    expect(readBatchHeader(bytes)).toMatchObject({ firstTimestampMs: T, maxTimestampMs: T + 5 });
    expect(decodeRecords(bytes).map((r) => r.timestampMs)).toEqual([T, T + 5, T - 3]);
  });

  it('keeps a leading byte order mark in keys and header keys (U+FEFF is data, not a BOM)', () => {
    const records: LogRecord[] = [
      { key: '\ufeffk', value: null, timestampMs: 1, headers: [{ key: '\ufeffh', value: null }] },
    ];
    const [decoded] = decodeRecords(encodeBatch(records));
    expect([decoded.key, decoded.headers?.[0].key]).toEqual(['\ufeffk', '\ufeffh']);
  });

  it('never silently changes a key: a lone surrogate (no UTF-8 form) is refused, 400 invalid_record', () => {
    for (const records of [
      [{ key: 'a\ud800', value: null, timestampMs: 1 }],
      [{ key: 'a', value: null, timestampMs: 1, headers: [{ key: '\udc00', value: null }] }],
    ]) {
      expectRejected(() => encodeBatch(records), 400, 'invalid_record');
    }
  });

  it('decodeRawRecords reads any key bytes or none; decodeRecords refuses a missing or non-UTF-8 key', () => {
    const batchWithKey = (key: Uint8Array | null) =>
      specBatch({ lastOffsetDelta: 0, baseTimestamp: 5n, maxTimestamp: 5n, recordCount: 1 }, [
        specRecord({ offsetDelta: 0, key, value: 'v', headers: [['h', null]] }),
      ]);
    const nullKey = batchWithKey(null);
    expectValid(nullKey);
    expect(decodeRawRecords(nullKey)).toMatchObject([
      { offset: 0, key: null, timestampMs: 5, headers: [{ key: 'h', value: null }] },
    ]);
    expect(() => decodeRecords(nullKey)).toThrow(/corrupt/);
    const binary = batchWithKey(Uint8Array.from([0xff, 0x00]));
    expect(hex(decodeRawRecords(binary)[0].key)).toBe('ff00');
    expect(() => decodeRecords(binary)).toThrow();
    expect(() => decodeRecords(batchWithKey(new Uint8Array(0)))).toThrow(/corrupt/);
  });

  it('timestamps up to 2^52 − 1 apart round-trip (varlong deltas past the int32 range)', () => {
    for (const timestamps of [
      [0, 2 ** 31],
      [2 ** 31, 0],
      [0, 2 ** 52 - 1],
      [2 ** 52, 0],
    ]) {
      const bytes = encodeBatch(
        timestamps.map((t, i) => ({ key: `k${i}`, value: null, timestampMs: t })),
      );
      expect(checkBatch(bytes).ok, `${timestamps}`).toBe(true);
      expect(decodeRecords(bytes).map((r) => r.timestampMs)).toEqual(timestamps);
    }
  });

  it('refuses, 400 invalid_record, timestamps 2^52 ms or more apart (their delta would not read back)', () => {
    for (const timestamps of [
      [0, 2 ** 52],
      [0, Number.MAX_SAFE_INTEGER],
      [Number.MAX_SAFE_INTEGER, 0],
    ]) {
      expectRejected(
        () =>
          encodeBatch(timestamps.map((t, i) => ({ key: `k${i}`, value: null, timestampMs: t }))),
        400,
        'invalid_record',
      );
    }
    const widest = encodeBatch([
      { key: 'a', value: null, timestampMs: 0 },
      { key: 'b', value: null, timestampMs: 2 ** 52 - 1 },
    ]);
    expect(checkBatch(widest).ok).toBe(true);
    expect(decodeRecords(widest).map((r) => r.timestampMs)).toEqual([0, 2 ** 52 - 1]);
  });
});

describe('batch codec damage detection', () => {
  it('detects every single flipped bit from byte 16 on (magic, crc, CRC region), exhaustively', () => {
    const bytes = fixedBatch();
    for (let at = 16; at < bytes.length; at++) {
      for (let bit = 0; bit < 8; bit++) {
        flipBit(bytes, at, bit);
        expect(checkBatch(bytes).ok, `bit ${bit} of byte ${at}`).toBe(false);
        flipBit(bytes, at, bit);
      }
    }
    expectValid(bytes);
  });

  it('detects random single flipped bits from byte 16 on in random batches', () => {
    check(
      fc.property(
        batchArb(fullShape),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })), {
          minLength: 1,
          maxLength: 40,
        }),
        (batch, flips) => {
          const bytes = encode(batch);
          for (const [n, bit] of flips) {
            const at = 16 + (n % (bytes.length - 16));
            flipBit(bytes, at, bit);
            expect(checkBatch(bytes).ok, `bit ${bit} of byte ${at}`).toBe(false);
            flipBit(bytes, at, bit);
          }
        },
      ),
      40,
    );
  });

  it('a flip in bytes 0..15 is detected or changes only baseOffset/leaderEpoch; batchLength flips are always detected', () => {
    check(
      fc.property(
        batchArb(smallShape),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 1000 }),
        (batch, baseOffset, leaderEpoch) => {
          const bytes = encode(batch);
          stampBatch(bytes, baseOffset, leaderEpoch);
          const original = expectValid(bytes);
          const originalRecords = decodedRecords(bytes).map((r) => ({ ...r, offset: 0 }));
          for (let at = 0; at < 16; at++) {
            for (let bit = 0; bit < 8; bit++) {
              flipBit(bytes, at, bit);
              const result = checkBatch(bytes);
              const where = `bit ${bit} of byte ${at}`;
              if (at >= 8 && at < 12) expect(result.ok, where).toBe(false);
              if (result.ok) {
                const header = result.header;
                const changed = at < 8 ? 'baseOffset' : 'leaderEpoch';
                expect(header[changed], where).not.toBe(original[changed]);
                expect({ ...header, [changed]: 0 }, where).toEqual({ ...original, [changed]: 0 });
                expect(Number.isSafeInteger(header.baseOffset) && header.baseOffset >= 0).toBe(
                  true,
                );
                const records = decodedRecords(bytes);
                expect(
                  records.map((r) => ({ ...r, offset: 0 })),
                  where,
                ).toEqual(originalRecords);
                expect(
                  records.map((r) => r.offset),
                  where,
                ).toEqual(batch.offsetDeltas.map((delta) => header.baseOffset + delta));
              }
              flipBit(bytes, at, bit);
            }
          }
        },
      ),
      30,
    );
  });

  it('detects a batchLength flip even when another valid batch follows', () => {
    const first = fixedBatch();
    const both = Buffer.concat([first, fixedBatch()]);
    for (let at = 8; at < 12; at++) {
      for (let bit = 0; bit < 8; bit++) {
        flipBit(both, at, bit);
        expect(checkBatch(both).ok, `bit ${bit} of byte ${at}`).toBe(false);
        flipBit(both, at, bit);
      }
    }
    expect(expectValid(both).sizeBytes).toBe(first.length);
  });

  it('reports every truncation of a batch as incomplete or corrupt, exhaustively', () => {
    const bytes = fixedBatch();
    for (let size = 0; size < bytes.length; size++) {
      const result = checkBatch(bytes.subarray(0, size));
      expect(result.ok, `cut at ${size}`).toBe(false);
      if (!result.ok) expect(['incomplete', 'corrupt']).toContain(result.reason);
    }
  });

  it('reports random truncations of random batches as incomplete or corrupt, never ok', () => {
    check(
      fc.property(
        batchArb(fullShape),
        fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
        (batch, cuts) => {
          const bytes = encode(batch);
          for (const n of cuts) {
            const size = n % bytes.length;
            const result = checkBatch(misalignedCopy(bytes.subarray(0, size)));
            expect(result.ok, `cut at ${size}`).toBe(false);
            if (!result.ok) expect(['incomplete', 'corrupt']).toContain(result.reason);
          }
        },
      ),
      40,
    );
  });

  /** The parts of a good record's body, each replaceable by a lie. */
  const goodParts = {
    attributes: [0],
    timestamp: varint(0),
    offset: varint(0),
    key: sized('a'),
    value: sized('{}'),
    headers: [...varint(1), ...sized('h'), ...sized('v')],
  };
  type Parts = typeof goodParts;
  const bodyOf = (lie: Partial<Parts> = {}) => {
    const p = { ...goodParts, ...lie };
    return [...p.attributes, ...p.timestamp, ...p.offset, ...p.key, ...p.value, ...p.headers];
  };
  const baseHeader: HeaderSpec = {
    lastOffsetDelta: 0,
    baseTimestamp: BigInt(T),
    maxTimestamp: BigInt(T),
    recordCount: 1,
  };
  /** One record whose body carries a lie, behind a correct length field, batch length and CRC. */
  const lyingRecord = (lie: Partial<Parts>) => specBatch(baseHeader, [rawRecord(bodyOf(lie))]);
  const good = (offsetDelta: number) =>
    specRecord({ offsetDelta, key: 'a', value: '{}', headers: [['h', 'v']] });
  /** Six bytes: an overlong encoding of `value` past the 5 bytes a 32-bit varint may take. */
  const sixByteVarint = (value: number) => {
    const [low] = varint(value); // values below 64 fit one byte
    return [low | 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
  };

  it('the forger writes what encodeBatch writes, so each lie below is the only damage', () => {
    const bytes = encodeBatch([
      {
        key: 'a',
        value: Buffer.from('{}'),
        timestampMs: T,
        headers: [{ key: 'h', value: Buffer.from('v') }],
      },
    ]);
    expect(hex(lyingRecord({}))).toBe(hex(bytes));
    expect(hex(specBatch(baseHeader, [good(0)]))).toBe(hex(bytes));
    expectValid(
      specBatch({ ...baseHeader, lastOffsetDelta: 2, recordCount: 3 }, [good(0), good(1), good(2)]),
    );
  });

  it('finds structural lies behind a valid CRC: checkBatch trusts no field', () => {
    const body = bodyOf();
    const lies: Record<string, [Buffer, RegExp]> = {
      // Record lengths.
      'record length past the batch': [
        specBatch(baseHeader, [rawRecord(body, body.length + 1)]),
        /record 0/,
      ],
      'record length one short': [
        specBatch(baseHeader, [rawRecord(body, body.length - 1)]),
        /record 0|after/,
      ],
      'record length zero': [specBatch(baseHeader, [rawRecord(body, 0)]), /record 0/],
      'negative record length': [specBatch(baseHeader, [rawRecord(body, -1)]), /record 0/],
      'record length 2^31 - 1': [specBatch(baseHeader, [rawRecord(body, 0x7fff_ffff)]), /record 0/],
      'record length varint of 6 bytes': [
        specBatch(baseHeader, [
          Buffer.from([0x80 | ((body.length * 2) & 0x7f), 0x80, 0x80, 0x80, 0x80, 0x00, ...body]),
        ]),
        /record 0/,
      ],
      'record length a 5-byte varint past int32': [
        specBatch(baseHeader, [Buffer.from([0xfe, 0xff, 0xff, 0xff, 0x1f, ...body])]),
        /record 0/,
      ],
      // Fields inside a record.
      'bytes after the last field': [specBatch(baseHeader, [rawRecord([...body, 0])]), /record 0/],
      'timestamp delta varlong of 11 bytes': [
        lyingRecord({
          timestamp: [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
        }),
        /record 0: timestamp/,
      ],
      'offset delta varint of 6 bytes': [
        lyingRecord({ offset: sixByteVarint(0) }),
        /record 0: offset/,
      ],
      'offset delta a 5-byte varint past int32': [
        lyingRecord({ offset: [0xfe, 0xff, 0xff, 0xff, 0x1f] }),
        /record 0: offset/,
      ],
      'negative offset delta': [lyingRecord({ offset: varint(-1) }), /record 0: offset/],
      'key length varint of 6 bytes': [
        lyingRecord({ key: [...sixByteVarint(1), 0x61] }),
        /record 0: key/,
      ],
      'key overruns its record': [lyingRecord({ key: [...varint(50), 0x61] }), /record 0: key/],
      'key length below -1': [lyingRecord({ key: varint(-2) }), /record 0: key/],
      'key length -2^31': [lyingRecord({ key: varint(-(2 ** 31)) }), /record 0: key/],
      'value overruns its record': [
        lyingRecord({ value: [...varint(100), 0x7b, 0x7d] }),
        /record 0: value/,
      ],
      'value length below -1': [lyingRecord({ value: varint(-2) }), /record 0: value/],
      'value length varint of 6 bytes': [
        lyingRecord({ value: [...sixByteVarint(0)] }),
        /record 0: value/,
      ],
      'negative header count': [lyingRecord({ headers: varint(-1) }), /record 0: header/],
      'header count varint cut by the record end': [
        lyingRecord({ headers: [0x80] }),
        /record 0: header/,
      ],
      'header count larger than present': [
        lyingRecord({ headers: [...varint(2), ...sized('h'), ...sized('v')] }),
        /record 0: header 1/,
      ],
      'header count 2^31 - 1': [lyingRecord({ headers: varint(0x7fff_ffff) }), /record 0: header/],
      'header key overruns its record': [
        lyingRecord({ headers: [...varint(1), ...varint(9), 0x68] }),
        /record 0: header 0 key/,
      ],
      'null header key': [
        lyingRecord({ headers: [...varint(1), ...varint(-1), ...sized('v')] }),
        /record 0: header 0 key/,
      ],
      'header key length varint of 6 bytes': [
        lyingRecord({ headers: [...varint(1), ...sixByteVarint(1), 0x68, ...sized('v')] }),
        /record 0: header 0 key/,
      ],
      'header value overruns its record': [
        lyingRecord({ headers: [...varint(1), ...sized('h'), ...varint(5), 0x76] }),
        /record 0: header 0 value/,
      ],
      'header value length below -1': [
        lyingRecord({ headers: [...varint(1), ...sized('h'), ...varint(-2)] }),
        /record 0: header 0 value/,
      ],
      // Offsets.
      'repeated offset delta': [
        specBatch({ ...baseHeader, lastOffsetDelta: 1, recordCount: 2 }, [good(0), good(0)]),
        /record 1 offset delta out of order/,
      ],
      'decreasing offset delta': [
        specBatch({ ...baseHeader, lastOffsetDelta: 2, recordCount: 3 }, [
          good(0),
          good(2),
          good(1),
        ]),
        /record 2 offset delta out of order/,
      ],
      'offset delta past lastOffsetDelta': [
        specBatch({ ...baseHeader, lastOffsetDelta: 2, recordCount: 3 }, [
          good(0),
          good(1),
          good(5),
        ]),
        /record 2 offset delta out of order/,
      ],
      'lastOffsetDelta below recordCount - 1': [
        specBatch({ ...baseHeader, lastOffsetDelta: 1, recordCount: 3 }, [
          good(0),
          good(1),
          good(2),
        ]),
        /last offset delta/,
      ],
      'negative lastOffsetDelta': [
        specBatch({ ...baseHeader, lastOffsetDelta: -1 }, [good(0)]),
        /last offset delta/,
      ],
      // Record counts and what follows the records.
      'zero records': [specBatch({ ...baseHeader, recordCount: 0 }, [good(0)]), /record count/],
      'negative record count': [
        specBatch({ ...baseHeader, recordCount: -1 }, [good(0)]),
        /record count/,
      ],
      'record count 2^31 - 1': [
        specBatch({ ...baseHeader, lastOffsetDelta: 0x7fff_ffff, recordCount: 0x7fff_ffff }, [
          good(0),
        ]),
        /record count/,
      ],
      'record count one more than present': [
        specBatch({ ...baseHeader, lastOffsetDelta: 2, recordCount: 3 }, [good(0), good(1)]),
        /record/,
      ],
      'record count one less than present': [
        specBatch({ ...baseHeader, lastOffsetDelta: 1, recordCount: 1 }, [good(0), good(1)]),
        /bytes after the last record/,
      ],
      'bytes after the last record': [
        specBatch(baseHeader, [good(0), Buffer.from([0])]),
        /bytes after the last record/,
      ],
      'a whole record of zeros after the last': [
        specBatch(baseHeader, [good(0), Buffer.alloc(8)]),
        /bytes after the last record/,
      ],
      'header only': [specBatch(baseHeader, []), /record count|record 0/],
      'maxTimestamp 2^31 before baseTimestamp': [
        specBatch({ ...baseHeader, maxTimestamp: BigInt(T) - 2n ** 31n }, [good(0)]),
        /max timestamp/,
      ],
    };
    for (const [name, [bytes, detail]] of Object.entries(lies)) {
      const result = checkBatch(bytes);
      expect(result, name).toMatchObject({ ok: false, reason: 'corrupt' });
      if (!result.ok) expect(result.detail, name).toMatch(detail);
      // The same batch at an offset of a bigger buffer, another valid batch after it.
      const stream = Buffer.concat([fixedBatch(), bytes, fixedBatch()]);
      expect(checkBatch(stream, fixedBatch().length), name).toMatchObject({ ok: false });
      expect(() => [...iterateBatches(stream)], name).toThrow(/corrupt|incomplete/);
    }
  });

  it('reads a stored batch with any valid producer fields, null keys and empty header keys', () => {
    const bytes = specBatch(
      { ...baseHeader, producerId: 2n ** 62n, producerEpoch: -7, baseSequence: -9 },
      [specRecord({ offsetDelta: 0, key: null, value: null, headers: [['', null]] })],
    );
    expect(expectValid(bytes)).toMatchObject({ producerEpoch: -7, baseSequence: -9 });
  });

  it('rejects an unknown magic as corrupt', () => {
    for (const magic of [0, 1, 3, -1]) {
      const bytes = fixedBatch();
      bytes.writeInt8(magic, 16);
      const result = checkBatch(reseal(bytes));
      expect(result, `magic ${magic}`).toMatchObject({ ok: false, reason: 'corrupt' });
      if (!result.ok) expect(result.detail).toMatch(/magic/);
    }
  });

  it('rejects batches of a codec this build does not read as corrupt, naming it, whatever their other bits', () => {
    for (let codec = 2; codec <= 7; codec++) {
      for (const other of [0, 0x08, TRANSACTIONAL_BIT, CONTROL_BIT]) {
        const bytes = fixedBatch();
        bytes.writeInt16BE(codec | other, 21);
        const result = checkBatch(reseal(bytes));
        expect(result, `codec ${codec}`).toMatchObject({ ok: false, reason: 'corrupt' });
        if (!result.ok) expect(result.detail).toMatch(new RegExp(`compression codec ${codec}`));
      }
    }
  });

  it('rejects a batch marked gzip whose records are not gzip as corrupt, naming gzip', () => {
    const bytes = fixedBatch();
    bytes.writeInt16BE(1, 21);
    const result = checkBatch(reseal(bytes));
    expect(result).toMatchObject({ ok: false, reason: 'corrupt' });
    if (!result.ok) expect(result.detail).toMatch(/gzip records/);
  });

  it('rejects a batch longer than the caller allows, or shorter than a header, as corrupt', () => {
    const bytes = fixedBatch();
    expect(checkBatch(bytes, 0, bytes.length).ok).toBe(true);
    expect(checkBatch(bytes, 0, bytes.length - 1)).toMatchObject({ ok: false, reason: 'corrupt' });
    for (const batchLength of [-12, -1, 0, BATCH_HEADER_BYTES - 13, 0x7fff_ffff]) {
      const lying = Buffer.from(bytes);
      lying.writeInt32BE(batchLength, 8);
      expect(checkBatch(lying), `batchLength ${batchLength}`).toMatchObject({ ok: false });
    }
  });

  it('rejects a negative or unsafe base offset as corrupt', () => {
    for (const baseOffset of [-1n, -(2n ** 63n), 2n ** 53n, 2n ** 63n - 1n]) {
      const bytes = fixedBatch();
      bytes.writeBigInt64BE(baseOffset, 0);
      expect(checkBatch(bytes), `${baseOffset}`).toMatchObject({ ok: false, reason: 'corrupt' });
    }
  });
});

describe('iterateBatches', () => {
  type JunkSpec =
    | { kind: 'random'; length: number; fill: number }
    | { kind: 'zeros'; length: number }
    | { kind: 'torn'; n: number }
    | { kind: 'damaged'; n: number; bit: number };

  const junkSpecArb: fc.Arbitrary<JunkSpec> = fc.oneof(
    fc.record({
      kind: fc.constant('random' as const),
      length: fc.integer({ min: 1, max: 300 }),
      fill: fc.integer(),
    }),
    // A preallocated or zeroed tail, as a file system may leave after a crash.
    fc.record({ kind: fc.constant('zeros' as const), length: fc.integer({ min: 1, max: 300 }) }),
    // A torn write of a whole batch.
    fc.record({ kind: fc.constant('torn' as const), n: fc.nat() }),
    // A whole batch damaged inside its CRC region.
    fc.record({
      kind: fc.constant('damaged' as const),
      n: fc.nat(),
      bit: fc.integer({ min: 0, max: 7 }),
    }),
  );

  function junkOf(spec: JunkSpec, valid: Buffer): Uint8Array {
    switch (spec.kind) {
      case 'random':
        return pseudoRandomBytes(spec.length, spec.fill);
      case 'zeros':
        return new Uint8Array(spec.length);
      case 'torn':
        return valid.subarray(0, 1 + (spec.n % (valid.length - 1)));
      case 'damaged': {
        const damaged = Buffer.from(valid);
        flipBit(damaged, 16 + (spec.n % (damaged.length - 16)), spec.bit);
        return damaged;
      }
    }
  }

  it('yields exactly the valid batches before appended junk, never the junk', () => {
    check(
      fc.property(
        fc.array(batchArb(smallShape), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        junkSpecArb,
        (batches, firstOffset, junkSpec) => {
          let nextOffset = firstOffset;
          const encoded = batches.map((batch) => {
            const bytes = encode(batch);
            stampBatch(bytes, nextOffset, 1);
            nextOffset += batch.lastOffsetDelta + 1;
            return bytes;
          });
          const junk = junkOf(junkSpec, encoded[encoded.length - 1]);
          const stream = misalignedCopy(Buffer.concat([...encoded, junk]));
          const yielded: Uint8Array[] = [];
          let thrown: unknown = null;
          try {
            for (const { header, bytes } of iterateBatches(stream)) {
              expect(header.sizeBytes).toBe(bytes.length);
              yielded.push(bytes);
            }
          } catch (error) {
            thrown = error;
          }
          expect(yielded.map(hex)).toEqual(encoded.map(hex));
          expect(yielded.map(decodedRecords)).toEqual(encoded.map(decodedRecords));
          // Junk never ends the walk quietly: the stream is not all whole batches.
          expect(String(thrown)).toMatch(/incomplete|corrupt/);
        },
      ),
      200,
    );
  });

  it('walks concatenated valid batches to the end without error, each with its header', () => {
    const stream = Buffer.concat([fixedBatch(), fixedBatch(), fixedBatch()]);
    const walked = [...iterateBatches(stream)];
    expect(walked.map(({ bytes }) => hex(bytes))).toEqual([1, 2, 3].map(() => hex(fixedBatch())));
    expect(walked.map(({ header }) => header)).toEqual(
      [1, 2, 3].map(() => expectValid(fixedBatch())),
    );
    expect([...iterateBatches(new Uint8Array(0))]).toEqual([]);
  });

  it('throws naming the byte where a bad batch starts', () => {
    const bad = fixedBatch();
    flipBit(bad, bad.length - 1, 0);
    const stream = Buffer.concat([fixedBatch(), bad]);
    expect(() => [...iterateBatches(stream)]).toThrow(
      `batch at byte ${fixedBatch().length} is corrupt`,
    );
  });
});

describe('enforceBatchLimits', () => {
  const roomy: BatchLimits = {
    batchBytesMax: 1 << 20,
    recordBytesMax: 1 << 20,
    recordsPerBatchMax: 10_000,
  };

  /** A producer's batch of one record per key, written by hand so the encoder's refusals don't apply. */
  function forgedKeys(
    keys: readonly (Uint8Array | string | null)[],
    headers: readonly (readonly [Uint8Array | string, Uint8Array | string | null])[] = [],
  ): Buffer {
    return specBatch(
      {
        lastOffsetDelta: keys.length - 1,
        baseTimestamp: BigInt(T),
        maxTimestamp: BigInt(T),
        recordCount: keys.length,
      },
      keys.map((key, i) => specRecord({ offsetDelta: i, key, value: '{}', headers })),
    );
  }

  it('accepts random valid producer batches and returns their header', () => {
    check(
      fc.property(batchArb(fullShape, 'producer'), (batch) => {
        const bytes = encode(batch);
        expect(enforceBatchLimits(bytes, roomy)).toEqual(expectValid(bytes));
      }),
      40,
    );
  });

  it('refuses, 400 invalid_batch, a stored-form batch unless its offsets are 0..n-1 and its timestamps not negative', () => {
    check(
      fc.property(batchArb(smallShape), (batch) => {
        const bytes = encode(batch);
        expectValid(bytes);
        const dense =
          batch.offsetDeltas.every((delta, i) => delta === i) &&
          batch.lastOffsetDelta === batch.records.length - 1;
        const sinceEpoch = batch.records.every((r) => r.timestampMs >= 0);
        if (dense && sinceEpoch)
          expect(enforceBatchLimits(bytes, roomy)).toEqual(expectValid(bytes));
        else expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch');
      }),
      200,
    );
  });

  it('400 invalid_batch naming the field for offsets a producer may not claim (the log stores them as acked)', () => {
    const record: LogRecord = { key: 'k', value: null, timestampMs: T };
    const three = [record, { ...record, key: 'l' }, { ...record, key: 'm' }];
    const cases: [string, Buffer, Record<string, unknown>][] = [
      [
        'one record claiming 2^31 offsets',
        encodeBatch([record], { lastOffsetDelta: 0x7fff_ffff }),
        { field: 'lastOffsetDelta', expected: 0, actual: 0x7fff_ffff },
      ],
      [
        'dense records, lastOffsetDelta past the last',
        encodeBatch(three, { offsetDeltas: [0, 1, 2], lastOffsetDelta: 5 }),
        { field: 'lastOffsetDelta', expected: 2, actual: 5 },
      ],
      [
        'a gap between records',
        encodeBatch(three, { offsetDeltas: [0, 2, 3], lastOffsetDelta: 3 }),
        { field: 'offsetDelta', record: 1, expected: 1, actual: 2 },
      ],
      [
        'records starting past delta 0',
        encodeBatch(three, { offsetDeltas: [1, 2, 3], lastOffsetDelta: 3 }),
        { field: 'offsetDelta', record: 0, expected: 0, actual: 1 },
      ],
    ];
    for (const [name, bytes, details] of cases) {
      // Each is a well-formed batch (the cleaner writes such gaps), just not one a producer sends.
      expect(checkBatch(bytes).ok, name).toBe(true);
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', details, name);
    }
    expect(enforceBatchLimits(encodeBatch(three), roomy).lastOffsetDelta).toBe(2);
  });

  it('400 invalid_batch naming the field for timestamps out of range or not matching the records', () => {
    /** One or more records at base + deltas, the header's max timestamp as given. */
    const timed = (base: bigint, deltas: readonly number[], max: bigint) =>
      specBatch(
        {
          lastOffsetDelta: deltas.length - 1,
          baseTimestamp: base,
          maxTimestamp: max,
          recordCount: deltas.length,
        },
        deltas.map((timestampDelta, i) =>
          specRecord({ offsetDelta: i, timestampDelta, key: `k${i}`, value: null }),
        ),
      );
    const t = BigInt(T);
    const safeMax = BigInt(Number.MAX_SAFE_INTEGER);
    const int64Max = 2n ** 63n - 1n;
    const cases: [string, Buffer, Record<string, unknown>][] = [
      [
        'a record before 0',
        encodeBatch([{ key: 'k', value: null, timestampMs: -1 }]),
        { field: 'timestampDelta', record: 0, min: 0, actual: -1 },
      ],
      [
        'a later record before 0 (negative delta)',
        encodeBatch([
          { key: 'k', value: null, timestampMs: 2 },
          { key: 'l', value: null, timestampMs: -3 },
        ]),
        { field: 'timestampDelta', record: 1, actual: -3 },
      ],
      ['baseTimestamp -2^63', timed(-(2n ** 63n), [0], -(2n ** 63n)), { field: 'baseTimestamp' }],
      ['a record at 2^53', timed(safeMax + 1n, [0], safeMax + 1n), { field: 'baseTimestamp' }],
      [
        'a record at 2^53 by its delta',
        timed(safeMax, [0, 1], safeMax + 1n),
        { field: 'timestampDelta', record: 1 },
      ],
      ['baseTimestamp 2^63 - 1', timed(int64Max, [0], int64Max), { field: 'baseTimestamp' }],
      [
        'maxTimestamp past the latest record',
        timed(t, [5, 0, 9], t + 10n),
        { field: 'maxTimestamp', expected: T + 9, actual: T + 10 },
      ],
      [
        'maxTimestamp before the latest record',
        timed(t, [5, -2, 9], t + 5n),
        { field: 'maxTimestamp', expected: T + 9, actual: T + 5 },
      ],
      ['maxTimestamp 2^63 - 1', timed(t, [0], int64Max), { field: 'maxTimestamp', expected: T }],
    ];
    for (const [name, bytes, details] of cases) {
      expect(checkBatch(bytes).ok, name).toBe(true);
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', details, name);
    }
    const atLimits = (timestampMs: number) => encodeBatch([{ key: 'k', value: null, timestampMs }]);
    expect(enforceBatchLimits(atLimits(0), roomy).firstTimestampMs).toBe(0);
    expect(enforceBatchLimits(atLimits(Number.MAX_SAFE_INTEGER), roomy).maxTimestampMs).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    // Out of order, as kafkajs and others send them: base is the first record's, max the latest's.
    const outOfOrder = encodeBatch([
      { key: 'a', value: null, timestampMs: T + 5 },
      { key: 'b', value: null, timestampMs: T },
      { key: 'c', value: null, timestampMs: T + 9 },
    ]);
    expect(enforceBatchLimits(outOfOrder, roomy)).toMatchObject({
      firstTimestampMs: T + 5,
      maxTimestampMs: T + 9,
    });
  });

  // The base timestamp is read as a double, so an odd int64 base past 2^53 rounds, and a record
  // brought back into range by a negative delta would decode one ms off what Kafka reads. Here the
  // base is 2^53 + 1 and the delta −3: Kafka reads 2^53 − 2, a double 2^53 − 3.
  it('400 invalid_batch for a baseTimestamp past 2^53 − 1 even when the records are in range', () => {
    const bytes = specBatch(
      {
        lastOffsetDelta: 0,
        baseTimestamp: 2n ** 53n + 1n,
        maxTimestamp: 2n ** 53n - 3n,
        recordCount: 1,
      },
      [specRecord({ offsetDelta: 0, timestampDelta: -3, key: 'k', value: null })],
    );
    expect(checkBatch(bytes).ok).toBe(true);
    expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch');
  });

  it('400 invalid_batch naming the field for producer fields that are not Kafka’s', () => {
    const withProducer = (producerId: bigint, producerEpoch: number, baseSequence: number) =>
      specBatch(
        {
          lastOffsetDelta: 0,
          baseTimestamp: 5n,
          maxTimestamp: 5n,
          recordCount: 1,
          producerId,
          producerEpoch,
          baseSequence,
        },
        [specRecord({ offsetDelta: 0, key: 'k', value: '{}' })],
      );
    const cases: [string, Buffer, Record<string, unknown>][] = [
      ['producerId -2', withProducer(-2n, 0, 0), { field: 'producerId' }],
      ['producerId -2^63', withProducer(-(2n ** 63n), 0, 0), { field: 'producerId' }],
      ['producerId 2^53', withProducer(2n ** 53n, 0, 0), { field: 'producerId' }],
      ['producerId 2^63 - 1', withProducer(2n ** 63n - 1n, 0, 0), { field: 'producerId' }],
      [
        'an idempotent producer without an epoch',
        withProducer(7n, -1, 0),
        { field: 'producerEpoch' },
      ],
      [
        'an idempotent producer without a sequence',
        withProducer(7n, 0, -1),
        { field: 'baseSequence' },
      ],
      [
        'an idempotent producer with a negative epoch',
        withProducer(0n, -5, 3),
        { field: 'producerEpoch' },
      ],
    ];
    for (const [name, bytes, details] of cases) {
      expect(checkBatch(bytes).ok, name).toBe(true);
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', details, name);
    }
    // Without a producer id any epoch and sequence pass (kafkajs sends 0 and 0, others −1).
    for (const [producerId, epoch, sequence] of [
      [-1n, 0, 0],
      [-1n, -1, -1],
      [-1n, 5, 9],
      [-1n, -3, 0x7fff_ffff],
      [0n, 0, 0],
      [BigInt(Number.MAX_SAFE_INTEGER), 0x7fff, 0x7fff_ffff],
    ] as const) {
      const header = enforceBatchLimits(withProducer(producerId, epoch, sequence), roomy);
      expect(header, `${producerId}/${epoch}/${sequence}`).toMatchObject({
        producerId: Number(producerId),
        producerEpoch: epoch,
        baseSequence: sequence,
      });
    }
  });

  it('400 unsupported_compression naming the codec for batches of a codec this build does not read, before their CRC', () => {
    for (let codec = 2; codec <= 7; codec++) {
      for (const resealed of [true, false]) {
        const bytes = fixedBatch();
        bytes.writeInt16BE(codec, 21);
        if (resealed) reseal(bytes);
        expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'unsupported_compression', {
          field: 'attributes',
          codec,
        });
      }
    }
  });

  it('400 invalid_batch for transactional and control batches', () => {
    for (const bits of [TRANSACTIONAL_BIT, CONTROL_BIT, TRANSACTIONAL_BIT | CONTROL_BIT]) {
      const bytes = fixedBatch();
      bytes.writeInt16BE(bits, 21);
      reseal(bytes);
      expect(checkBatch(bytes).ok).toBe(true); // well-formed, just not supported
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', {
        field: 'attributes',
        actual: bits,
      });
    }
  });

  it('413 batch_too_large above batchBytesMax, accepted at exactly the limit', () => {
    const bytes = fixedBatch();
    const limits = { ...roomy, batchBytesMax: bytes.length };
    expect(enforceBatchLimits(bytes, limits).recordCount).toBe(3);
    expectRejected(
      () => enforceBatchLimits(bytes, { ...limits, batchBytesMax: bytes.length - 1 }),
      413,
      'batch_too_large',
      { limit: 'batchBytesMax', max: bytes.length - 1, actual: bytes.length },
    );
  });

  it('413 too_many_records above recordsPerBatchMax, accepted at exactly the limit', () => {
    const bytes = fixedBatch();
    expect(enforceBatchLimits(bytes, { ...roomy, recordsPerBatchMax: 3 }).recordCount).toBe(3);
    expectRejected(
      () => enforceBatchLimits(bytes, { ...roomy, recordsPerBatchMax: 2 }),
      413,
      'too_many_records',
      { limit: 'recordsPerBatchMax', max: 2, actual: 3 },
    );
  });

  it('413 record_too_large when one record, with its length varint, exceeds recordBytesMax', () => {
    const big: LogRecord = { key: 'k', value: new Uint8Array(1000), timestampMs: 1 };
    const small: LogRecord = { ...big, value: new Uint8Array(10) };
    const bytes = encodeBatch([small, big, small]);
    const bigRecordBytes = specRecord({
      offsetDelta: 1,
      key: 'k',
      value: new Uint8Array(1000),
    }).length;
    const smallRecordBytes = specRecord({
      offsetDelta: 0,
      key: 'k',
      value: new Uint8Array(10),
    }).length;
    // length (2) + attributes (1) + timestampDelta (1) + offsetDelta (1) + key (2) + value (2 + 1000) + headers (1)
    expect([bigRecordBytes, smallRecordBytes]).toEqual([1010, 18]);
    expect(bytes.length).toBe(BATCH_HEADER_BYTES + bigRecordBytes + 2 * smallRecordBytes);
    enforceBatchLimits(bytes, { ...roomy, recordBytesMax: bigRecordBytes });
    expectRejected(
      () => enforceBatchLimits(bytes, { ...roomy, recordBytesMax: bigRecordBytes - 1 }),
      413,
      'record_too_large',
      { limit: 'recordBytesMax', max: bigRecordBytes - 1, actual: bigRecordBytes },
    );
  });

  it('400 invalid_batch for a bad CRC, a truncation, trailing bytes, an unknown magic or a lie', () => {
    const corrupt = fixedBatch();
    flipBit(corrupt, corrupt.length - 1, 0);
    const unknownMagic = fixedBatch();
    unknownMagic[16] = 1;
    const cases: [string, Uint8Array][] = [
      ['bad CRC', corrupt],
      ['cut in the records', fixedBatch().subarray(0, 80)],
      ['cut in the header', fixedBatch().subarray(0, 10)],
      ['a byte after the batch', Buffer.concat([fixedBatch(), Buffer.from([0])])],
      ['two batches', Buffer.concat([fixedBatch(), fixedBatch()])],
      ['magic 1', unknownMagic],
      ['magic 1, resealed', reseal(Buffer.from(unknownMagic))],
      ['nothing', new Uint8Array(0)],
      ['a record count past the bytes', reseal(forgedKeys(['a']).fill(0x7f, 57, 58))],
      [
        'a key overrunning its record',
        reseal(forgedKeys([Buffer.from([0x61])]).fill(0x7e, 65, 66)),
      ],
    ];
    for (const [name, bytes] of cases) {
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', {}, name);
    }
  });

  it('400 invalid_record for an empty key, a null key or a key past 1024 bytes', () => {
    const record: LogRecord = { key: 'k', value: null, timestampMs: 1 };
    const tooLong = ['k'.repeat(KEY_BYTES_MAX + 1), '€'.repeat(342)];
    for (const key of ['', ...tooLong]) {
      // The encoder refuses to make such a batch...
      expectRejected(() => encodeBatch([record, { ...record, key }]), 400, 'invalid_record');
    }
    for (const key of [Buffer.alloc(0), null, ...tooLong]) {
      // ...and the log refuses one forged by hand, naming the record.
      const forged = forgedKeys(['ok', key]);
      expect(checkBatch(forged).ok).toBe(true);
      expectRejected(() => enforceBatchLimits(forged, roomy), 400, 'invalid_record', { record: 1 });
    }
    for (const key of ['k'.repeat(KEY_BYTES_MAX), '€'.repeat(341) + 'k', '😀'.repeat(256)]) {
      expect(Buffer.byteLength(key)).toBe(KEY_BYTES_MAX);
      expect(enforceBatchLimits(encodeBatch([{ ...record, key }]), roomy).recordCount).toBe(1);
      expect(enforceBatchLimits(forgedKeys([key]), roomy).recordCount).toBe(1);
    }
  });

  it('400 invalid_record for a key or header key that is not UTF-8; header values are any bytes', () => {
    const invalid = [
      [0xc3, 0x28], // a lead byte followed by no continuation
      [0x80], // a lone continuation byte
      [0xc0, 0x80], // an overlong NUL
      [0xed, 0xa0, 0x80], // an encoded surrogate
      [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
      [0xe2, 0x82], // a sequence cut short
      [0xff],
    ].map((bytes) => Uint8Array.from(bytes));
    for (const bad of invalid) {
      const cases: [Buffer, number][] = [
        [forgedKeys(['ok', bad]), 1],
        [
          forgedKeys(
            ['ok'],
            [
              ['h', 'v'],
              [bad, 'v'],
            ],
          ),
          0,
        ],
        [forgedKeys(['ok'], [[bad, null]]), 0],
      ];
      for (const [bytes, record] of cases) {
        expect(checkBatch(bytes).ok).toBe(true);
        expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_record', { record });
      }
      expect(enforceBatchLimits(forgedKeys(['ok'], [['h', bad]]), roomy).recordCount).toBe(1);
    }
    expect(
      enforceBatchLimits(
        forgedKeys(
          ['€'],
          [
            ['', null],
            ['€', ''],
          ],
        ),
        roomy,
      ).recordCount,
    ).toBe(1);
  });
});
