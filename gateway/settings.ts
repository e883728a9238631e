/**
 * A collection's settings as the gateway takes them. The search settings are checked by the
 * validator the serve-nodes use (shared/collection-settings.ts) and written as one record of the
 * settings topic (key = the collection). The settings that are topic configs (cleanupPolicy,
 * retentionMs, retentionBytes, deleteRetentionMs, maxMessageBytes: Kafka's cleanup.policy,
 * retention.ms, ...) go to the collection's topic, where the log checks and applies them.
 * A PUT replaces the search settings; a PATCH merges its fields into the stored ones, as
 * Meilisearch's settings update does (a field given null goes back to its default).
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
  const { search, topicConfigs } = splitSettings(body);
  return { settings: checked(search), topicConfigs };
}

/** A PATCH: the fields it names replace those of `current`, a null one resets its default. */
export function parseSettingsPatch(body: unknown, current: CollectionSettings): SettingsRequest {
  const { search, topicConfigs } = splitSettings(body);
  // Unknown fields are refused before the merge, so their message names only them.
  checked(Object.fromEntries(Object.keys(search).map((name) => [name, undefined])));
  const merged: Record<string, unknown> = { ...current };
  for (const [name, value] of Object.entries(search)) {
    if (value === null) delete merged[name];
    else merged[name] = value;
  }
  return { settings: checked(merged), topicConfigs };
}

function splitSettings(body: unknown) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('invalid_settings', 'settings are a JSON object');
  }
  const search: Record<string, unknown> = {};
  const topicConfigs: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) {
    if (Object.hasOwn(TOPIC_CONFIG_NAMES, name)) topicConfigs[name] = value;
    else search[name] = value;
  }
  return { search, topicConfigs: topicConfigs as Partial<TopicConfigs> };
}

function checked(search: Record<string, unknown>): CollectionSettings {
  const settings = validateSettings(search);
  if (typeof settings === 'string') throw badRequest('invalid_settings', settings);
  return settings;
}
