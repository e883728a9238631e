// Proves the partitioner is FNV-1a-32 over `collection \0 key` (published FNV vectors and fixed
// placements): a change here would move existing keys, so these numbers must never change.
import { describe, expect, it } from 'vitest';
import { fnv1a32, partitionFor, partitionHash } from '../../shared/partitioner.js';

const utf8 = new TextEncoder();

describe('partitioner', () => {
  it('matches the published FNV-1a 32-bit vectors', () => {
    expect(fnv1a32(utf8.encode(''))).toBe(0x811c9dc5);
    expect(fnv1a32(utf8.encode('a'))).toBe(0xe40c292c);
    expect(fnv1a32(utf8.encode('foobar'))).toBe(0xbf9cf968);
  });

  it('places fixed keys where they have always been', () => {
    const vectors: [string, string, number, number, number, number][] = [
      // collection, key, hash, mod 8, mod 16, mod 3
      ['users', 'alice', 3234913875, 3, 3, 0],
      ['users', 'bob', 1026059240, 0, 8, 2],
      ['orders', '0001', 3188359191, 7, 7, 0],
      ['docs', 'ключ', 3894190986, 2, 10, 0],
      ['docs', '🙂', 3133971192, 0, 8, 0],
    ];
    for (const [collection, key, hash, p8, p16, p3] of vectors) {
      expect(partitionHash(collection, key)).toBe(hash);
      expect(partitionFor(collection, key, 8)).toBe(p8);
      expect(partitionFor(collection, key, 16)).toBe(p16);
      expect(partitionFor(collection, key, 3)).toBe(p3);
    }
  });

  it('keeps the collection/key boundary: ("a","bc") and ("ab","c") differ', () => {
    expect(partitionHash('a', 'bc')).toBe(1620527011);
    expect(partitionHash('ab', 'c')).toBe(4018473767);
  });

  it('spreads keys over partitions roughly evenly', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[partitionFor('items', `key-${i}`, 8)]++;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it('refuses a partition count below 1', () => {
    expect(() => partitionFor('a', 'b', 0)).toThrow();
  });
});
