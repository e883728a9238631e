/**
 * How large the next apply slice may be, so that its transactions take about `sliceMsMax`: the
 * serve thread is held that long, not a fixed number of bytes. Bounded at 512 KiB, the corpus's
 * ~5 KB documents were committed ~100 at a time, and 8 MiB slices replayed it 1.3-1.8x faster;
 * the same bytes of 770-byte documents cost several times more. So the bounds follow what the
 * last slices cost: the milliseconds a byte and a record took (each charged the whole slice's
 * time, so either estimate alone would overrun the bound less than it says), the next slice the
 * fewer bytes and records of the two that fit the bound. The bounds never more than double from
 * one slice to the next (a slice after cheap ones, tombstones say, may cost more a byte), and
 * stay within `bytesMax` and `recordsMax`, the memory a slice may decode.
 *
 * They never fall below `bytesMin` and `recordsMin` either (the fixed bounds slices had before,
 * which issue 28's read latencies were measured with): a transaction has a cost of its own,
 * whatever it holds (the top-k lists rewrite every list block a commit touches), which charged
 * to its records made the next slice smaller, its records dearer again, down to a few records a
 * transaction (a replay of the corpus with the lists took 16 s instead of 4). Where one
 * transaction costs more than the bound, smaller ones would only cost more in all.
 */
import type { SliceBounds } from './apply-slices.js';

export interface SliceBudgetLimits {
  sliceMsMax: number;
  bytesMin: number;
  bytesMax: number;
  recordsMin: number;
  recordsMax: number;
}

/** The weight of the last slice in the running estimates. */
const LAST_WEIGHT = 0.5;
const GROWTH_MAX = 2;

export class SliceBudget {
  private msPerByte: number | null = null;
  private msPerRecord: number | null = null;
  private last: SliceBounds;

  constructor(private readonly limits: SliceBudgetLimits) {
    // Before any cost is known, the floor.
    this.last = {
      bytesMax: Math.min(limits.bytesMin, limits.bytesMax),
      recordsMax: Math.min(limits.recordsMin, limits.recordsMax),
    };
  }

  /** The bounds of the next slice. */
  bounds(): SliceBounds {
    const { sliceMsMax, bytesMin, bytesMax, recordsMin, recordsMax } = this.limits;
    if (this.msPerByte === null || this.msPerRecord === null) return this.last;
    const fit = (msPerUnit: number) => (msPerUnit > 0 ? sliceMsMax / msPerUnit : Infinity);
    const bound = (fits: number, last: number, min: number, max: number) =>
      Math.max(Math.floor(Math.min(Math.max(Math.min(fits, last * GROWTH_MAX), min), max)), 1);
    this.last = {
      bytesMax: bound(fit(this.msPerByte), this.last.bytesMax, bytesMin, bytesMax),
      recordsMax: bound(fit(this.msPerRecord), this.last.recordsMax, recordsMin, recordsMax),
    };
    return this.last;
  }

  /** A slice of `records` offsets and `bytes` bytes was applied in `ms`. */
  applied(records: number, bytes: number, ms: number): void {
    if (records <= 0 || bytes <= 0) return;
    const weigh = (estimate: number | null, now: number) =>
      estimate === null ? now : estimate * (1 - LAST_WEIGHT) + now * LAST_WEIGHT;
    this.msPerByte = weigh(this.msPerByte, ms / bytes);
    this.msPerRecord = weigh(this.msPerRecord, ms / records);
  }
}
