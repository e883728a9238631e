/**
 * A collection's search settings as the gateway takes them: checked by the validator the
 * serve-nodes use (shared/collection-settings.ts), then appended to every partition.
 */
import { type CollectionSettings, validateSettings } from '../shared/collection-settings.js';
import { badRequest } from '../shared/errors.js';

export { SETTINGS_COLLECTION } from '../shared/collection-settings.js';

export function parseSettings(body: unknown): CollectionSettings {
  const settings = validateSettings(body);
  if (typeof settings === 'string') throw badRequest('invalid_settings', settings);
  return settings;
}
