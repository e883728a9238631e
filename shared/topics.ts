/**
 * Collections are topics. Every collection is one topic of the log, with the cluster's partition
 * count, so serve-nodes co-partition: a node hosting partitions {0,3} hosts them for every
 * collection. Beside the collections live internal topics, named with a leading `__` no
 * collection can have. On the wire a gateway or serve-node may put a topic prefix before every
 * name (`--topic-prefix`, a log shared by several tailbases): a log-node, which is not told the
 * prefix, knows a prefixed internal topic by its name's end, which no collection may have.
 */

/** Collection names: a lowercase letter, then up to 63 of [a-z0-9_-] (checked in collection-name.ts). */
export const COLLECTION_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * Collection settings, one compacted partition every serve-node tails whatever it hosts: key =
 * the collection, value = its settings JSON (shared/collection-settings.ts), null = defaults.
 */
export const SETTINGS_TOPIC = '__tailbase_settings';
/**
 * View definitions, one compacted partition every view processor tails: key = the view, value =
 * its definition JSON (shared/view-definition.ts), null = dropped.
 */
export const VIEWS_TOPIC = '__tailbase_views';
/** Consumer groups' committed offsets, as Kafka keeps them: compacted, in the log itself. */
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
export const INTERNAL_TOPICS: readonly string[] = [
  SETTINGS_TOPIC,
  VIEWS_TOPIC,
  CONSUMER_OFFSETS_TOPIC,
];
/** Internal topics have one partition each: they are small, and every node reads all of them. */
export const INTERNAL_TOPIC_PARTITIONS = 1;

export type CleanupPolicy = 'compact' | 'delete';

/**
 * A topic's configs, named as Kafka names them (cleanup.policy, retention.ms, retention.bytes,
 * delete.retention.ms, max.message.bytes). −1 retention is unbounded, as in Kafka.
 */
export interface TopicConfigs {
  cleanupPolicy: CleanupPolicy;
  retentionMs: number;
  retentionBytes: number;
  deleteRetentionMs: number;
  /** The largest batch a producer may append to this topic (Kafka's max.message.bytes). */
  maxMessageBytes: number;
}

/** Kafka's config names of TopicConfigs' fields, for DescribeConfigs and CreateTopics. */
export const TOPIC_CONFIG_NAMES: Readonly<Record<keyof TopicConfigs, string>> = {
  cleanupPolicy: 'cleanup.policy',
  retentionMs: 'retention.ms',
  retentionBytes: 'retention.bytes',
  deleteRetentionMs: 'delete.retention.ms',
  maxMessageBytes: 'max.message.bytes',
};

export interface TopicInfo {
  name: string;
  partitions: number;
  configs: TopicConfigs;
  /**
   * How many times a topic of this name was dropped before this one was created (absent: 0).
   * Tokens name a collection by its name and incarnation, so a dropped collection's tokens are
   * told apart from those of a new collection of the same name.
   */
  incarnation?: number;
}

/** The characters Kafka allows in a topic name, and so in a topic prefix. */
export const TOPIC_PREFIX_PATTERN = /^[a-zA-Z0-9._-]*$/;

/** The internal topic a name is, after any topic prefix; null for any other topic. */
export function internalTopicOf(topic: string): string | null {
  for (const internal of INTERNAL_TOPICS) {
    if (topic.endsWith(internal) && TOPIC_PREFIX_PATTERN.test(topic.slice(0, -internal.length))) {
      return internal;
    }
  }
  return null;
}

export function isInternalTopic(topic: string): boolean {
  return internalTopicOf(topic) !== null;
}

/** The settings topic, prefixed or not: a tailbase gateway writes it. */
export function isSettingsTopic(topic: string): boolean {
  return internalTopicOf(topic) === SETTINGS_TOPIC;
}

/** The topics a tailbase gateway writes with the admin scope: settings and view definitions. */
export function isGatewayTopic(topic: string): boolean {
  const internal = internalTopicOf(topic);
  return internal === SETTINGS_TOPIC || internal === VIEWS_TOPIC;
}

/** A topic that holds a collection's documents: a collection name. */
export function isCollectionTopic(topic: string): boolean {
  return COLLECTION_PATTERN.test(topic) && !isInternalTopic(topic);
}

/** The topics a log-node stores: collections and its internal topics, nothing else. */
export function isKnownTopicName(topic: string): boolean {
  return isCollectionTopic(topic) || isInternalTopic(topic);
}
