/**
 * The newest durable batches of one partition, kept in memory up to a byte bound, so a tailer at
 * the end of the log (a serve-node, a change feed: nearly every read) is answered without a file
 * read. Those reads went through libuv's thread pool behind the partitions' fsyncs, which put
 * milliseconds between an append's ack and a tailer seeing it. Batches are the stored bytes, as
 * a file read would return them.
 */
import { assert } from '../shared/assert.js';

interface CachedBatch {
  baseOffset: number;
  lastOffset: number;
  bytes: Buffer;
}

export class TailCache {
  private batches: CachedBatch[] = [];
  private bytes = 0;

  constructor(private readonly bytesMax: number) {}

  /** Batches just made durable, in offset order after everything already kept. */
  add(batches: readonly CachedBatch[]): void {
    if (this.bytesMax === 0) return;
    for (const batch of batches) {
      const last = this.batches.at(-1);
      assert(last === undefined || batch.baseOffset > last.lastOffset, 'the tail grows in order');
      this.batches.push(batch);
      this.bytes += batch.bytes.length;
    }
    let drop = 0;
    while (this.bytes > this.bytesMax && drop < this.batches.length) {
      this.bytes -= this.batches[drop].bytes.length;
      drop += 1;
    }
    if (drop > 0) this.batches = this.batches.slice(drop);
  }

  /** Forgets every batch holding an offset at or below `offset` (a compacted segment's). */
  dropThrough(offset: number): void {
    const keep = this.batches.findIndex((batch) => batch.baseOffset > offset);
    const dropped = keep === -1 ? this.batches : this.batches.slice(0, keep);
    for (const batch of dropped) this.bytes -= batch.bytes.length;
    this.batches = keep === -1 ? [] : this.batches.slice(keep);
  }

  /**
   * Whole batches from the one holding `offset`, up to maxBytes (at least one); null when the
   * batch holding `offset` is older than what is kept (the caller reads the file).
   */
  read(offset: number, maxBytes: number): Buffer | null {
    const batches = this.batches;
    if (batches.length === 0 || offset < batches[0].baseOffset) return null;
    let low = 0;
    let high = batches.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (batches[mid].lastOffset < offset) low = mid + 1;
      else high = mid;
    }
    if (low === batches.length) return null;
    const taken: Buffer[] = [batches[low].bytes];
    let size = batches[low].bytes.length;
    for (let i = low + 1; i < batches.length; i++) {
      if (size + batches[i].bytes.length > maxBytes) break;
      taken.push(batches[i].bytes);
      size += batches[i].bytes.length;
    }
    return taken.length === 1 ? taken[0] : Buffer.concat(taken, size);
  }
}
