/**
 * The partitioner: which partition of a collection's topic a key lives in. It is Kafka's default
 * partitioner for keyed records, so a record any Kafka client produces with a key lands where
 * tailbase reads and writes that key:
 *
 *   partition = (murmur2(UTF-8(key)) & 0x7fffffff) mod partitions
 *
 * murmur2 is Kafka's 32-bit variant (org.apache.kafka.common.utils.Utils.murmur2): seed
 * 0x9747b28c, m = 0x5bd1e995, r = 24, the key's bytes read as little-endian 32-bit words. A
 * cluster's records are placed by it forever: it must never change.
 */
import { assert } from './assert.js';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

const utf8 = new TextEncoder();

/**
 * Kafka's murmur2 of bytes[start, end) (all of them by default), as a signed 32-bit integer (as
 * Java returns it).
 */
export function murmur2(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const length = end - start;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = start; i < start + whole; i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // The tail of 1-3 bytes, as Java's switch with fall-through folds it in.
  const tail = length & 3;
  if (tail === 3) h ^= bytes[start + whole + 2] << 16;
  if (tail >= 2) h ^= bytes[start + whole + 1] << 8;
  if (tail >= 1) {
    h ^= bytes[start + whole];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * Keys are encoded into this to be hashed: a fresh array each key was an allocation on every key
 * read and write of the HTTP thread (issue 28). Keys are hashed synchronously, so one is enough.
 */
const keyScratch = new Uint8Array(4096);

export function partitionFor(key: string, partitions: number): number {
  // A UTF-16 code unit is at most 3 bytes of UTF-8: a key that might not fit is encoded apart.
  if (key.length * 3 > keyScratch.length) return partitionOfKeyBytes(utf8.encode(key), partitions);
  const { written } = utf8.encodeInto(key, keyScratch);
  return partitionOfKeyAt(keyScratch, 0, written, partitions);
}

/** partitionFor of a key already in bytes, as a Kafka record carries it. */
export function partitionOfKeyBytes(key: Uint8Array, partitions: number): number {
  return partitionOfKeyAt(key, 0, key.length, partitions);
}

/** partitionOfKeyBytes of the key at bytes[start, end), read in place (a record in its batch). */
export function partitionOfKeyAt(
  bytes: Uint8Array,
  start: number,
  end: number,
  partitions: number,
): number {
  assert(Number.isInteger(partitions) && partitions >= 1, 'partitions is a positive integer');
  return (murmur2(bytes, start, end) & 0x7fffffff) % partitions;
}
