/**
 * Compressed batches: a gzip batch reads back, through every reader of the codec, exactly the
 * records of the same batch uncompressed; its CRC covers the compressed bytes; a batch whose
 * records would inflate past batchInflatedBytesMax (a zip bomb) is refused, 413 on append, without
 * inflating more than the bound. Replay a failure with FC_SEED.
 */
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BATCH_CRC_START,
  BATCH_HEADER_BYTES,
  batchCodec,
  checkBatch,
  checkRecordSpans,
  compressBatch,
  compressBatchSync,
  decodeRawRecords,
  decodeRecords,
  encodeBatch,
  enforceBatchLimits,
  iterateBatches,
  type LogRecord,
} from '../../shared/batch-codec.js';
import {
  BATCH_INFLATED_BYTES_MAX_DEFAULT,
  CODECS,
  inflateCount,
} from '../../shared/batch-compression.js';
import { crc32c } from '../../shared/crc32c.js';
import { TailbaseError } from '../../shared/errors.js';

const MiB = 1024 * 1024;
const limits = { batchBytesMax: 16 * MiB, recordBytesMax: 8 * MiB, recordsPerBatchMax: 10_000 };
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);

const recordArb: fc.Arbitrary<LogRecord> = fc.record({
  key: fc.string({ minLength: 1, maxLength: 40 }).filter((k) => !/\p{Surrogate}/u.test(k)),
  value: fc.option(
    fc.string({ maxLength: 300 }).map((text) => Buffer.from(JSON.stringify({ text }))),
    { nil: null },
  ),
  timestampMs: fc.integer({ min: 1_700_000_000_000, max: 1_700_000_100_000 }),
  headers: fc.array(
    fc.record({
      key: fc.string({ maxLength: 10 }).filter((k) => !/\p{Surrogate}/u.test(k)),
      value: fc.option(
        fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b)),
        {
          nil: null,
        },
      ),
    }),
    { maxLength: 2 },
  ),
});

/**
 * `plain`'s header with `records` as its gzip records section, CRC'd as a producer would (whether
 * or not gzip shrinks it, unlike compressBatchSync).
 */
function gzipBatchOf(
  records: Buffer,
  plain = encodeBatch([{ key: 'k', value: null, timestampMs: 1 }]),
): Buffer {
  const bytes = Buffer.concat([plain.subarray(0, BATCH_HEADER_BYTES), records]);
  bytes.writeInt32BE(bytes.length - 12, 8);
  bytes.writeInt16BE(CODECS.gzip, 21);
  bytes.writeUInt32BE(crc32c(bytes.subarray(BATCH_CRC_START)), 17);
  return bytes;
}

/** A one-record plain batch whose header claims `recordCount` records (a bomb's lie). */
function claiming(recordCount: number): Buffer {
  const plain = encodeBatch([{ key: 'k', value: null, timestampMs: 1 }]);
  plain.writeInt32BE(recordCount, BATCH_HEADER_BYTES - 4);
  return plain;
}

function rejection(run: () => unknown): TailbaseError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TailbaseError);
    return error as TailbaseError;
  }
  throw new Error('expected a rejection');
}

describe('gzip batches', () => {
  it('read back field for field as the same records uncompressed, by every reader', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), (records) => {
        const plain = encodeBatch(records, { baseOffset: 0 });
        const gzip = gzipBatchOf(gzipSync(plain.subarray(BATCH_HEADER_BYTES)), plain);
        expect(batchCodec(gzip)).toBe(CODECS.gzip);
        expect(checkBatch(gzip)).toMatchObject({ ok: true });
        expect(decodeRecords(gzip)).toEqual(decodeRecords(plain));
        expect(decodeRawRecords(gzip)).toEqual(decodeRawRecords(plain));
        expect(enforceBatchLimits(gzip, limits)).toEqual({
          ...enforceBatchLimits(plain, limits),
          attributes: CODECS.gzip,
          crc: gzip.readUInt32BE(17),
          sizeBytes: gzip.length,
        });
        const both = [...iterateBatches(Buffer.concat([gzip, plain]))];
        expect(both.map((b) => decodeRecords(b.bytes))).toEqual([
          decodeRecords(plain),
          decodeRecords(plain),
        ]);
      }),
      { seed, numRuns: 60 },
    );
  });

  it('compressBatch (on the thread pool) writes the bytes compressBatchSync writes', async () => {
    const plain = encodeBatch(
      Array.from({ length: 50 }, (_, i) => ({
        key: `k${i}`,
        value: Buffer.from(JSON.stringify({ i, text: 'same words again '.repeat(10) })),
        timestampMs: 1_700_000_000_000 + i,
      })),
    );
    const gzip = await compressBatch(plain, CODECS.gzip);
    expect(gzip).toEqual(compressBatchSync(plain, CODECS.gzip));
    expect(gzip.length).toBeLessThan(plain.length / 4);
    expect(await compressBatch(plain, CODECS.none)).toBe(plain);
  });

  it('a batch that gzip does not shrink stays plain, so a writer never outgrows its bound', () => {
    const random = encodeBatch([
      { key: 'k', value: Buffer.from(crypto.getRandomValues(new Uint8Array(64))), timestampMs: 1 },
    ]);
    expect(compressBatchSync(random, CODECS.gzip)).toBe(random);
  });

  it('the CRC covers the compressed bytes: one flipped bit there is corrupt, and refused', () => {
    const plain = encodeBatch([{ key: 'k', value: Buffer.from('{"a":1}'), timestampMs: 5 }]);
    const gzip = compressBatchSync(plain, CODECS.gzip);
    for (const at of [BATCH_HEADER_BYTES, gzip.length - 1]) {
      const flipped = Buffer.from(gzip);
      flipped[at] ^= 0x01;
      expect(checkBatch(flipped)).toMatchObject({ ok: false, detail: 'CRC-32C mismatch' });
      expect(rejection(() => enforceBatchLimits(flipped, limits))).toMatchObject({
        status: 400,
        code: 'invalid_batch',
      });
    }
  });

  it('records that inflate past batchInflatedBytesMax are refused 413 and not read', () => {
    const value = Buffer.alloc(2 * MiB, 'a');
    value[0] = 0x7b;
    const plain = encodeBatch([{ key: 'big', value, timestampMs: 1 }]);
    const gzip = compressBatchSync(plain, CODECS.gzip);
    const tight = { ...limits, batchInflatedBytesMax: MiB };
    expect(rejection(() => enforceBatchLimits(gzip, tight))).toMatchObject({
      status: 413,
      code: 'batch_inflated_too_large',
      details: { limit: 'batchInflatedBytesMax', max: MiB },
    });
    expect(checkRecordSpans(gzip, MiB)).toMatchObject({ ok: false, reason: 'corrupt' });
    expect(enforceBatchLimits(gzip, { ...limits, batchInflatedBytesMax: 3 * MiB })).toBeDefined();
  });

  it('a zip bomb (80 MiB of zeros in 80 KB) is refused under the default bound', () => {
    // Its header claims as many records as a batch may hold, so recordBytesMax does not stop it.
    const bomb = gzipBatchOf(gzipSync(Buffer.alloc(80 * MiB)), claiming(limits.recordsPerBatchMax));
    expect(bomb.length).toBeLessThan(MiB);
    expect(rejection(() => enforceBatchLimits(bomb, limits))).toMatchObject({
      status: 413,
      code: 'batch_inflated_too_large',
      details: { max: BATCH_INFLATED_BYTES_MAX_DEFAULT },
    });
    // A reader of stored batches is bounded by the format, not the append limit: it inflates the
    // zeros and finds no records in them.
    expect(() => decodeRecords(bomb)).toThrow(/batch is corrupt/);
  });

  it('a bomb claiming too many records is refused 413 too_many_records without an inflate', () => {
    const bomb = gzipBatchOf(gzipSync(Buffer.alloc(MiB)), claiming(limits.recordsPerBatchMax + 1));
    const before = inflateCount();
    expect(rejection(() => enforceBatchLimits(bomb, limits))).toMatchObject({
      status: 413,
      code: 'too_many_records',
      details: { limit: 'recordsPerBatchMax', actual: limits.recordsPerBatchMax + 1 },
    });
    expect(inflateCount() - before, 'inflates').toBe(0);
  });

  it('a bomb claiming few records stops inflating at recordCount x recordBytesMax: 413 record_too_large', () => {
    const bomb = gzipBatchOf(gzipSync(Buffer.alloc(80 * MiB)), claiming(2));
    expect(rejection(() => enforceBatchLimits(bomb, limits))).toMatchObject({
      status: 413,
      code: 'record_too_large',
      details: {
        limit: 'recordBytesMax',
        max: limits.recordBytesMax,
        inflatedBytesMax: 2 * limits.recordBytesMax,
      },
    });
  });
});
