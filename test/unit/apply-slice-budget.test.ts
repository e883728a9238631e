// Proves that apply slices are sized by time: under a seeded cost model (a fixed cost a slice plus
// a cost a byte and a record), the bounds start small, never more than double from one slice to
// the next, never pass the byte and record caps, and once the estimates have settled every slice
// costs at most the bound plus the fixed cost, and at least half the bound unless a cap binds;
// when records become ten times as costly, the next slices shrink to fit the bound again.
import { describe, expect, it } from 'vitest';
import { SliceBudget } from '../../serve-node/apply-slice-budget.js';
import { seededRandom, testSeed } from '../harness/index.js';

const SLICES = 60;
const SETTLED_AFTER = 12;

describe('apply slice budget', () => {
  it('sizes slices to the time bound, within the caps', () => {
    const random = seededRandom(testSeed('apply slice budget'));
    for (let round = 0; round < 100; round++) {
      const sliceMsMax = random.int(5, 200);
      const limits = {
        sliceMsMax,
        bytesMax: random.int(100_000, 16_000_000),
        recordsMax: random.int(100, 50_000),
      };
      const recordBytes = random.int(50, 20_000);
      const fixedMs = random.int(0, 3);
      let msPerRecord = 0.005 + random.int(0, 100) / 1_000;
      const msPerByte = random.int(0, 100) / 1_000_000;
      const budget = new SliceBudget(limits);
      let last = { bytesMax: 0, recordsMax: 0 };
      for (let i = 0; i < SLICES; i++) {
        // Halfway, records turn ten times as costly (an index grown, a heavier kind of document).
        if (i === SLICES / 2) msPerRecord *= 10;
        const bounds = budget.bounds();
        expect(bounds.bytesMax).toBeLessThanOrEqual(limits.bytesMax);
        expect(bounds.recordsMax).toBeLessThanOrEqual(limits.recordsMax);
        if (i > 0) {
          expect(bounds.bytesMax).toBeLessThanOrEqual(Math.max(last.bytesMax * 2, 1));
          expect(bounds.recordsMax).toBeLessThanOrEqual(Math.max(last.recordsMax * 2, 1));
        }
        last = bounds;
        const records = Math.max(
          Math.min(bounds.recordsMax, Math.ceil(bounds.bytesMax / recordBytes)),
          1,
        );
        const bytes = records * recordBytes;
        const ms = fixedMs + records * msPerRecord + bytes * msPerByte;
        const settled = i % (SLICES / 2) >= SETTLED_AFTER;
        if (settled) {
          // One record more than the bound allows is the most a cut takes past it.
          expect(ms).toBeLessThanOrEqual(
            sliceMsMax + fixedMs + msPerRecord + recordBytes * msPerByte,
          );
          const capped = records >= limits.recordsMax || bytes >= limits.bytesMax || records === 1;
          if (!capped) expect(ms).toBeGreaterThanOrEqual(sliceMsMax / 2);
        }
        budget.applied(records, bytes, ms);
      }
    }
  });
});
