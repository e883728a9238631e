/** Document keys chosen by the partition Kafka's default partitioner (murmur2) puts them in. */
import { partitionFor } from '../../shared/partitioner.js';

/** The first `count` keys `prefix0`, `prefix1`, ... that lie in the partition. */
export function keysIn(
  partition: number,
  partitions: number,
  count = 1,
  prefix = 'key-',
): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    if (partitionFor(`${prefix}${i}`, partitions) === partition) keys.push(`${prefix}${i}`);
  }
  return keys;
}
