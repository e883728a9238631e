// Proves the partitioner is Kafka's default partitioner for keyed records: murmur2 vectors from
// Apache Kafka's own tests (UtilsTest.testMurmur2), and agreement with a real Kafka client's
// partitioner (kafkajs's DefaultPartitioner, through its public API) on random keys. A change
// here would move existing keys, so these numbers must never change.
import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { murmur2, partitionFor } from '../../shared/partitioner.js';

const utf8 = new TextEncoder();

/** kafkajs's choice for a keyed message on a topic of `partitions` partitions. */
function kafkajsPartition(key: string, partitions: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  return partitioner({
    topic: 'books',
    partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({
      partitionErrorCode: 0,
      partitionId,
      leader: 1,
      replicas: [1],
      isr: [1],
    })),
    message: { key, value: null },
  });
}

describe('partitioner', () => {
  it("matches the murmur2 vectors of Apache Kafka's UtilsTest", () => {
    const vectors: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of vectors) expect(murmur2(utf8.encode(key))).toBe(hash);
  });

  it('places keys where kafkajs places them, for any key and partition count', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 64 }),
        fc.integer({ min: 1, max: 64 }),
        (key, partitions) => {
          expect(partitionFor(key, partitions)).toBe(kafkajsPartition(key, partitions));
        },
      ),
      { numRuns: 2000 },
    );
    // Keys around the length whose UTF-8 might not fit the encoding scratch, and lone halves.
    const long = ['a', 'é', '🙂', '\uD800'].flatMap((unit) =>
      [1364, 1365, 1366, 2048, 4096].map((n) => unit.repeat(Math.ceil(n / unit.length))),
    );
    for (const key of ['alice', 'ключ', '🙂', 'a\uDC00b', 'a'.repeat(1024), ...long]) {
      expect(partitionFor(key, 8)).toBe(kafkajsPartition(key, 8));
    }
  });

  it('spreads keys over partitions roughly evenly', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[partitionFor(`key-${i}`, 8)]++;
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  it('refuses a partition count below 1', () => {
    expect(() => partitionFor('b', 0)).toThrow();
  });
});
