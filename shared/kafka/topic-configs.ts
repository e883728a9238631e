/**
 * Topic configs as Kafka names and writes them (strings named cleanup.policy, retention.ms, ...)
 * to and from TopicConfigs, for CreateTopics and DescribeConfigs, on the listener's side and the
 * client's (shared/kafka-log).
 */
import { TOPIC_CONFIG_NAMES, type TopicConfigs } from '../topics.js';

const FIELD_BY_NAME = new Map(
  Object.entries(TOPIC_CONFIG_NAMES).map(([field, name]) => [name, field as keyof TopicConfigs]),
);

/** Kafka's DescribeConfigs config types. */
const CONFIG_TYPE = { INT: 3, LONG: 5, LIST: 7 } as const;

export const CONFIG_TYPES: Readonly<Record<keyof TopicConfigs, number>> = {
  cleanupPolicy: CONFIG_TYPE.LIST,
  retentionMs: CONFIG_TYPE.LONG,
  retentionBytes: CONFIG_TYPE.LONG,
  deleteRetentionMs: CONFIG_TYPE.LONG,
  maxMessageBytes: CONFIG_TYPE.INT,
};

export function topicConfigField(name: string): keyof TopicConfigs | undefined {
  return FIELD_BY_NAME.get(name);
}

/**
 * Kafka config strings as TopicConfigs changes, or the first one that is not a config of a
 * tailbase topic or not a value it can take (ranges are the log's to check).
 */
export function parseTopicConfigs(
  configs: readonly { name: string; value: string | null }[],
): { ok: true; configs: Partial<TopicConfigs> } | { ok: false; message: string } {
  const parsed: Partial<TopicConfigs> = {};
  for (const { name, value } of configs) {
    const field = topicConfigField(name);
    if (field === undefined) {
      return {
        ok: false,
        message: `${name} is not a topic config of tailbase (${[...FIELD_BY_NAME.keys()].join(', ')})`,
      };
    }
    if (value === null) continue;
    if (field === 'cleanupPolicy') {
      if (value !== 'compact' && value !== 'delete') {
        return { ok: false, message: `cleanup.policy is compact or delete, not ${value}` };
      }
      parsed.cleanupPolicy = value;
      continue;
    }
    if (!/^-?\d{1,16}$/.test(value)) {
      return { ok: false, message: `${name} is an integer, not ${value.slice(0, 40)}` };
    }
    parsed[field] = Number(value);
  }
  return { ok: true, configs: parsed };
}

export function configValue(configs: TopicConfigs, field: keyof TopicConfigs): string {
  return String(configs[field]);
}

/** Kafka's config sources: set on the topic, or the default. */
const CONFIG_SOURCE = { TOPIC_CONFIG: 1, DEFAULT_CONFIG: 5 } as const;

export function configSource(
  configs: TopicConfigs,
  defaults: TopicConfigs,
  field: keyof TopicConfigs,
): number {
  return configs[field] === defaults[field]
    ? CONFIG_SOURCE.DEFAULT_CONFIG
    : CONFIG_SOURCE.TOPIC_CONFIG;
}
