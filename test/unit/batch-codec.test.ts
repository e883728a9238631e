// Proves the record batch codec round-trips any valid batch and that checkBatch catches every
// single flipped bit and every truncation (seeded with fast-check; replay a failure with FC_SEED).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BATCH_CRC_START,
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  NO_SEQUENCE,
  checkBatch,
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

interface BatchShape {
  recordsMax: number;
  keyBytesMax: number;
  valueBytesMax: number;
}

interface GeneratedBatch {
  records: LogRecord[];
  options: EncodeBatchOptions;
  offsetDeltas: number[];
  lastOffsetDelta: number;
}

const fullShape: BatchShape = { recordsMax: 50, keyBytesMax: 1024, valueBytesMax: 4096 };
const smallShape: BatchShape = { recordsMax: 4, keyBytesMax: 16, valueBytesMax: 64 };

/**
 * `stored`: any batch the log may hold, the cleaner's rewrites with offset gaps included;
 * `producer`: what a producer may append (offsets 0..n-1, timestamps not before the epoch).
 */
function batchArb(
  shape: BatchShape,
  kind: 'stored' | 'producer' = 'stored',
): fc.Arbitrary<GeneratedBatch> {
  const value = fc.option(
    fc
      .record({ length: fc.integer({ min: 0, max: shape.valueBytesMax }), fill: fc.integer() })
      .map(({ length, fill }) => pseudoRandomBytes(length, fill)),
    { nil: null, freq: 4 },
  );
  const record = fc.record({
    collection: utf8Text(64),
    key: utf8Text(shape.keyBytesMax),
    value,
    // The format holds a record's timestamp as an int32 delta from the batch's first timestamp.
    timestampDeltaMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  });
  return fc
    .record({
      firstTimestampMs: fc.integer({ min: kind === 'producer' ? 0 : -(2 ** 40), max: 2 ** 45 }),
      // fast-check's default size keeps arrays under ~20 items, far from recordsMax.
      records: fc.array(record, { minLength: 1, maxLength: shape.recordsMax, size: 'max' }),
      producerId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
      baseSequence: fc.integer({ min: NO_SEQUENCE, max: 2 ** 31 - 1 }),
      // Batches the cleaner rewrote keep their records' offset deltas, so gaps appear.
      offsetGaps:
        kind === 'producer'
          ? fc.constant(null)
          : fc.option(
              fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 50, maxLength: 50 }),
            ),
      trailingGap: fc.integer({ min: 0, max: 1000 }),
    })
    .map(({ firstTimestampMs, records, producerId, baseSequence, offsetGaps, trailingGap }) => {
      const offsetDeltas: number[] = [];
      records.forEach((_, i) => {
        const previous = i === 0 ? -1 : offsetDeltas[i - 1];
        offsetDeltas.push(previous + (offsetGaps === null ? 1 : offsetGaps[i]));
      });
      const last = offsetDeltas[offsetDeltas.length - 1];
      const lastOffsetDelta = offsetGaps === null ? last : last + trailingGap;
      const options: EncodeBatchOptions = { producerId, baseSequence };
      if (offsetGaps !== null) Object.assign(options, { offsetDeltas, lastOffsetDelta });
      return {
        records: records.map((r) => ({
          collection: r.collection,
          key: r.key,
          value: r.value,
          timestampMs: firstTimestampMs + r.timestampDeltaMs,
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

const hex = (bytes: Uint8Array | null) =>
  bytes === null ? null : Buffer.from(bytes).toString('hex');

function expectedRecords(batch: GeneratedBatch, baseOffset: number) {
  return batch.records.map((r, i) => ({
    ...r,
    value: hex(r.value),
    offset: baseOffset + batch.offsetDeltas[i],
  }));
}

function decodedRecords(bytes: Uint8Array) {
  return decodeRecords(bytes).map((r) => ({ ...r, value: hex(r.value) }));
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
  expect({ ...header, producerId: hex(header.producerId) }).toEqual({
    baseOffset,
    sizeBytes: bytes.length,
    leaderEpoch,
    magic: BATCH_MAGIC,
    crc: crc32c(bytes.subarray(BATCH_CRC_START)),
    attributes: 0,
    lastOffsetDelta: batch.lastOffsetDelta,
    firstTimestampMs: Math.min(...timestamps),
    maxTimestampMs: Math.max(...timestamps),
    producerId: hex(batch.options.producerId ?? null),
    baseSequence: batch.options.baseSequence,
    recordCount: batch.records.length,
  });
}

/** Writes a fresh CRC, so a test can forge a batch that is damaged only where it means to be. */
function reseal(bytes: Buffer): Buffer {
  bytes.writeUInt32BE(crc32c(bytes.subarray(BATCH_CRC_START)), 17);
  return bytes;
}

function flipBit(bytes: Uint8Array, at: number, bit: number): void {
  bytes[at] ^= 1 << bit;
}

const fixedRecords: LogRecord[] = [
  {
    collection: 'users',
    key: 'ada',
    value: Buffer.from('{"n":1}'),
    timestampMs: 1_700_000_000_000,
  },
  { collection: 'users', key: 'bob', value: null, timestampMs: 1_700_000_000_005 },
  { collection: 'städte', key: '東京', value: Buffer.from('{}'), timestampMs: 1_700_000_000_001 },
];
const fixedBatch = () => encodeBatch(fixedRecords, { baseSequence: 7 });

describe('batch codec round trip', () => {
  it('random batches survive encodeBatch -> checkBatch -> decodeRecords with every field', () => {
    check(
      fc.property(batchArb(fullShape), (batch) => {
        const bytes = encode(batch);
        for (const view of [bytes, misalignedCopy(bytes)]) {
          expectHeaderOf(expectValid(view), bytes, batch, 0, 0);
          expect(readBatchHeader(view)).toEqual(expectValid(view));
          expect(decodedRecords(view)).toEqual(expectedRecords(batch, 0));
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
          expectHeaderOf(expectValid(bytes), bytes, batch, baseOffset, leaderEpoch);
          expect(decodedRecords(bytes)).toEqual(expectedRecords(batch, baseOffset));
        },
      ),
      40,
    );
  });

  it('keeps a leading byte order mark in collections and keys (U+FEFF is data, not a BOM)', () => {
    const records: LogRecord[] = [
      { collection: '\ufeffc', key: '\ufeffk', value: null, timestampMs: 1 },
    ];
    const decoded = decodeRecords(encodeBatch(records));
    expect(decoded.map((r) => [r.collection, r.key])).toEqual([['\ufeffc', '\ufeffk']]);
  });

  it('never silently changes a key: a lone surrogate (not encodable as UTF-8) is refused', () => {
    const records: LogRecord[] = [{ collection: 'c', key: 'a\ud800', value: null, timestampMs: 1 }];
    expect(() => encodeBatch(records)).toThrow();
  });

  it('refuses a timestamp spread the int32 delta cannot hold rather than wrapping it', () => {
    const records: LogRecord[] = [
      { collection: 'c', key: 'a', value: null, timestampMs: 0 },
      { collection: 'c', key: 'b', value: null, timestampMs: 2 ** 31 },
    ];
    expect(() => encodeBatch(records)).toThrow();
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
          const originalHeader = { ...original, producerId: hex(original.producerId) };
          const originalRecords = decodedRecords(bytes).map((r) => ({ ...r, offset: 0 }));
          for (let at = 0; at < 16; at++) {
            for (let bit = 0; bit < 8; bit++) {
              flipBit(bytes, at, bit);
              const result = checkBatch(bytes);
              const where = `bit ${bit} of byte ${at}`;
              if (at >= 8 && at < 12) expect(result.ok, where).toBe(false);
              if (result.ok) {
                const header = { ...result.header, producerId: hex(result.header.producerId) };
                const changed = at < 8 ? 'baseOffset' : 'leaderEpoch';
                expect(header[changed], where).not.toBe(originalHeader[changed]);
                expect({ ...header, [changed]: 0 }, where).toEqual({
                  ...originalHeader,
                  [changed]: 0,
                });
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

  /** Byte positions of each record's length field in a valid batch. */
  function recordStarts(bytes: Buffer): number[] {
    const starts: number[] = [];
    for (let at = BATCH_HEADER_BYTES; at < bytes.length; at += 4 + bytes.readInt32BE(at)) {
      starts.push(at);
    }
    return starts;
  }

  /** The fixed batch with a lie written into it, its length and CRC made to match the lie. */
  function forged(lie: (bytes: Buffer, records: number[]) => Buffer | void): Buffer {
    const original = fixedBatch();
    const bytes = lie(original, recordStarts(original)) ?? original;
    bytes.writeInt32BE(bytes.length - 12, 8);
    return reseal(bytes);
  }

  it('finds structural lies behind a valid CRC: checkBatch trusts no field', () => {
    expectValid(forged(() => {}));
    const lies: Record<string, (bytes: Buffer, records: number[]) => Buffer | void> = {
      'bytes after the last record': (b) => Buffer.concat([b, Buffer.from([0])]),
      'zero records': (b) => void b.writeInt32BE(0, 63),
      'fewer records than present': (b) => void b.writeInt32BE(2, 63),
      'more records than present': (b) => void b.writeInt32BE(4, 63),
      'negative record count': (b) => void b.writeInt32BE(-1, 63),
      'lastOffsetDelta below recordCount - 1': (b) => void b.writeInt32BE(1, 23),
      'maxTimestamp before firstTimestamp': (b) => void b.writeUInt32BE(0, 39),
      'repeated offset delta': (b, r) => void b.writeInt32BE(0, r[1] + 4),
      'decreasing offset delta': (b, r) => void b.writeInt32BE(0, r[2] + 4),
      'negative first offset delta': (b, r) => void b.writeInt32BE(-1, r[0] + 4),
      'offset delta past lastOffsetDelta': (b, r) => void b.writeInt32BE(3, r[2] + 4),
      'negative timestamp delta': (b, r) => void b.writeInt32BE(-1, r[0] + 8),
      'record length too long': (b, r) => void b.writeInt32BE(b.readInt32BE(r[0]) + 1, r[0]),
      'record length too short': (b, r) => void b.writeInt32BE(b.readInt32BE(r[0]) - 1, r[0]),
      'negative record length': (b, r) => void b.writeInt32BE(-4, r[0]),
      'record length past the batch': (b, r) => void b.writeInt32BE(0x7fff_ffff, r[2]),
      'collection overruns its record': (b, r) => void b.writeUInt8(255, r[0] + 12),
      'key overruns its record': (b, r) => void b.writeUInt16BE(0xffff, r[0] + 13 + 5),
      'value length below -1': (b, r) => void b.writeInt32BE(-2, r[1] + 13 + 5 + 2 + 3),
      'tombstone that carries bytes': (b, r) => {
        const valueAt = r[1] + 13 + 5 + 2 + 3 + 4;
        const grown = Buffer.concat([
          b.subarray(0, valueAt),
          Buffer.from('x'),
          b.subarray(valueAt),
        ]);
        grown.writeInt32BE(grown.readInt32BE(r[1]) + 1, r[1]);
        return grown;
      },
      'header only': (b) => b.subarray(0, BATCH_HEADER_BYTES),
    };
    for (const [name, lie] of Object.entries(lies)) {
      expect(checkBatch(forged(lie)), name).toMatchObject({ ok: false, reason: 'corrupt' });
    }
  });

  it('rejects a batch longer than the caller allows as corrupt', () => {
    const bytes = fixedBatch();
    expect(checkBatch(bytes, 0, bytes.length).ok).toBe(true);
    expect(checkBatch(bytes, 0, bytes.length - 1)).toMatchObject({ ok: false, reason: 'corrupt' });
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
          try {
            for (const { header, bytes } of iterateBatches(stream)) {
              expect(header.sizeBytes).toBe(bytes.length);
              yielded.push(bytes);
            }
          } catch {
            // Stopping at the junk by throwing is fine; what matters is what was yielded.
          }
          expect(yielded.map(hex)).toEqual(encoded.map(hex));
          expect(yielded.map(decodedRecords)).toEqual(encoded.map(decodedRecords));
        },
      ),
      200,
    );
  });

  it('walks concatenated valid batches to the end without error', () => {
    const stream = Buffer.concat([fixedBatch(), fixedBatch(), fixedBatch()]);
    const sizes = [...iterateBatches(stream)].map(({ bytes }) => bytes.length);
    expect(sizes).toEqual([1, 2, 3].map(() => fixedBatch().length));
  });
});

describe('enforceBatchLimits', () => {
  const T = 1_800_000_000_000;
  const roomy: BatchLimits = {
    batchBytesMax: 1 << 20,
    recordBytesMax: 1 << 20,
    recordsPerBatchMax: 10_000,
  };

  function expectRejected(
    run: () => unknown,
    status: number,
    code: string,
    details: Record<string, unknown> = {},
  ) {
    let caught: unknown = null;
    try {
      run();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TailbaseError);
    const error = caught as TailbaseError;
    expect({ status: error.status, code: error.code }).toEqual({ status, code });
    expect(error.details).toMatchObject(details);
  }

  /**
   * One record with the given collection and key bytes, laid out by hand per shared/FORMAT.md, so
   * the log's checks can be tried on batches the encoder itself refuses to make.
   */
  function forgedRecord(collection: Uint8Array, key: Uint8Array): Buffer {
    const template = encodeBatch([
      { collection: 'x', key: 'y', value: Buffer.from('{}'), timestampMs: 5 },
    ]);
    const header = Buffer.from(template.subarray(0, BATCH_HEADER_BYTES));
    const value = Buffer.from('{}');
    const body = Buffer.concat([
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, collection.length]),
      collection,
      Buffer.from([key.length >> 8, key.length & 0xff]),
      key,
      Buffer.from([0, 0, 0, value.length]),
      value,
    ]);
    body.writeInt32BE(body.length - 4, 0);
    const bytes = Buffer.concat([header, body]);
    bytes.writeInt32BE(bytes.length - 12, 8);
    return reseal(bytes);
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
    const record = { collection: 'c', key: 'k', value: null, timestampMs: T };
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
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', details);
    }
    expect(enforceBatchLimits(encodeBatch(three), roomy).lastOffsetDelta).toBe(2);
  });

  it('400 invalid_batch naming the field for timestamps out of range or not matching the records', () => {
    const records = [
      { collection: 'c', key: 'a', value: null, timestampMs: T + 5 },
      { collection: 'c', key: 'b', value: null, timestampMs: T },
      { collection: 'c', key: 'c', value: null, timestampMs: T + 9 },
    ];
    /** The batch with its header's timestamps overwritten (CRC resealed). */
    const withHeader = (firstTimestamp: bigint, maxTimestamp: bigint) => {
      const bytes = encodeBatch(records);
      bytes.writeBigInt64BE(firstTimestamp, 27);
      bytes.writeBigInt64BE(maxTimestamp, 35);
      return reseal(bytes);
    };
    /** The batch with one record's timestamp delta overwritten (CRC resealed). */
    const withDelta = (record: number, delta: number) => {
      const bytes = encodeBatch(records);
      let at = BATCH_HEADER_BYTES;
      for (let i = 0; i < record; i++) at += 4 + bytes.readInt32BE(at);
      bytes.writeInt32BE(delta, at + 8);
      return reseal(bytes);
    };
    const t = BigInt(T);
    const int64Max = 2n ** 63n - 1n;
    const cases: [string, Buffer, Record<string, unknown>][] = [
      ['firstTimestamp 2^63 - 1', withHeader(int64Max, int64Max), { field: 'firstTimestamp' }],
      ['firstTimestamp 2^53', withHeader(2n ** 53n, 2n ** 53n + 9n), { field: 'firstTimestamp' }],
      ['maxTimestamp 2^63 - 1', withHeader(t, int64Max), { field: 'maxTimestamp' }],
      ['negative timestamps', withHeader(-10n, -1n), { field: 'firstTimestamp', actual: -10 }],
      [
        'maxTimestamp past the latest record',
        withHeader(t, t + 10n),
        { field: 'maxTimestamp', expected: T + 9, actual: T + 10 },
      ],
      [
        'a record past maxTimestamp',
        withDelta(0, 10),
        { field: 'timestampDelta', record: 0, actual: 10 },
      ],
      [
        'no record at firstTimestamp',
        withDelta(1, 1),
        { field: 'firstTimestamp', expected: T + 1, actual: T },
      ],
    ];
    for (const [name, bytes, details] of cases) {
      expect(checkBatch(bytes).ok, name).toBe(true);
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch', details);
    }
    const atLimits = (timestampMs: number) =>
      encodeBatch([{ collection: 'c', key: 'k', value: null, timestampMs }]);
    expect(enforceBatchLimits(atLimits(0), roomy).firstTimestampMs).toBe(0);
    expect(enforceBatchLimits(atLimits(Number.MAX_SAFE_INTEGER), roomy).maxTimestampMs).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    expect(enforceBatchLimits(encodeBatch(records), roomy).maxTimestampMs).toBe(T + 9);
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

  it('413 record_too_large when one record, with its length field, exceeds recordBytesMax', () => {
    const big = { collection: 'c', key: 'k', value: new Uint8Array(1000), timestampMs: 1 };
    const small = { ...big, value: new Uint8Array(10) };
    const bytes = encodeBatch([small, big, small]);
    const bigRecordBytes = 4 + 4 + 4 + 1 + 1 + 2 + 1 + 4 + 1000;
    expect(bytes.length).toBe(BATCH_HEADER_BYTES + bigRecordBytes + 2 * (bigRecordBytes - 990));
    enforceBatchLimits(bytes, { ...roomy, recordBytesMax: bigRecordBytes });
    expectRejected(
      () => enforceBatchLimits(bytes, { ...roomy, recordBytesMax: bigRecordBytes - 1 }),
      413,
      'record_too_large',
      { limit: 'recordBytesMax', max: bigRecordBytes - 1, actual: bigRecordBytes },
    );
  });

  it('400 invalid_batch for a bad CRC, a truncation, trailing bytes or an unknown magic', () => {
    const corrupt = fixedBatch();
    flipBit(corrupt, corrupt.length - 1, 0);
    const unknownMagic = fixedBatch();
    unknownMagic[16] = 3;
    const cases = [
      corrupt,
      fixedBatch().subarray(0, 80),
      fixedBatch().subarray(0, 10),
      Buffer.concat([fixedBatch(), Buffer.from([0])]),
      Buffer.concat([fixedBatch(), fixedBatch()]),
      unknownMagic,
      new Uint8Array(0),
    ];
    for (const bytes of cases)
      expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_batch');
  });

  it('400 invalid_record for an empty key or collection, or one longer than the format allows', () => {
    const record = { collection: 'c', key: 'k', value: null, timestampMs: 1 };
    const cases: LogRecord[] = [
      { ...record, key: '' },
      { ...record, collection: '' },
      { ...record, key: 'k'.repeat(1025) },
      { ...record, key: '€'.repeat(342) },
      { ...record, collection: 'c'.repeat(65) },
    ];
    for (const bad of cases) {
      // The encoder refuses to make such a batch, and the log refuses one forged by hand.
      expectRejected(() => encodeBatch([record, bad]), 400, 'invalid_record');
      const forged = forgedRecord(Buffer.from(bad.collection), Buffer.from(bad.key));
      expect(checkBatch(forged).ok).toBe(true);
      expectRejected(() => enforceBatchLimits(forged, roomy), 400, 'invalid_record');
    }
    const atLimits = { ...record, collection: 'c'.repeat(64), key: '€'.repeat(341) + 'k' };
    expect(enforceBatchLimits(encodeBatch([atLimits]), roomy).recordCount).toBe(1);
  });

  it('400 invalid_record for a key or collection that is not valid UTF-8', () => {
    const valid = Buffer.from('ok');
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
      for (const bytes of [forgedRecord(valid, bad), forgedRecord(bad, valid)]) {
        expect(checkBatch(bytes).ok).toBe(true);
        expectRejected(() => enforceBatchLimits(bytes, roomy), 400, 'invalid_record');
      }
    }
    expect(enforceBatchLimits(forgedRecord(valid, Buffer.from('€')), roomy).recordCount).toBe(1);
  });
});
