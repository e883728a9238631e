// Proves the log-node's tail cache answers like a file read: whole batches from the one holding
// the offset, at least one, within maxBytes, and nothing (null) for what it no longer keeps.
import { describe, expect, it } from 'vitest';
import { TailCache } from '../../log-node/tail-cache.js';

const batch = (baseOffset: number, records: number, bytes: number) => ({
  baseOffset,
  lastOffset: baseOffset + records - 1,
  bytes: Buffer.alloc(bytes, baseOffset % 251),
});

describe('tail cache', () => {
  it('answers from the batch holding the offset, whole batches up to maxBytes, at least one', () => {
    const cache = new TailCache(1_000);
    const batches = [batch(10, 5, 100), batch(15, 1, 100), batch(16, 4, 100)];
    cache.add(batches);
    expect(cache.read(12, 1_000)).toEqual(Buffer.concat(batches.map((b) => b.bytes)));
    expect(cache.read(15, 150)).toEqual(batches[1].bytes);
    expect(cache.read(19, 1)).toEqual(batches[2].bytes);
    expect(cache.read(20, 1_000)).toBeNull();
    expect(cache.read(9, 1_000)).toBeNull();
  });

  it('drops the oldest batches past its bound, and keeps none at 0', () => {
    const cache = new TailCache(250);
    cache.add([batch(0, 1, 100), batch(1, 1, 100)]);
    cache.add([batch(2, 1, 100)]);
    expect(cache.read(0, 1_000)).toBeNull();
    expect(cache.read(1, 1_000)?.length).toBe(200);
    const none = new TailCache(0);
    none.add([batch(0, 1, 10)]);
    expect(none.read(0, 1_000)).toBeNull();
  });

  it('forgets what a compaction rewrote, so reads go to the compacted file', () => {
    const cache = new TailCache(1_000);
    cache.add([batch(0, 5, 10), batch(5, 5, 10), batch(10, 5, 10)]);
    cache.dropThrough(7);
    expect(cache.read(7, 1_000)).toBeNull();
    expect(cache.read(10, 1_000)?.length).toBe(10);
    cache.add([batch(15, 1, 10)]);
    expect(cache.read(10, 1_000)?.length).toBe(20);
  });

  it('refuses batches out of order', () => {
    const cache = new TailCache(1_000);
    cache.add([batch(5, 2, 10)]);
    expect(() => cache.add([batch(6, 1, 10)])).toThrow();
  });
});
