/**
 * A collection's search settings: which fields are searchable, their weights, the tokenizer, and
 * which fields are filterable (filters and facets) and sortable.
 * They travel as records of the internal settings topic (shared/topics.ts, key = the collection),
 * which every serve-node tails; applying one re-indexes the collection, so a replay reproduces the
 * index. One validator for both sides: a record the gateway appends is exactly a record every
 * serve-node applies.
 */

export const TOKENIZERS = [
  'unicode61 remove_diacritics 2',
  'porter unicode61 remove_diacritics 2',
  'trigram',
] as const;
export type Tokenizer = (typeof TOKENIZERS)[number];

export const FIELD_PATHS_MAX = 64;
export const FIELD_PATH_BYTES_MAX = 256;
export const WEIGHT_MAX = 1_000;
const SETTINGS_KEYS = ['searchable', 'weights', 'tokenizer', 'filterable', 'sortable'];

export interface CollectionSettings {
  /** Field paths ("body.text"); null: every string field. */
  searchable: string[] | null;
  weights: Record<string, number>;
  tokenizer: Tokenizer;
  /** Field paths `filter=` and `facets=` may name, sorted. */
  filterable: string[];
  /** Field paths `sort=` may name, sorted. */
  sortable: string[];
}

export const DEFAULT_SETTINGS: CollectionSettings = {
  searchable: null,
  weights: {},
  tokenizer: 'unicode61 remove_diacritics 2',
  filterable: [],
  sortable: [],
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isFieldPath = (path: unknown): path is string =>
  typeof path === 'string' &&
  path.length > 0 &&
  Buffer.byteLength(path) <= FIELD_PATH_BYTES_MAX &&
  path.split('.').every((segment) => segment.length > 0);

/** The settings in canonical form, or the reason they are not valid settings. */
export function validateSettings(raw: unknown): CollectionSettings | string {
  if (!isPlainObject(raw)) return 'settings are a JSON object';
  const unknown = Object.keys(raw).filter((key) => !SETTINGS_KEYS.includes(key));
  if (unknown.length > 0) return `unknown settings: ${unknown.join(', ')}`;
  const {
    searchable = null,
    weights = {},
    tokenizer = DEFAULT_SETTINGS.tokenizer,
    filterable = [],
    sortable = [],
  } = raw;
  if (
    searchable !== null &&
    !(
      Array.isArray(searchable) &&
      searchable.length <= FIELD_PATHS_MAX &&
      searchable.every(isFieldPath)
    )
  ) {
    return `searchable is null or up to ${FIELD_PATHS_MAX} field paths like "body.text"`;
  }
  if (
    !isPlainObject(weights) ||
    Object.keys(weights).length > FIELD_PATHS_MAX ||
    !Object.entries(weights).every(
      ([path, weight]) =>
        isFieldPath(path) && typeof weight === 'number' && weight > 0 && weight <= WEIGHT_MAX,
    )
  ) {
    return `weights map up to ${FIELD_PATHS_MAX} field paths to numbers in (0, ${WEIGHT_MAX}]`;
  }
  if (!TOKENIZERS.includes(tokenizer as Tokenizer)) {
    return `tokenizer is one of: ${TOKENIZERS.join(' | ')}`;
  }
  for (const [name, paths] of [
    ['filterable', filterable],
    ['sortable', sortable],
  ] as const) {
    if (!(Array.isArray(paths) && paths.length <= FIELD_PATHS_MAX && paths.every(isFieldPath))) {
      return `${name} is a list of up to ${FIELD_PATHS_MAX} field paths like "author.name"`;
    }
  }
  return {
    searchable: searchable === null ? null : [...new Set(searchable as string[])],
    weights: { ...(weights as Record<string, number>) },
    tokenizer: tokenizer as Tokenizer,
    // Sorted: the canonical form names the collection's index, so order must not make another.
    filterable: canonicalPaths(filterable as string[]),
    sortable: canonicalPaths(sortable as string[]),
  };
}

const canonicalPaths = (paths: string[]) =>
  [...new Set(paths)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
