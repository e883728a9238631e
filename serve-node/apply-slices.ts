/**
 * Cuts a log read answer into slices, each applied as its own transactions with the event loop
 * let run between them. Applied whole, one answer (4 MiB a partition) of a bulk load of large
 * texts held the serve thread 1.6 to 3.5 s: the timers of waiting reads (their 504) and the reads
 * themselves waited that long. A slice holds at most `recordsMax` offsets and about `bytesMax`
 * bytes (a batch's bytes spread evenly over its offsets), over every topic-partition it holds; a
 * slice may cut a batch, whose records then go in two transactions, each with its checkpoint.
 * The cut is made one slice at a time, so each slice's bounds can follow what the last ones cost
 * (apply-slice-budget.ts).
 */
import { readBatchHeader } from '../shared/batch-codec.js';
import type { ApplyPart } from './replica.js';

export interface SliceBounds {
  recordsMax: number;
  bytesMax: number;
}

/** One slice: its pieces, and the offsets and bytes it was measured by. */
export interface Slice {
  parts: ApplyPart[];
  records: number;
  bytes: number;
}

/** Slices of `parts` in order, each cut when asked for; a topic-partition's keep offset order. */
export class SliceCutter {
  private partIndex = 0;
  /** Byte position, in the current part, of the batch holding `cursor`. */
  private at = 0;
  /** The next offset of the current part to take. */
  private cursor: number;

  constructor(private readonly parts: readonly ApplyPart[]) {
    this.cursor = parts[0]?.fromOffset ?? 0;
  }

  /** The next slice within `bounds` (one offset at least), or null once every part is cut. */
  next(bounds: SliceBounds): Slice | null {
    const slice: Slice = { parts: [], records: 0, bytes: 0 };
    const full = () => slice.records >= bounds.recordsMax || slice.bytes >= bounds.bytesMax;
    while (this.partIndex < this.parts.length) {
      const part = this.parts[this.partIndex];
      const from = this.cursor;
      const startByte = this.at;
      for (;;) {
        const header = readBatchHeader(part.batches, this.at);
        if (header === null || this.at + header.sizeBytes > part.batches.length) break;
        const end = header.baseOffset + header.lastOffsetDelta + 1;
        this.cursor = Math.max(this.cursor, header.baseOffset);
        if (this.cursor < end) {
          if (full()) {
            if (this.cursor > from) {
              slice.parts.push({
                ...part,
                fromOffset: from,
                untilOffset: this.cursor,
                // The batch holding `cursor` ends this piece and begins the next.
                batches: part.batches.subarray(startByte, this.at + header.sizeBytes),
              });
            }
            return slice;
          }
          const offsetBytes = header.sizeBytes / (header.lastOffsetDelta + 1);
          const taken = Math.min(
            end - this.cursor,
            bounds.recordsMax - slice.records,
            Math.max(Math.ceil((bounds.bytesMax - slice.bytes) / offsetBytes), 1),
          );
          this.cursor += taken;
          slice.records += taken;
          slice.bytes += taken * offsetBytes;
          if (this.cursor < end) continue;
        }
        this.at += header.sizeBytes;
      }
      slice.parts.push({ ...part, fromOffset: from, batches: part.batches.subarray(startByte) });
      this.partIndex += 1;
      this.at = 0;
      this.cursor = this.parts[this.partIndex]?.fromOffset ?? 0;
    }
    return slice.parts.length > 0 ? slice : null;
  }
}

/** Every slice of `parts` within the same bounds, in order. */
export function applySlices(parts: readonly ApplyPart[], bounds: SliceBounds): ApplyPart[][] {
  const cutter = new SliceCutter(parts);
  const slices: ApplyPart[][] = [];
  for (let slice = cutter.next(bounds); slice !== null; slice = cutter.next(bounds)) {
    slices.push(slice.parts);
  }
  return slices;
}
