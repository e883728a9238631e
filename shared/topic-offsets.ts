/**
 * One topic's partitions out of the log's `offsets()`, which leaves out a partition without a
 * leader or whose log failed. Such a partition is not an empty one: read as empty, a strong read
 * would skip acknowledged writes, a settings reader would forget the settings, a view would not
 * wait for what it appended. A topic the log does not hold at all is empty (nothing written yet).
 */
import { unavailable, type TailbaseError } from './errors.js';
import type { LogClient, PartitionOffsets } from './log-api.js';

/** 503 partition_unavailable naming `partitions` of `topic`. */
export function partitionsUnavailable(topic: string, partitions: readonly number[]): TailbaseError {
  return unavailable(
    'partition_unavailable',
    `${topic} partition ${partitions.join(', ')} has no leader or its log failed`,
    { topic, partitions: [...partitions] },
  );
}

/**
 * `partitions` of `topic` by partition, from one `offsets()` (`listing`, when the caller shares
 * one); throws partitionsUnavailable for those the log left out, unless the log holds no such
 * topic (then an empty map).
 */
export async function topicOffsets(
  log: LogClient,
  topic: string,
  partitions: readonly number[],
  listing?: Promise<readonly PartitionOffsets[]>,
): Promise<Map<number, PartitionOffsets>> {
  const found = new Map<number, PartitionOffsets>();
  for (const o of await (listing ?? log.offsets()))
    if (o.topic === topic) found.set(o.partition, o);
  const missing = partitions.filter((p) => !found.has(p));
  if (missing.length === 0) return found;
  if (found.size === 0 && !(await log.topics()).some((t) => t.name === topic)) return found;
  throw partitionsUnavailable(topic, missing);
}
