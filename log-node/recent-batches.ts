/**
 * The newest durable batches of a partition, kept in memory up to a byte bound, so that readers
 * at the tail (every serve-node, every change feed) are answered without a file lookup and read:
 * under write load those tail reads were the log-node's main cost (profiled). The partition asks
 * it only for offsets of the active segment, which compaction never rewrites, and the log is never
 * truncated while it runs, so a cached batch is exactly what the file holds.
 */
export interface CachedBatch {
  baseOffset: number;
  lastOffset: number;
  bytes: Buffer;
}

export class RecentBatches {
  /** Slots before `head` are evicted and emptied, so their bytes can be collected at once. */
  private readonly batches: (CachedBatch | null)[] = [];
  private head = 0;
  private cachedBytes = 0;
  private readonly bytesMax: number;

  constructor(bytesMax: number) {
    this.bytesMax = bytesMax;
  }

  /** Adds batches that just became durable, in offset order; evicts the oldest past the bound. */
  add(batches: readonly CachedBatch[]): void {
    for (const batch of batches) {
      this.batches.push(batch);
      this.cachedBytes += batch.bytes.length;
    }
    while (this.cachedBytes > this.bytesMax && this.head < this.batches.length) {
      this.cachedBytes -= this.at(this.head).bytes.length;
      this.batches[this.head] = null;
      this.head++;
    }
    // Compact the array now and then rather than shifting it on every eviction.
    if (this.head > 1024 && this.head * 2 > this.batches.length) {
      this.batches.splice(0, this.head);
      this.head = 0;
    }
  }

  private at(index: number): CachedBatch {
    return this.batches[index] as CachedBatch;
  }

  /**
   * Whole batches from the one holding `offset` (or the next one after it), at least one and then
   * as many as fit maxBytes; null when the cache does not reach back to `offset`.
   */
  read(offset: number, maxBytes: number): Buffer | null {
    if (this.head >= this.batches.length || this.at(this.head).baseOffset > offset) {
      return null;
    }
    let low = this.head;
    let high = this.batches.length - 1;
    let first = this.batches.length;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.at(mid).lastOffset >= offset) {
        first = mid;
        high = mid - 1;
      } else {
        low = mid + 1;
      }
    }
    const parts: Buffer[] = [];
    let bytes = 0;
    for (let i = first; i < this.batches.length; i++) {
      const batch = this.at(i).bytes;
      if (parts.length > 0 && bytes + batch.length > maxBytes) break;
      parts.push(batch);
      bytes += batch.length;
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts, bytes);
  }
}
