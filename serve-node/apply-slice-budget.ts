/**
 * How large the next apply slice may be, so that its transactions take about `sliceMsMax`: the
 * serve thread is held that long, not a fixed number of bytes. A slice's cost is a transaction's
 * (FTS5 writes a segment at each commit, and merges them level by level) plus its records':
 * bounded at 512 KiB, the corpus's ~5 KB documents were committed ~100 at a time, and 8 MiB
 * slices replayed it 1.3-1.8x faster; the same bytes of 770-byte documents cost several times
 * more. So the bounds follow what the last slices cost: the milliseconds a byte and a record took
 * (each charged the whole slice's time, so either estimate alone would overrun the bound less
 * than it says), the next slice the fewer bytes and records of the two that fit the bound. The
 * bounds never more than double from one slice to the next (a slice after cheap ones, tombstones
 * say, may cost more a byte), start small, and stay within `bytesMax` and `recordsMax`, the
 * memory a slice may decode.
 */
import type { SliceBounds } from './apply-slices.js';

export interface SliceBudgetLimits {
  sliceMsMax: number;
  bytesMax: number;
  recordsMax: number;
}

/** The first slice's bounds, before any cost is known: about 60 documents of 1 KB. */
const FIRST_BYTES = 64 * 1024;
const FIRST_RECORDS = 64;
/** The weight of the last slice in the running estimates. */
const LAST_WEIGHT = 0.5;
const GROWTH_MAX = 2;

export class SliceBudget {
  private msPerByte: number | null = null;
  private msPerRecord: number | null = null;
  private last: SliceBounds;

  constructor(private readonly limits: SliceBudgetLimits) {
    this.last = {
      bytesMax: Math.min(FIRST_BYTES, limits.bytesMax),
      recordsMax: Math.min(FIRST_RECORDS, limits.recordsMax),
    };
  }

  /** The bounds of the next slice. */
  bounds(): SliceBounds {
    const { sliceMsMax, bytesMax, recordsMax } = this.limits;
    if (this.msPerByte === null || this.msPerRecord === null) return this.last;
    const fit = (msPerUnit: number) => (msPerUnit > 0 ? sliceMsMax / msPerUnit : Infinity);
    const bound = (fits: number, last: number, max: number) =>
      Math.max(Math.floor(Math.min(fits, last * GROWTH_MAX, max)), 1);
    this.last = {
      bytesMax: bound(fit(this.msPerByte), this.last.bytesMax, bytesMax),
      recordsMax: bound(fit(this.msPerRecord), this.last.recordsMax, recordsMax),
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
