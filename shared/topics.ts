/**
 * Collections are topics. Every collection is one topic of the log (named as the collection: the
 * topic prefix for shared Kafka clusters is not built yet), with the cluster's partition count, so
 * serve-nodes co-partition: a node hosting partitions {0,3} hosts them for every collection.
 * Beside the collections live internal topics, named with a leading `__` no collection can have.
 */
import { COLLECTION_PATTERN } from './collection-name.js';

/**
 * Collection settings, one compacted partition every serve-node tails whatever it hosts: key =
 * the collection, value = its settings JSON (shared/collection-settings.ts), null = defaults.
 */
export const SETTINGS_TOPIC = '__tailbase_settings';
/** Consumer groups' committed offsets, as Kafka keeps them: compacted, in the log itself. */
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
export const INTERNAL_TOPICS: readonly string[] = [SETTINGS_TOPIC, CONSUMER_OFFSETS_TOPIC];
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

export function isInternalTopic(topic: string): boolean {
  return INTERNAL_TOPICS.includes(topic);
}

/** A topic that holds a collection's documents: a collection name. */
export function isCollectionTopic(topic: string): boolean {
  return COLLECTION_PATTERN.test(topic);
}

/** The topics a log-node stores: collections and its internal topics, nothing else. */
export function isKnownTopicName(topic: string): boolean {
  return isCollectionTopic(topic) || isInternalTopic(topic);
}
