/**
 * A topic's configs: defaults from the node's flags, and the checks a change must pass (a bad
 * config is a 400 `invalid_topic_config` and changes nothing). Internal topics are always
 * compacted: their keys are what they hold.
 */
import { badRequest } from '../shared/errors.js';
import { isInternalTopic, TOPIC_CONFIG_NAMES, type TopicConfigs } from '../shared/topics.js';
import type { LogNodeConfig } from './config.js';

export function defaultTopicConfigs(config: LogNodeConfig, topic: string): TopicConfigs {
  return {
    cleanupPolicy: isInternalTopic(topic) ? 'compact' : config.cleanupPolicy,
    retentionMs: config.retentionMs,
    retentionBytes: config.retentionBytes,
    deleteRetentionMs: config.deleteRetentionMs,
    maxMessageBytes: config.batchBytesMax,
  };
}

/** The lowest value of each numeric config: −1 is unbounded retention, as in Kafka. */
const NUMERIC_MIN: Readonly<Record<Exclude<keyof TopicConfigs, 'cleanupPolicy'>, number>> = {
  retentionMs: -1,
  retentionBytes: -1,
  deleteRetentionMs: 0,
  maxMessageBytes: 1,
};

/** `changes` checked field by field; maxMessageBytes may not pass the node's batchBytesMax. */
export function checkTopicConfigs(
  topic: string,
  changes: unknown,
  config: LogNodeConfig,
): Partial<TopicConfigs> {
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
    throw badRequest('invalid_topic_config', 'topic configs must be an object');
  }
  const checked: Partial<TopicConfigs> = {};
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    const invalid = (why: string) =>
      badRequest('invalid_topic_config', `${name} of topic ${topic} ${why}`, {
        topic,
        config: name,
      });
    if (name === 'cleanupPolicy') {
      if (value !== 'compact' && value !== 'delete') throw invalid("must be 'compact' or 'delete'");
      if (isInternalTopic(topic) && value !== 'compact') throw invalid('is always compact');
      checked.cleanupPolicy = value;
      continue;
    }
    if (!(name in NUMERIC_MIN)) {
      throw invalid(`is not a topic config (${Object.keys(TOPIC_CONFIG_NAMES).join(', ')})`);
    }
    const key = name as keyof typeof NUMERIC_MIN;
    const max = key === 'maxMessageBytes' ? config.batchBytesMax : Number.MAX_SAFE_INTEGER;
    if (
      !Number.isSafeInteger(value) ||
      (value as number) < NUMERIC_MIN[key] ||
      (value as number) > max
    ) {
      throw invalid(`must be an integer from ${NUMERIC_MIN[key]} to ${max}`);
    }
    checked[key] = value as number;
  }
  return checked;
}
