/**
 * The partitioner: which partition of the log a (collection, key) lives in. A cluster's records
 * are placed by it forever, so the function below must never change for an existing cluster.
 *
 *   partition = FNV-1a-32( UTF-8(collection) ‖ 0x00 ‖ UTF-8(key) ) mod partitions
 *
 * FNV-1a 32-bit: offset basis 0x811c9dc5, prime 0x01000193, for each byte `h = (h ^ b) * prime`
 * modulo 2^32 (http://www.isthe.com/chongo/tech/comp/fnv/). The 0x00 separator keeps
 * ("ab", "c") and ("a", "bc") apart: a collection name never holds a NUL byte.
 */
import { assert } from './assert.js';

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/** FNV-1a over bytes, as an unsigned 32-bit integer. */
export function fnv1a32(bytes: Uint8Array): number {
  let hash = FNV_OFFSET_BASIS;
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i];
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

export function partitionHash(collection: string, key: string): number {
  return fnv1a32(utf8.encode(`${collection}\0${key}`));
}

export function partitionFor(collection: string, key: string, partitions: number): number {
  assert(Number.isInteger(partitions) && partitions >= 1, 'partitions is a positive integer');
  return partitionHash(collection, key) % partitions;
}
