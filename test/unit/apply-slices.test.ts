// Proves that a read answer cut into apply slices covers every record after the read offset
// exactly once, in offset order per topic-partition, each piece holding the batches of its
// records and none wholly before them, and that a slice stays within its bounds (it never passes
// recordsMax, and passes bytesMax by less than one record's share of its batch).
import { describe, expect, it } from 'vitest';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  stampBatch,
} from '../../shared/batch-codec.js';
import { applySlices } from '../../serve-node/apply-slices.js';
import type { ApplyPart } from '../../serve-node/replica.js';
import { seededRandom, testSeed } from '../harness/index.js';

/** Batches of the given record counts from `baseOffset` on, each record `valueBytes` long. */
function batches(baseOffset: number, counts: number[], valueBytes: number): Buffer {
  let offset = baseOffset;
  return Buffer.concat(
    counts.map((count) => {
      const records = Array.from({ length: count }, (_, i) => ({
        key: `k${offset + i}`,
        value: Buffer.alloc(valueBytes, 97),
        timestampMs: 1,
      }));
      const batch = encodeBatch(records);
      stampBatch(batch, offset, 0);
      offset += count;
      return batch;
    }),
  );
}

/** The offsets a piece applies: its records in [fromOffset, untilOffset). */
function offsetsOf(part: ApplyPart): number[] {
  const offsets: number[] = [];
  for (const { bytes } of iterateBatches(part.batches)) {
    for (const record of decodeRecords(bytes)) {
      if (record.offset >= part.fromOffset && record.offset < (part.untilOffset ?? Infinity)) {
        offsets.push(record.offset);
      }
    }
  }
  return offsets;
}

describe('apply slices', () => {
  it('cover every record once, in order, within the bounds', () => {
    const random = seededRandom(testSeed('apply slices'));
    for (let round = 0; round < 200; round++) {
      const valueBytes = random.int(1, 2_000);
      const parts: ApplyPart[] = Array.from({ length: random.int(1, 3) }, (_, p) => {
        const base = random.int(0, 50);
        const counts = Array.from({ length: random.int(1, 6) }, () => random.int(1, 40));
        // The read may begin inside the first batch.
        return {
          topic: 'c',
          partition: p,
          fromOffset: base + random.int(0, counts[0] - 1),
          batches: batches(base, counts, valueBytes),
        };
      });
      const bounds = { recordsMax: random.int(1, 50), bytesMax: random.int(100, 40_000) };
      const slices = applySlices(parts, bounds);
      for (const part of parts) {
        const pieces = slices.flat().filter((piece) => piece.partition === part.partition);
        expect(pieces.flatMap(offsetsOf)).toEqual(offsetsOf(part));
        expect(pieces.at(-1)?.untilOffset).toBeUndefined();
        // No piece decodes a batch wholly before its records (the first batch of the answer,
        // which the read may begin inside, aside).
        for (const piece of pieces.slice(1)) {
          const [first] = iterateBatches(piece.batches);
          const last = first.header.baseOffset + first.header.lastOffsetDelta;
          expect(last).toBeGreaterThanOrEqual(piece.fromOffset);
        }
      }
      for (const slice of slices) {
        expect(new Set(slice.map((piece) => piece.partition)).size).toBe(slice.length);
        const records = slice.flatMap(offsetsOf).length;
        expect(records).toBeGreaterThan(0);
        expect(records).toBeLessThanOrEqual(bounds.recordsMax);
        // A record's share of its batch is its value and at most ~130 bytes of framing.
        expect(records * valueBytes).toBeLessThan(bounds.bytesMax + valueBytes + 200);
      }
    }
  });

  it('leaves an answer within the bounds whole', () => {
    const part = { topic: 'c', partition: 0, fromOffset: 0, batches: batches(0, [10, 10], 10) };
    expect(applySlices([part], { recordsMax: 1_000, bytesMax: 1024 * 1024 })).toEqual([[part]]);
  });
});
