/**
 * The bounds of the group coordinator, named as Kafka names its broker settings where it has one
 * (group.min.session.timeout.ms, group.max.size, offset.metadata.max.bytes, ...). Each is enforced
 * with the error code a Kafka client expects for it.
 */
import { KEY_BYTES_MAX } from '../../shared/batch-codec.js';

export interface GroupLimits {
  /** JoinGroup's sessionTimeoutMs must lie in [min, max] (Kafka's group.{min,max}.session.timeout.ms). */
  sessionTimeoutMsMin: number;
  sessionTimeoutMsMax: number;
  /**
   * The longest a rebalance waits for known members to rejoin, whatever rebalanceTimeoutMs the
   * members asked for: a JoinGroup long-poll never outlives it (plus the initial delay).
   */
  rebalanceTimeoutMsMax: number;
  /**
   * How long the first rebalance of an empty group waits for more members before it completes,
   * extended by each newcomer up to the rebalance timeout (group.initial.rebalance.delay.ms).
   */
  initialRebalanceDelayMs: number;
  /** Members of one group, those still to rejoin after MEMBER_ID_REQUIRED included (group.max.size). */
  groupMembersMax: number;
  /** Groups with members at once; a JoinGroup that would start one more is refused. */
  groupsMax: number;
  /** A group id's UTF-8 bytes; see GROUP_ID_BYTES_CEILING for why it has a ceiling. */
  groupIdBytesMax: number;
  /** A committed offset's metadata string, in UTF-8 bytes (offset.metadata.max.bytes). */
  offsetMetadataBytesMax: number;
  /** The bytes one read asks for while the offset table is rebuilt from the log. */
  offsetsLoadReadBytes: number;
}

/**
 * A group id's bytes appear JSON-escaped in every offset record's key (group-offset-record.ts),
 * where one byte takes at most 6 (`\u0000`), beside a topic name and a partition number, and a key
 * is at most KEY_BYTES_MAX bytes: 128 bytes of group id always fit.
 */
export const GROUP_ID_BYTES_CEILING = Math.floor((KEY_BYTES_MAX - 256) / 6);

export const groupLimitsDefaults: GroupLimits = {
  sessionTimeoutMsMin: 6_000,
  sessionTimeoutMsMax: 1_800_000,
  rebalanceTimeoutMsMax: 1_800_000,
  initialRebalanceDelayMs: 3_000,
  groupMembersMax: 1_000,
  groupsMax: 10_000,
  groupIdBytesMax: GROUP_ID_BYTES_CEILING,
  offsetMetadataBytesMax: 4_096,
  offsetsLoadReadBytes: 1024 * 1024,
};

/** The defaults with `overrides` applied, checked so a misconfiguration fails at start. */
export function groupLimits(overrides: Partial<GroupLimits> = {}): GroupLimits {
  const limits = { ...groupLimitsDefaults, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new Error(`group limit ${name} must be a non-negative integer, not ${value}`);
    }
  }
  if (limits.sessionTimeoutMsMin > limits.sessionTimeoutMsMax) {
    throw new Error('group limit sessionTimeoutMsMin exceeds sessionTimeoutMsMax');
  }
  if (limits.groupIdBytesMax < 1 || limits.groupIdBytesMax > GROUP_ID_BYTES_CEILING) {
    throw new Error(`group limit groupIdBytesMax must be 1..${GROUP_ID_BYTES_CEILING}`);
  }
  if (limits.groupMembersMax < 1 || limits.groupsMax < 1 || limits.offsetsLoadReadBytes < 1) {
    throw new Error('group limits groupMembersMax, groupsMax and offsetsLoadReadBytes must be ≥ 1');
  }
  return limits;
}
