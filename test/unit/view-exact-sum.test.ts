// Proves the views' exact sums: a double scaled by 2^1074 comes back as itself; two doubles
// summed exactly and rounded once equal JavaScript's correctly rounded a + b; a sum does not
// depend on the order of its terms, nor on terms added and taken back; a sum's stored text (and
// the decimal text of older states) reads back as the sum; and the sortable text of a number
// sorts as the number and decodes to it.
import { describe, expect, it } from 'vitest';
import { scaled, sumFromText, sumText, unscaled } from '../../views/exact-sum.js';
import { sortableNumber } from '../../views/sortable.js';
import { seededRandom, testSeed } from '../harness/random.js';

const random = seededRandom(testSeed('view-exact-sum'));

/** Doubles of every kind: small decimals, integers, huge, tiny, subnormal, negative. */
function anyDouble(): number {
  const view = new DataView(new ArrayBuffer(8));
  switch (random.int(0, 4)) {
    case 0:
      return random.int(-100_000, 100_000) / 100;
    case 1:
      return random.int(-(2 ** 31), 2 ** 31);
    case 2:
      return (random.next() - 0.5) * 2 ** random.int(-1074, 1000);
    case 3:
      return random.pick([
        0,
        -0,
        Number.MIN_VALUE,
        -Number.MIN_VALUE,
        Number.MAX_VALUE / 4,
        2 ** -1022,
      ]);
    default: {
      const bits = random.bytes(8);
      bits[0] &= 0x7f | (random.int(0, 1) << 7);
      // An exponent short of 0x7ff: finite.
      if ((bits.readUInt16BE(0) & 0x7ff0) === 0x7ff0) bits[1] &= 0xef;
      view.setBigUint64(0, bits.readBigUInt64BE(0));
      return view.getFloat64(0);
    }
  }
}

describe('exact sums of doubles', () => {
  it('round-trips every kind of double', () => {
    for (let i = 0; i < 5000; i++) {
      const x = anyDouble();
      expect(unscaled(scaled(x))).toBe(x === 0 ? 0 : x);
    }
  });

  it('rounds a sum of two once, as a + b does', () => {
    for (let i = 0; i < 20_000; i++) {
      const a = anyDouble();
      const b = random.int(0, 1) ? anyDouble() : a * (random.next() - 0.5);
      const expected = a + b;
      if (!Number.isFinite(expected)) continue;
      expect({ a, b, sum: unscaled(scaled(a) + scaled(b)) }).toEqual({
        a,
        b,
        sum: expected === 0 ? 0 : expected,
      });
    }
  });

  it('does not depend on the order of the terms, nor on terms taken back', () => {
    for (let round = 0; round < 200; round++) {
      const terms = Array.from({ length: random.int(1, 40) }, () => random.int(-1e6, 1e6) / 100);
      const shuffled = [...terms].sort(() => random.next() - 0.5);
      const extra = Array.from({ length: 5 }, anyDouble);
      const forward = terms.reduce((s, x) => s + scaled(x), 0n);
      let churned = 0n;
      for (const x of [...shuffled, ...extra]) churned += scaled(x);
      for (const x of extra) churned -= scaled(x);
      expect(unscaled(churned)).toBe(unscaled(forward));
    }
    // The naive sums of the same terms disagree with each other: that is the point.
    expect(0.1 + 0.2 + 0.3).not.toBe(0.3 + 0.2 + 0.1);
    const exact = unscaled(scaled(0.1) + scaled(0.2) + scaled(0.3));
    expect(unscaled(scaled(0.3) + scaled(0.2) + scaled(0.1))).toBe(exact);
  });

  it('reads back the text a sum is stored as, and the decimal text of states written before', () => {
    for (let round = 0; round < 200; round++) {
      const sum = Array.from({ length: random.int(0, 10) }, anyDouble).reduce(
        (s, x) => s + scaled(x),
        0n,
      );
      expect(sumText(sum)).toMatch(/^-?0x[0-9a-f]+$/);
      expect(sumFromText(sumText(sum))).toBe(sum);
      expect(sumFromText(sum.toString())).toBe(sum);
    }
    expect(sumText(-scaled(1))).toBe(`-0x${scaled(1).toString(16)}`);
  });
});

/** The number sortableNumber encoded: its inverse, so the test shows no two numbers share a text. */
function numberOfSortable(hex: string): number {
  const sign = 1n << 63n;
  const all = (1n << 64n) - 1n;
  const bits = BigInt(`0x${hex}`);
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, (bits & sign) !== 0n ? bits & ~sign & all : ~bits & all);
  return view.getFloat64(0);
}

describe('sortable numbers', () => {
  it('sort as the numbers and decode to them', () => {
    const numbers = Array.from({ length: 2000 }, anyDouble);
    const byText = [...numbers].sort((a, b) => (sortableNumber(a) < sortableNumber(b) ? -1 : 1));
    const byValue = [...numbers].sort((a, b) => a - b);
    expect(byText).toEqual(byValue);
    for (const x of numbers) expect(numberOfSortable(sortableNumber(x))).toBe(x === 0 ? 0 : x);
  });
});
