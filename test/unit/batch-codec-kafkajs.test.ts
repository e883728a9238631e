// The record batch codec against a Kafka client nobody here wrote: kafkajs 2.2.4's RecordBatch v2
// encoder and decoder (its internals, loaded with createRequire). For random records encodeBatch
// must write exactly kafkajs's bytes, and kafkajs must read our batches back field for field.
// Where kafkajs departs from Kafka's spec (a null header value, which it cannot encode) the spec
// is tested instead, with bytes laid out by hand. Replay a failure with FC_SEED.
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkBatch,
  decodeRecords,
  encodeBatch,
  enforceBatchLimits,
  stampBatch,
} from '../../shared/batch-codec.js';
import type { EncodeBatchOptions, LogRecord, RecordHeader } from '../../shared/batch-codec.js';
import { crc32c } from '../../shared/crc32c.js';

const require = createRequire(import.meta.url);

interface KafkaLong {
  toString(): string;
}
interface KafkaEncoder {
  buffer: Buffer;
}
type KafkaHeaders = Record<string, Buffer | Buffer[]>;
interface KafkaRecordInput {
  offsetDelta: number;
  timestampDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: KafkaHeaders;
}
interface KafkaBatchInput {
  firstOffset: KafkaLong;
  firstTimestamp: number;
  maxTimestamp: number;
  partitionLeaderEpoch: number;
  lastOffsetDelta: number;
  producerId: KafkaLong;
  producerEpoch: number;
  firstSequence: number;
  records: KafkaEncoder[];
}
interface KafkaDecodedRecord {
  timestamp: string;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | null | (Buffer | null)[]>;
}
interface KafkaDecodedBatch {
  firstOffset: string;
  firstTimestamp: string;
  maxTimestamp: string;
  partitionLeaderEpoch: number;
  lastOffsetDelta: number;
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
  inTransaction: boolean;
  isControlBatch: boolean;
  records: KafkaDecodedRecord[];
}
interface KafkaDecoder {
  offset: number;
  canReadInt64(): boolean;
}

const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (batch: KafkaBatchInput) => Promise<KafkaEncoder>;
};
const KafkaRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (
  record: KafkaRecordInput,
) => KafkaEncoder;
const decodeKafkaBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (
  decoder: KafkaDecoder,
) => Promise<KafkaDecodedBatch>;
const KafkaDecoderClass = require('kafkajs/src/protocol/decoder.js') as new (
  buffer: Buffer,
) => KafkaDecoder;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(value: number): KafkaLong };
const kafkaCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (
  buffer: Buffer,
) => number;

const seed = readSeed();
console.info(`batch-codec-kafkajs properties: seed ${seed} (replay with FC_SEED=${seed})`);

function readSeed(): number {
  const fromEnv = process.env.FC_SEED;
  if (fromEnv === undefined || fromEnv === '') return Math.floor(Math.random() * 0x7fff_ffff);
  const parsed = Number(fromEnv);
  if (!Number.isSafeInteger(parsed)) throw new Error(`FC_SEED must be an integer, got ${fromEnv}`);
  return parsed;
}

async function checkAsync<Ts>(property: fc.IAsyncProperty<Ts>, numRuns: number): Promise<void> {
  await fc.assert(property, { seed, numRuns });
}

const edgeCodePoints = ['\u0000', '\u007f', '\u0080', '\u07ff', '\u0800', '\ufeff', '\uffff'];
const moreCodePoints = ['\u{10000}', '\u{10ffff}', 'é', '€', '中', '😀'];

const text = (minLength: number, maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: fc.constantFrom(...edgeCodePoints, ...moreCodePoints) },
    ),
    minLength,
    maxLength,
  });

const bytes = (maxLength: number) =>
  fc.uint8Array({ maxLength }).map((b) => Buffer.from(b.buffer, b.byteOffset, b.length));

/** Integer-like header keys ('7') are where a JS object's key order departs from insertion order. */
const headerKey = fc.oneof(text(0, 12), fc.constantFrom('7', '0', '12', 'trace', 'x'));

interface Case {
  records: LogRecord[];
  /** The same headers as kafkajs takes them: an object, repeated keys as arrays. */
  kafkaHeaders: KafkaHeaders[];
  options: Required<Pick<EncodeBatchOptions, 'producerId' | 'producerEpoch' | 'baseSequence'>> & {
    offsetDeltas: number[];
    lastOffsetDelta: number;
  };
  baseOffset: number;
  leaderEpoch: number;
}

/**
 * kafkajs takes headers as an object, so repeated keys group and integer-like keys come first;
 * the headers we encode are that object's entries in its own order, so both write the same.
 */
function groupHeaders(list: readonly { key: string; value: Buffer }[]): {
  kafka: KafkaHeaders;
  ours: RecordHeader[];
} {
  const kafka = Object.create(null) as KafkaHeaders;
  for (const { key, value } of list) {
    const prior = kafka[key];
    kafka[key] =
      prior === undefined ? value : Array.isArray(prior) ? [...prior, value] : [prior, value];
  }
  const ours = Object.keys(kafka).flatMap((key) => {
    const values = kafka[key];
    return (Array.isArray(values) ? values : [values]).map((value) => ({ key, value }));
  });
  return { kafka, ours };
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    firstTimestampMs: fc.integer({ min: 2 ** 41, max: 2 ** 45 }),
    records: fc.array(
      fc.record({
        key: text(1, 40).filter((k) => Buffer.byteLength(k) <= 1024),
        value: fc.option(bytes(300), { nil: null, freq: 4 }),
        // Out of order either way, small or far past the int32 range (varlong).
        timestampDeltaMs: fc.oneof(
          fc.integer({ min: -1000, max: 1000 }),
          fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
        ),
        headers: fc.array(fc.record({ key: headerKey, value: bytes(20) }), { maxLength: 4 }),
        gap: fc.integer({ min: 1, max: 300 }),
      }),
      { minLength: 1, maxLength: 30 },
    ),
    gaps: fc.boolean(),
    trailingGap: fc.integer({ min: 0, max: 100 }),
    producer: fc.oneof(
      // kafkajs's own defaults without an idempotent producer, and Java's.
      fc.constant({ producerId: -1, producerEpoch: 0, baseSequence: 0 }),
      fc.constant({ producerId: -1, producerEpoch: -1, baseSequence: -1 }),
      fc.record({
        producerId: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.maxSafeNat()),
        producerEpoch: fc.integer({ min: 0, max: 0x7fff }),
        baseSequence: fc.integer({ min: 0, max: 0x7fff_ffff }),
      }),
    ),
    baseOffset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 52 })),
    leaderEpoch: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0x7fff_ffff })),
  })
  .map(({ firstTimestampMs, records, gaps, trailingGap, producer, baseOffset, leaderEpoch }) => {
    const offsetDeltas: number[] = [];
    records.forEach((r, i) =>
      offsetDeltas.push(i === 0 ? 0 : offsetDeltas[i - 1] + (gaps ? r.gap : 1)),
    );
    const grouped = records.map((r) => groupHeaders(r.headers));
    return {
      records: records.map((r, i) => ({
        key: r.key,
        value: r.value,
        timestampMs: firstTimestampMs + (i === 0 ? 0 : r.timestampDeltaMs),
        headers: grouped[i].ours,
      })),
      kafkaHeaders: grouped.map((g) => g.kafka),
      options: {
        ...producer,
        offsetDeltas,
        lastOffsetDelta: offsetDeltas[offsetDeltas.length - 1] + (gaps ? trailingGap : 0),
      },
      baseOffset,
      leaderEpoch,
    };
  });

async function kafkajsBatch(c: Case): Promise<Buffer> {
  const first = c.records[0].timestampMs;
  const encoder = await RecordBatch({
    firstOffset: Long.fromValue(c.baseOffset),
    firstTimestamp: first,
    maxTimestamp: Math.max(...c.records.map((r) => r.timestampMs)),
    partitionLeaderEpoch: c.leaderEpoch,
    lastOffsetDelta: c.options.lastOffsetDelta,
    producerId: Long.fromValue(c.options.producerId),
    producerEpoch: c.options.producerEpoch,
    firstSequence: c.options.baseSequence,
    records: c.records.map((r, i) =>
      KafkaRecord({
        offsetDelta: c.options.offsetDeltas[i],
        timestampDelta: r.timestampMs - first,
        key: Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        headers: c.kafkaHeaders[i],
      }),
    ),
  });
  return encoder.buffer;
}

function ourBatch(c: Case): Buffer {
  const bytes = encodeBatch(c.records, c.options);
  stampBatch(bytes, c.baseOffset, c.leaderEpoch);
  return bytes;
}

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

/** kafkajs's decoded headers, repeated keys as arrays, values as hex. */
function hexKafkaHeaders(headers: KafkaDecodedRecord['headers']) {
  return Object.keys(headers).map((key) => {
    const values = headers[key];
    return [key, (Array.isArray(values) ? values : [values]).map(hex)];
  });
}

function expectedKafkaHeaders(headers: readonly RecordHeader[]) {
  const grouped = new Map<string, (string | null)[]>();
  for (const h of headers) grouped.set(h.key, [...(grouped.get(h.key) ?? []), hex(h.value)]);
  return [...grouped.entries()];
}

/**
 * kafkajs's decoder gathers headers into a plain object and tests `obj[key] === undefined`, so a
 * header key naming an Object.prototype member ('valueOf', 'constructor', '__proto__') reads
 * back wrong in kafkajs (a kafkajs bug; our bytes are Kafka's). The read-back property skips them.
 */
const kafkajsMisreads = (key: string) => key in Object.prototype;

/** Every batch kafkajs finds in `stream`, as its Fetch path reads them one after another. */
async function kafkajsDecodeAll(stream: Buffer): Promise<KafkaDecodedBatch[]> {
  const decoder = new KafkaDecoderClass(stream);
  const batches: KafkaDecodedBatch[] = [];
  while (decoder.offset < stream.length) batches.push(await decodeKafkaBatch(decoder));
  return batches;
}

function expectKafkajsReads(decoded: KafkaDecodedBatch, c: Case) {
  const timestamps = c.records.map((r) => r.timestampMs);
  expect({
    firstOffset: decoded.firstOffset,
    firstTimestamp: decoded.firstTimestamp,
    maxTimestamp: decoded.maxTimestamp,
    partitionLeaderEpoch: decoded.partitionLeaderEpoch,
    lastOffsetDelta: decoded.lastOffsetDelta,
    producerId: decoded.producerId,
    producerEpoch: decoded.producerEpoch,
    firstSequence: decoded.firstSequence,
    inTransaction: decoded.inTransaction,
    isControlBatch: decoded.isControlBatch,
  }).toEqual({
    firstOffset: String(c.baseOffset),
    firstTimestamp: String(timestamps[0]),
    maxTimestamp: String(Math.max(...timestamps)),
    partitionLeaderEpoch: c.leaderEpoch,
    lastOffsetDelta: c.options.lastOffsetDelta,
    producerId: String(c.options.producerId),
    producerEpoch: c.options.producerEpoch,
    firstSequence: c.options.baseSequence,
    inTransaction: false,
    isControlBatch: false,
  });
  expect(
    decoded.records.map((r) => ({
      offset: r.offset,
      timestamp: r.timestamp,
      key: r.key === null ? null : r.key.toString('utf8'),
      value: hex(r.value),
      headers: hexKafkaHeaders(r.headers),
    })),
  ).toEqual(
    c.records.map((r, i) => ({
      offset: String(c.baseOffset + c.options.offsetDeltas[i]),
      timestamp: String(r.timestampMs),
      key: r.key,
      value: hex(r.value),
      headers: expectedKafkaHeaders(r.headers ?? []),
    })),
  );
}

describe('batch codec against kafkajs 2.2.4', () => {
  it('both CRC-32C implementations give the standard check value', () => {
    const check = Buffer.from('123456789');
    expect(crc32c(check)).toBe(0xe3069283);
    expect(kafkaCrc32c(check) >>> 0).toBe(0xe3069283);
  });

  it('encodeBatch writes exactly the bytes kafkajs writes for the same fields', async () => {
    await checkAsync(
      fc.asyncProperty(caseArb, async (c) => {
        const ours = ourBatch(c);
        expect(hex(ours)).toBe(hex(await kafkajsBatch(c)));
        expect(checkBatch(ours).ok).toBe(true);
      }),
      150,
    );
  });

  it('kafkajs reads our batches back to the same keys, values, headers, offsets and timestamps', async () => {
    await checkAsync(
      fc.asyncProperty(fc.array(caseArb, { minLength: 1, maxLength: 3 }), async (cases) => {
        const headerKeys = cases.flatMap((c) => c.records.flatMap((r) => r.headers ?? []));
        fc.pre(!headerKeys.some((h) => kafkajsMisreads(h.key)));
        const stream = Buffer.concat(cases.map(ourBatch));
        const decoded = await kafkajsDecodeAll(stream);
        expect(decoded).toHaveLength(cases.length);
        decoded.forEach((batch, i) => expectKafkajsReads(batch, cases[i]));
      }),
      100,
    );
  });

  it('what kafkajs produces passes enforceBatchLimits and decodes to the same records', async () => {
    await checkAsync(
      fc.asyncProperty(caseArb, async (c) => {
        const dense: Case = {
          ...c,
          options: {
            ...c.options,
            offsetDeltas: c.records.map((_, i) => i),
            lastOffsetDelta: c.records.length - 1,
          },
          baseOffset: 0,
          leaderEpoch: 0,
        };
        const bytes = await kafkajsBatch(dense);
        expect(
          enforceBatchLimits(bytes, {
            batchBytesMax: 1 << 24,
            recordBytesMax: 1 << 24,
            recordsPerBatchMax: 100,
          }),
        ).toMatchObject({
          recordCount: c.records.length,
          producerId: c.options.producerId,
        });
        expect(
          decodeRecords(bytes).map((r) => ({
            key: r.key,
            value: hex(r.value),
            timestampMs: r.timestampMs,
            headers: (r.headers ?? []).map((h) => [h.key, hex(h.value)]),
          })),
        ).toEqual(
          dense.records.map((r) => ({
            key: r.key,
            value: hex(r.value),
            timestampMs: r.timestampMs,
            headers: (r.headers ?? []).map((h) => [h.key, hex(h.value)]),
          })),
        );
      }),
      50,
    );
  });

  it('a golden batch laid out by hand from the spec: ours and kafkajs’s bytes are it', async () => {
    // baseTimestamp 1000, records at +0 and −3 (out of order), max 1000; producer 5, epoch 1, seq 9.
    const record0 = [
      0x00, // attributes
      0x00, // timestampDelta 0
      0x00, // offsetDelta 0
      0x02,
      0x61, // key "a"
      0x04,
      0x7b,
      0x7d, // value "{}"
      0x02, // 1 header
      0x02,
      0x68, // header key "h"
      0x02,
      0x76, // header value "v"
    ];
    const record1 = [
      0x00, // attributes
      0x05, // timestampDelta −3 (zigzag 5)
      0x02, // offsetDelta 1
      0x04,
      0xc3,
      0xa9, // key "é"
      0x01, // value null: a tombstone
      0x00, // no headers
    ];
    const body = Buffer.from([
      ...[0x00, 0x00], // attributes
      ...[0x00, 0x00, 0x00, 0x01], // lastOffsetDelta 1
      ...[0, 0, 0, 0, 0, 0, 0x03, 0xe8], // baseTimestamp 1000
      ...[0, 0, 0, 0, 0, 0, 0x03, 0xe8], // maxTimestamp 1000
      ...[0, 0, 0, 0, 0, 0, 0, 0x05], // producerId 5
      ...[0x00, 0x01], // producerEpoch 1
      ...[0x00, 0x00, 0x00, 0x09], // baseSequence 9
      ...[0x00, 0x00, 0x00, 0x02], // 2 records
      record0.length * 2, // length varint (zigzag)
      ...record0,
      record1.length * 2,
      ...record1,
    ]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(kafkaCrc32c(body) >>> 0);
    const golden = Buffer.concat([
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 0x2a]), // baseOffset 42
      Buffer.from([0, 0, 0, 9 + body.length]), // batchLength: from leaderEpoch to the end
      Buffer.from([0, 0, 0, 0x07]), // partitionLeaderEpoch 7
      Buffer.from([0x02]), // magic
      crc,
      body,
    ]);
    const records: LogRecord[] = [
      {
        key: 'a',
        value: Buffer.from('{}'),
        timestampMs: 1000,
        headers: [{ key: 'h', value: Buffer.from('v') }],
      },
      { key: 'é', value: null, timestampMs: 997 },
    ];
    const ours = encodeBatch(records, {
      producerId: 5,
      producerEpoch: 1,
      baseSequence: 9,
      baseOffset: 42,
      leaderEpoch: 7,
    });
    expect(hex(ours)).toBe(hex(golden));
    const theirs = await RecordBatch({
      firstOffset: Long.fromValue(42),
      firstTimestamp: 1000,
      maxTimestamp: 1000,
      partitionLeaderEpoch: 7,
      lastOffsetDelta: 1,
      producerId: Long.fromValue(5),
      producerEpoch: 1,
      firstSequence: 9,
      records: [
        KafkaRecord({
          offsetDelta: 0,
          timestampDelta: 0,
          key: Buffer.from('a'),
          value: Buffer.from('{}'),
          headers: { h: Buffer.from('v') },
        }),
        KafkaRecord({
          offsetDelta: 1,
          timestampDelta: -3,
          key: Buffer.from('é'),
          value: null,
          headers: {},
        }),
      ],
    });
    expect(hex(theirs.buffer)).toBe(hex(golden));
  });

  it('a null header value is length −1 per the spec (kafkajs cannot encode one, but reads it)', async () => {
    // kafkajs 2.2.4's record encoder sizes headers with Buffer.byteLength(value) before its null
    // check, so a null header value throws; the spec (and Java's client) allow it as length −1.
    expect(() =>
      KafkaRecord({
        offsetDelta: 0,
        timestampDelta: 0,
        key: Buffer.from('k'),
        value: null,
        headers: { h: null as unknown as Buffer },
      }),
    ).toThrow();
    const ours = encodeBatch([
      {
        key: 'k',
        value: null,
        timestampMs: 5,
        headers: [
          { key: 'h', value: null },
          { key: 'i', value: Buffer.from('') },
        ],
      },
    ]);
    // The record: length, attributes, timestampDelta, offsetDelta, key "k", value null,
    // 2 headers: "h" null (−1 is varint 0x01), "i" empty (length 0).
    const body = [0x00, 0x00, 0x00, 0x02, 0x6b, 0x01, 0x04, 0x02, 0x68, 0x01, 0x02, 0x69, 0x00];
    expect(hex(ours.subarray(61))).toBe(hex(Buffer.from([body.length * 2, ...body])));
    const [decoded] = await kafkajsDecodeAll(ours);
    expect(decoded.records[0].headers).toEqual({ h: null, i: Buffer.alloc(0) });
  });

  it('header keys naming Object.prototype members: ours read back right, kafkajs misreads them', async () => {
    const records: LogRecord[] = [
      {
        key: 'k',
        value: null,
        timestampMs: 1,
        headers: [{ key: 'valueOf', value: Buffer.from('v') }],
      },
    ];
    const bytes = encodeBatch(records);
    expect(decodeRecords(bytes)[0].headers?.map((h) => [h.key, hex(h.value)])).toEqual([
      ['valueOf', hex(Buffer.from('v'))],
    ]);
    const [decoded] = await kafkajsDecodeAll(bytes);
    // kafkajs 2.2.4 takes Object.prototype.valueOf for an earlier value and makes an array.
    expect(Array.isArray(decoded.records[0].headers.valueOf)).toBe(true);
  });

  it('an empty header key and integer-like header keys are written in kafkajs’s order', async () => {
    const headers = {
      '12': Buffer.from('b'),
      '': Buffer.from('c'),
      '3': [Buffer.from('a'), Buffer.from('d')],
    };
    const c: Case = {
      records: [
        {
          key: 'k',
          value: null,
          timestampMs: 9,
          headers: [
            { key: '3', value: Buffer.from('a') },
            { key: '3', value: Buffer.from('d') },
            { key: '12', value: Buffer.from('b') },
            { key: '', value: Buffer.from('c') },
          ],
        },
      ],
      kafkaHeaders: [headers],
      options: {
        producerId: -1,
        producerEpoch: 0,
        baseSequence: 0,
        offsetDeltas: [0],
        lastOffsetDelta: 0,
      },
      baseOffset: 0,
      leaderEpoch: 0,
    };
    expect(hex(ourBatch(c))).toBe(hex(await kafkajsBatch(c)));
  });
});
