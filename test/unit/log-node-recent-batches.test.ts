// Proves the tail cache answers exactly what the segment files would: whole batches from the one
// holding the offset, at least one, within maxBytes, and null once the offset has been evicted.
import { describe, expect, it } from 'vitest';
import { RecentBatches } from '../../log-node/recent-batches.js';

const batch = (baseOffset: number, records: number, size: number) => ({
  baseOffset,
  lastOffset: baseOffset + records - 1,
  bytes: Buffer.alloc(size, baseOffset % 251),
});

describe('RecentBatches', () => {
  it('answers from the batch holding the offset, whole batches within maxBytes', () => {
    const cache = new RecentBatches(1000);
    const batches = [batch(10, 5, 100), batch(15, 1, 100), batch(16, 4, 100)];
    cache.add(batches);
    expect(cache.read(12, 150)).toEqual(batches[0].bytes);
    expect(cache.read(12, 200)).toEqual(Buffer.concat([batches[0].bytes, batches[1].bytes]));
    expect(cache.read(15, 1)).toEqual(batches[1].bytes);
    expect(cache.read(19, 1000)).toEqual(batches[2].bytes);
    expect(cache.read(20, 1000)).toEqual(Buffer.alloc(0));
    expect(cache.read(9, 1000)).toBeNull();
  });

  it('evicts the oldest past its byte bound and then sends readers to the files', () => {
    const cache = new RecentBatches(250);
    for (let i = 0; i < 2000; i++) cache.add([batch(i * 2, 2, 100)]);
    expect(cache.read(3995, 1000)).toBeNull();
    expect(cache.read(3996, 1000)).toEqual(
      Buffer.concat([batch(3996, 2, 100).bytes, batch(3998, 2, 100).bytes]),
    );
  });
});

// Proves eviction lets go of the bytes: what the cache still references stays within its bound.
describe('RecentBatches memory', () => {
  it('references no evicted batch', () => {
    const cache = new RecentBatches(1000);
    for (let i = 0; i < 500; i++) cache.add([batch(i, 1, 300)]);
    const held = (cache as unknown as { batches: ({ bytes: Buffer } | null)[] }).batches
      .filter((entry) => entry !== null)
      .reduce((sum, entry) => sum + entry!.bytes.length, 0);
    expect(held).toBeLessThanOrEqual(1000);
  });
});
