/**
 * The records of the internal topic `__consumer_offsets` (partition 0, compacted): one per
 * (group, topic, partition) commit. Kafka's own schema for this topic has binary keys, and the log
 * admits keys of UTF-8 only (1..KEY_BYTES_MAX bytes, as every producer's batch), so keys and
 * values here are JSON, which also makes the topic readable with any tool
 * (`kcat -C -t __consumer_offsets -K '\t'`):
 *
 *   key   {"group":"<group id>","topic":"<topic>","partition":<int>}
 *   value {"offset":<int64>,"leaderEpoch":<int32, −1 none>,"metadata":<string|null>,"commitTimestampMs":<int>}
 *         or null: the commit is gone (a tombstone; compaction then drops the key)
 *
 * The key's properties are always written in that order, so one partition's commits of one group
 * share one key and compaction keeps the latest. A record that is not in this form (none should
 * be: only the coordinator appends here) is skipped when the table is rebuilt.
 */
export interface OffsetKey {
  group: string;
  topic: string;
  partition: number;
}

export interface CommittedOffset {
  offset: number;
  leaderEpoch: number;
  metadata: string | null;
  commitTimestampMs: number;
}

export function encodeOffsetKey(key: OffsetKey): string {
  return JSON.stringify({ group: key.group, topic: key.topic, partition: key.partition });
}

export function encodeOffsetValue(value: CommittedOffset): Buffer {
  return Buffer.from(
    JSON.stringify({
      offset: value.offset,
      leaderEpoch: value.leaderEpoch,
      metadata: value.metadata,
      commitTimestampMs: value.commitTimestampMs,
    }),
  );
}

/** The key of a record read back, or null when it is not an offset commit's. */
export function decodeOffsetKey(bytes: Buffer | null): OffsetKey | null {
  const parsed = parseJson(bytes) as Partial<OffsetKey> | null;
  if (
    parsed === null ||
    typeof parsed.group !== 'string' ||
    typeof parsed.topic !== 'string' ||
    !Number.isSafeInteger(parsed.partition)
  ) {
    return null;
  }
  return { group: parsed.group, topic: parsed.topic, partition: parsed.partition! };
}

/** A value read back: the commit, null for a tombstone, undefined when it is not in this form. */
export function decodeOffsetValue(bytes: Buffer | null): CommittedOffset | null | undefined {
  if (bytes === null) return null;
  const parsed = parseJson(bytes) as Partial<CommittedOffset> | null;
  if (
    parsed === null ||
    !Number.isSafeInteger(parsed.offset) ||
    !Number.isSafeInteger(parsed.leaderEpoch) ||
    !(parsed.metadata === null || typeof parsed.metadata === 'string') ||
    !Number.isSafeInteger(parsed.commitTimestampMs)
  ) {
    return undefined;
  }
  return {
    offset: parsed.offset!,
    leaderEpoch: parsed.leaderEpoch!,
    metadata: parsed.metadata,
    commitTimestampMs: parsed.commitTimestampMs!,
  };
}

function parseJson(bytes: Buffer | null): unknown {
  if (bytes === null) return null;
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof parsed === 'object' ? parsed : null;
  } catch {
    return null;
  }
}
