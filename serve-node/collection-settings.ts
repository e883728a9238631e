/**
 * How a JSON document is split into the FTS5 columns its collection's settings imply (the
 * settings themselves, and their validation, are in shared/collection-settings.ts).
 */
import { type CollectionSettings, validateSettings } from '../shared/collection-settings.js';

export {
  type CollectionSettings,
  DEFAULT_SETTINGS,
  TOKENIZERS,
  type Tokenizer,
} from '../shared/collection-settings.js';

/** Deeper nesting is not indexed: a hostile document must not exhaust the stack of the apply loop. */
export const DOCUMENT_DEPTH_MAX = 32;

/**
 * The FTS5 columns of a collection: one per explicit path (the searchable list, else the weighted
 * paths) and, when every string field is searchable, a last column for the rest.
 */
export interface ColumnLayout {
  paths: string[];
  weights: number[];
  hasRestColumn: boolean;
}

/** Parses a settings value; null when it is not valid settings (the record is then ignored). */
export function parseSettings(text: string): CollectionSettings | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const settings = validateSettings(raw);
  return typeof settings === 'string' ? null : settings;
}

export function columnLayout(settings: CollectionSettings): ColumnLayout {
  const paths = settings.searchable ?? Object.keys(settings.weights).sort();
  const hasRestColumn = settings.searchable === null;
  // Own members only: `constructor` or `toString` would find Object's, and end up in bm25()'s SQL.
  const weights = paths.map((path) =>
    Object.hasOwn(settings.weights, path) ? settings.weights[path] : 1,
  );
  // An empty searchable list still needs one FTS5 column; nothing is ever indexed in it.
  if (hasRestColumn || weights.length === 0) weights.push(1);
  return { paths, weights, hasRestColumn };
}

export interface StringField {
  path: string;
  text: string;
  /** The FTS5 column the field is indexed in. */
  column: number;
}

/** Every string leaf of the document that the layout indexes, in document order. */
export function searchableFields(doc: unknown, layout: ColumnLayout): StringField[] {
  const fields: StringField[] = [];
  const visit = (value: unknown, path: string, depth: number): void => {
    if (typeof value === 'string') {
      const column = columnOf(path, layout);
      if (column >= 0 && value.length > 0) fields.push({ path, text: value, column });
      return;
    }
    if (typeof value !== 'object' || value === null || depth >= DOCUMENT_DEPTH_MAX) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item, path, depth + 1);
      return;
    }
    for (const [name, item] of Object.entries(value)) {
      visit(item, path === '' ? name : `${path}.${name}`, depth + 1);
    }
  };
  visit(doc, '', 0);
  return fields;
}

/** The text of each column; fields in one column are separated by a newline. */
export function columnTexts(doc: unknown, layout: ColumnLayout): string[] {
  const parts: string[][] = layout.weights.map(() => []);
  for (const field of searchableFields(doc, layout)) parts[field.column].push(field.text);
  return parts.map((texts) => texts.join('\n'));
}

/** The most specific explicit path covering `path`, else the rest column, else -1. */
function columnOf(path: string, layout: ColumnLayout): number {
  let best = -1;
  let bestLength = -1;
  layout.paths.forEach((candidate, i) => {
    const covers = path === candidate || path.startsWith(`${candidate}.`);
    if (covers && candidate.length > bestLength) {
      best = i;
      bestLength = candidate.length;
    }
  });
  if (best >= 0) return best;
  return layout.hasRestColumn ? layout.paths.length : -1;
}
