/**
 * GET settings: what a collection's settings are, read from the log itself (the settings topic's
 * last record for the collection, and the collection topic's configs), so the answer includes
 * every settings write acknowledged before the read began, whatever the serve-nodes applied.
 * The settings topic is compacted and holds one small record per collection, so reading it whole
 * stays small; each read moves strictly forward and stops at the end offset seen first.
 */
import {
  type CollectionSettings,
  DEFAULT_SETTINGS,
  validateSettings,
} from '../shared/collection-settings.js';
import { notFound } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import { SETTINGS_TOPIC, type TopicConfigs } from '../shared/topics.js';
import { type InternalRecordVisitor, readInternalTopic } from '../shared/internal-topic-reader.js';

const utf8 = new TextDecoder('utf-8');

export interface CollectionSettingsView {
  collection: string;
  settings: CollectionSettings;
  topicConfigs: TopicConfigs;
}

export async function readCollectionSettings(
  log: LogClient,
  collection: string,
  readBytesMax: number,
): Promise<CollectionSettingsView> {
  const [topics, settings] = await Promise.all([
    log.topics(),
    readSearchSettings(log, collection, readBytesMax),
  ]);
  const topic = topics.find(({ name }) => name === collection);
  if (topic === undefined) {
    throw notFound('collection_not_found', `no collection ${collection}`, { collection });
  }
  return { collection, settings, topicConfigs: topic.configs };
}

/** The collection's last settings record in the log, or the defaults when it has none. */
export async function readSearchSettings(
  log: LogClient,
  collection: string,
  readBytesMax: number,
): Promise<CollectionSettings> {
  let settings = DEFAULT_SETTINGS;
  await forEachSettingsRecord(log, readBytesMax, (key, value) => {
    if (key !== collection) return;
    // A null record puts the defaults back; invalid records are ignored, as the serve-nodes
    // that apply them ignore them.
    if (value === null) {
      settings = DEFAULT_SETTINGS;
      return;
    }
    const parsed = validateSettings(parseOrNull(utf8.decode(value)));
    if (typeof parsed !== 'string') settings = parsed;
  });
  return settings;
}

/** Whether the collection's last settings record declares settings (a drop's null one does not). */
export async function settingsDeclared(
  log: LogClient,
  collection: string,
  readBytesMax: number,
): Promise<boolean> {
  let declared = false;
  await forEachSettingsRecord(log, readBytesMax, (key, value) => {
    if (key === collection) declared = value !== null;
  });
  return declared;
}

/** Collection → the offset of its last settings record (a null one included). */
export async function readSettingsVersions(
  log: LogClient,
  readBytesMax: number,
): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  await forEachSettingsRecord(log, readBytesMax, (key, _value, offset) => {
    if (key !== null) versions.set(key, offset);
  });
  return versions;
}

/** Every record of the settings topic in order, up to the end offset seen first. */
async function forEachSettingsRecord(
  log: LogClient,
  readBytesMax: number,
  visit: InternalRecordVisitor,
): Promise<void> {
  await readInternalTopic(log, SETTINGS_TOPIC, 0, readBytesMax, visit);
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
