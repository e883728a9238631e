/** What the listener's own API handlers are built from. */
import type { LogClient } from '../../shared/log-api.js';
import type { Logger } from '../../shared/logger.js';
import type { TopicConfigs } from '../../shared/topics.js';
import type { KafkaListenerConfig } from './config.js';
import type { KafkaPeers } from './peers.js';

export interface HandlerDeps {
  log: LogClient;
  /** KafkaListenerOptions.logCreatingNothing. */
  logCreatingNothing: LogClient;
  config: KafkaListenerConfig;
  /** The other log-nodes when this one stores some of the partitions only; else null. */
  peers: KafkaPeers | null;
  topicConfigDefaults: (topic: string) => TopicConfigs;
  /** Where the node's segment files are (DescribeLogDirs' one log directory); null: unsaid. */
  logDir: string | null;
  logger: Logger;
}

/** An int32 or int64 field (int64 decodes as bigint) clamped into [min, max]. */
export function clamp(value: number | bigint, min: number, max: number): number {
  const number = Number(value);
  return Math.min(max, Math.max(min, number));
}

/** Items grouped by topic, first-seen order kept, as Kafka's responses nest them. */
export function byTopic<T>(items: readonly { topic: string; item: T }[]): Map<string, T[]> {
  const grouped = new Map<string, T[]>();
  for (const { topic, item } of items) {
    const list = grouped.get(topic);
    if (list) list.push(item);
    else grouped.set(topic, [item]);
  }
  return grouped;
}
