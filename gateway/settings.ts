/**
 * A collection's settings as the gateway takes them: checked by the validator the serve-nodes use
 * (shared/collection-settings.ts), then written as one record of the settings topic (key = the
 * collection). The settings that are topic configs (cleanup policy, retention) are also set on the
 * collection's topic, where the log applies them.
 */
import { type CollectionSettings, validateSettings } from '../shared/collection-settings.js';
import { badRequest } from '../shared/errors.js';
import { TOPIC_CONFIG_NAMES, type TopicConfigs } from '../shared/topics.js';

export function parseSettings(body: unknown): CollectionSettings {
  const settings = validateSettings(body);
  if (typeof settings === 'string') throw badRequest('invalid_settings', settings);
  return settings;
}

/** The topic configs the settings name (the same names as TopicConfigs' fields); the rest stay. */
export function topicConfigsOf(settings: CollectionSettings): Partial<TopicConfigs> {
  const named: Record<string, unknown> = { ...settings };
  const configs: Record<string, unknown> = {};
  for (const name of Object.keys(TOPIC_CONFIG_NAMES)) {
    if (named[name] !== undefined) configs[name] = named[name];
  }
  return configs as Partial<TopicConfigs>;
}
