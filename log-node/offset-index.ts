/**
 * A segment's sparse offset index: fixed-width entries (offset relative to the segment's base,
 * byte position in the .log file), one every indexIntervalBytes. As in Kafka it carries no
 * checksum: it is validated when loaded and rebuilt from its segment when it does not hold up.
 */
import { assert } from '../shared/assert.js';

export const INDEX_ENTRY_BYTES = 8;

export class OffsetIndex {
  private relativeOffsets: number[] = [];
  private positions: number[] = [];

  get entries(): number {
    return this.positions.length;
  }

  append(relativeOffset: number, position: number): void {
    const last = this.positions.length - 1;
    assert(
      last < 0 || (relativeOffset > this.relativeOffsets[last] && position > this.positions[last]),
      'index entries increase',
    );
    this.relativeOffsets.push(relativeOffset);
    this.positions.push(position);
  }

  /** The byte position of the last indexed batch starting at or before relativeOffset (or 0). */
  lookup(relativeOffset: number): number {
    let low = 0;
    let high = this.relativeOffsets.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.relativeOffsets[mid] <= relativeOffset) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found < 0 ? 0 : this.positions[found];
  }

  /** Drops entries at or past a byte position (after a tail truncation). */
  truncateToPosition(position: number): void {
    while (this.positions.length > 0 && this.positions[this.positions.length - 1] >= position) {
      this.positions.pop();
      this.relativeOffsets.pop();
    }
  }

  encode(): Buffer {
    const buf = Buffer.allocUnsafe(this.positions.length * INDEX_ENTRY_BYTES);
    for (let i = 0; i < this.positions.length; i++) {
      buf.writeUInt32BE(this.relativeOffsets[i], i * INDEX_ENTRY_BYTES);
      buf.writeUInt32BE(this.positions[i], i * INDEX_ENTRY_BYTES + 4);
    }
    return buf;
  }

  /** Null when the bytes cannot be this segment's index: the caller rebuilds it. */
  static decode(bytes: Buffer, segmentBytes: number): OffsetIndex | null {
    if (bytes.length % INDEX_ENTRY_BYTES !== 0) return null;
    const index = new OffsetIndex();
    for (let at = 0; at < bytes.length; at += INDEX_ENTRY_BYTES) {
      const relativeOffset = bytes.readUInt32BE(at);
      const position = bytes.readUInt32BE(at + 4);
      const last = index.positions.length - 1;
      const increasing =
        last < 0 ||
        (relativeOffset > index.relativeOffsets[last] && position > index.positions[last]);
      if (!increasing || position >= segmentBytes) return null;
      index.relativeOffsets.push(relativeOffset);
      index.positions.push(position);
    }
    return index;
  }
}
