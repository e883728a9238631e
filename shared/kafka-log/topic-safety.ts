/**
 * Whether a Kafka topic keeps invariant 1 (an acknowledged write is never lost: acks=all to a
 * topic with replication factor >= 3 and min.insync.replicas >= 2, no unclean leader election)
 * and co-partitioning (every collection topic has the same partition count). A topic that does
 * not is refused with the topic, the setting and its value named, never used quietly.
 */
import { TailbaseError } from '../errors.js';

export interface TopicSafetyRules {
  /** The least replication factor a topic may have (and the one tailbase creates). */
  replicationFactor: number;
  /** The least min.insync.replicas a topic may have (and the one tailbase creates). */
  minInsyncReplicas: number;
}

export const topicSafetyDefaults: TopicSafetyRules = { replicationFactor: 3, minInsyncReplicas: 2 };

export const MIN_INSYNC_REPLICAS = 'min.insync.replicas';
export const UNCLEAN_LEADER_ELECTION = 'unclean.leader.election.enable';
/** The topic configs asked of the cluster to check a topic. */
export const SAFETY_CONFIG_NAMES = [MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION];

/** What the cluster says of one topic; `configs` null where it cannot say (no DescribeConfigs). */
export interface TopicFacts {
  /** The topic's name on the wire (with the prefix): the name an operator fixes. */
  topic: string;
  /** The least replica count of its partitions (Metadata's replica nodes). */
  replicationFactor: number;
  configs: ReadonlyMap<string, string> | null;
}

/**
 * The first setting of the topic that breaks invariant 1, as an error, or null. A config the
 * cluster does not report is not held against it (Redpanda has no min.insync.replicas: its Raft
 * acknowledges acks=all writes on a majority of the replicas).
 */
export function unsafeTopic(facts: TopicFacts, rules: TopicSafetyRules): TailbaseError | null {
  if (facts.replicationFactor < rules.replicationFactor) {
    return topicMisconfigured(
      facts.topic,
      'replication.factor',
      String(facts.replicationFactor),
      `at least ${rules.replicationFactor}`,
    );
  }
  const minInsync = facts.configs?.get(MIN_INSYNC_REPLICAS);
  if (minInsync !== undefined && !(Number(minInsync) >= rules.minInsyncReplicas)) {
    return topicMisconfigured(
      facts.topic,
      MIN_INSYNC_REPLICAS,
      minInsync,
      `at least ${rules.minInsyncReplicas}`,
    );
  }
  const unclean = facts.configs?.get(UNCLEAN_LEADER_ELECTION);
  if (unclean !== undefined && unclean !== 'false') {
    return topicMisconfigured(facts.topic, UNCLEAN_LEADER_ELECTION, unclean, 'false');
  }
  return null;
}

/** A collection topic whose partition count is not the others': co-partitioning would break. */
export function unlikePartitions(topic: string, partitions: number, others: number): TailbaseError {
  return topicMisconfigured(topic, 'partitions', String(partitions), `${others}, as the others`);
}

export function topicMisconfigured(
  topic: string,
  setting: string,
  value: string,
  needed: string,
): TailbaseError {
  return new TailbaseError(
    502,
    'topic_misconfigured',
    `topic ${topic} has ${setting} ${value}; tailbase needs ${needed} (an acknowledged write must never be lost, and every collection co-partitioned)`,
    { topic, setting, value },
  );
}
