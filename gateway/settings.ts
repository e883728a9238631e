/**
 * A collection's search settings, checked here and appended as a `_settings` record to every
 * partition, so each serve-node applies them in log order for its own partitions and a replay
 * lands on the same index.
 */
import { badRequest } from '../shared/errors.js';
import { isPlainObject } from './validation.js';

export const SETTINGS_COLLECTION = '_settings';
export const TOKENIZERS = [
  'unicode61 remove_diacritics 2',
  'porter unicode61 remove_diacritics 2',
  'trigram',
] as const;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const FIELD_PATH_BYTES_MAX = 256;
const FIELDS_MAX = 64;
const WEIGHT_MAX = 1000;

/** Stricter than the serve-node's check, so every settings record appended is one it applies. */
const isFieldPath = (path: unknown): path is string =>
  typeof path === 'string' &&
  FIELD_PATH.test(path) &&
  Buffer.byteLength(path) <= FIELD_PATH_BYTES_MAX;

export interface CollectionSettings {
  searchable: string[] | null;
  weights: Record<string, number>;
  tokenizer: (typeof TOKENIZERS)[number];
}

export function parseSettings(body: unknown): CollectionSettings {
  const invalid = (message: string) => badRequest('invalid_settings', message);
  if (!isPlainObject(body)) throw invalid('settings are a JSON object');
  const unknown = Object.keys(body).filter(
    (k) => !['searchable', 'weights', 'tokenizer'].includes(k),
  );
  if (unknown.length > 0) throw invalid(`unknown settings: ${unknown.join(', ')}`);
  const { searchable = null, weights = {}, tokenizer = TOKENIZERS[0] } = body;
  if (
    searchable !== null &&
    !(Array.isArray(searchable) && searchable.length <= FIELDS_MAX && searchable.every(isFieldPath))
  ) {
    throw invalid(`searchable is null or up to ${FIELDS_MAX} field paths like "body.text"`);
  }
  if (
    !isPlainObject(weights) ||
    Object.keys(weights).length > FIELDS_MAX ||
    !Object.entries(weights).every(
      ([f, w]) => isFieldPath(f) && typeof w === 'number' && w > 0 && w <= WEIGHT_MAX,
    )
  ) {
    throw invalid(`weights map field paths to numbers in (0, ${WEIGHT_MAX}]`);
  }
  if (!TOKENIZERS.includes(tokenizer as CollectionSettings['tokenizer'])) {
    throw invalid(`tokenizer is one of: ${TOKENIZERS.join(' | ')}`);
  }
  return {
    searchable: searchable as string[] | null,
    weights: weights as Record<string, number>,
    tokenizer: tokenizer as CollectionSettings['tokenizer'],
  };
}
