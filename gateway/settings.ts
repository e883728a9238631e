/**
 * A collection's settings as the gateway takes them. The search settings are checked by the
 * validator the serve-nodes use (shared/collection-settings.ts) and written as one record of the
 * settings topic (key = the collection). The settings that are topic configs (cleanupPolicy,
 * retentionMs, retentionBytes, deleteRetentionMs, maxMessageBytes: Kafka's cleanup.policy,
 * retention.ms, ...) go to the collection's topic, where the log checks and applies them.
 */
import { type CollectionSettings, validateSettings } from '../shared/collection-settings.js';
import { badRequest } from '../shared/errors.js';
import { TOPIC_CONFIG_NAMES, type TopicConfigs } from '../shared/topics.js';

export interface SettingsRequest {
  settings: CollectionSettings;
  /** Only the configs the request names; the log keeps the others as they are. */
  topicConfigs: Partial<TopicConfigs>;
}

export function parseSettings(body: unknown): SettingsRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('invalid_settings', 'settings are a JSON object');
  }
  const search: Record<string, unknown> = {};
  const topicConfigs: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) {
    if (Object.hasOwn(TOPIC_CONFIG_NAMES, name)) topicConfigs[name] = value;
    else search[name] = value;
  }
  const settings = validateSettings(search);
  if (typeof settings === 'string') throw badRequest('invalid_settings', settings);
  return { settings, topicConfigs: topicConfigs as Partial<TopicConfigs> };
}
