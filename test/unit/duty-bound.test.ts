// Proves a costly measurement (a store's bytes on disk) is repeated at most at its duty: reused
// until 100 / dutyPercentMax times its own duration has passed, measured at once for another key.
import { describe, expect, it } from 'vitest';
import { DutyBoundMeasure } from '../../serve-node/duty-bound.js';

describe('DutyBoundMeasure', () => {
  it('reuses a measurement for ten times its duration at 10%, then measures again', () => {
    let nowMs = 0;
    const measure = new DutyBoundMeasure<string, number>(10, () => nowMs);
    let measured = 0;
    /** A measurement that takes 50 ms of the clock. */
    const costly = () => {
      nowMs += 50;
      return ++measured;
    };
    expect(measure.get('stores-1', costly)).toBe(1);
    nowMs += 400;
    // 450 ms after it began, under 10 x 50 ms: the same answer.
    expect(measure.get('stores-1', costly)).toBe(1);
    nowMs += 50;
    expect(measure.get('stores-1', costly)).toBe(2);
    // Other stores (a rebuild, a drop) are measured at once.
    expect(measure.get('stores-2', costly)).toBe(3);
  });

  it('measures a cheap store again at nearly every ask, and refuses a duty outside (0, 100]', () => {
    let nowMs = 0;
    const measure = new DutyBoundMeasure<string, number>(10, () => nowMs);
    let measured = 0;
    expect(measure.get('s', () => ++measured)).toBe(1);
    nowMs += 1;
    expect(measure.get('s', () => ++measured)).toBe(2);
    expect(() => new DutyBoundMeasure(0)).toThrow('not in (0, 100]');
    expect(() => new DutyBoundMeasure(101)).toThrow('not in (0, 100]');
  });
});
