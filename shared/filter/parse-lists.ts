/**
 * parseSort and parseFacets: the comma-separated `sort=` and `facets=` parameters. Items are
 * trimmed of spaces; a field appears once; sort clauses are `field:asc` or `field:desc`, the
 * direction required and in lower case, the field everything before the last ":" (Meilisearch's
 * reading, so a field may hold a ":").
 */
import type { SortClause } from './ast.js';
import { FilterError, type FilterErrorCode, characterPosition } from './filter-error.js';
import { fieldPathProblem, fieldPathTooLong } from './field-path.js';
import { type FilterLimits, resolveLimits } from './limits.js';

interface Item {
  text: string;
  /** UTF-16 index of the item's first character in the parameter. */
  start: number;
}

class ListParser {
  constructor(
    readonly text: string,
    readonly code: FilterErrorCode,
    readonly limits: FilterLimits,
  ) {}

  error(index: number, message: string, suffix = '', details: Record<string, unknown> = {}) {
    const position = characterPosition(this.text, index);
    return new FilterError(
      this.code,
      `${message} at position ${position}${suffix}`,
      position,
      details,
    );
  }

  /** The items between commas, each trimmed; an empty one is an error. */
  items(example: string, max: number, limit: keyof FilterLimits): Item[] {
    const items: Item[] = [];
    let start = 0;
    for (const raw of this.text.split(',')) {
      const leading = raw.length - raw.trimStart().length;
      const item = { text: raw.trim(), start: start + leading };
      if (item.text === '') throw this.error(item.start, `expected ${example}`);
      if (items.length >= max) {
        throw this.error(item.start, `more than ${max} items`, ` (limit ${limit})`, { limit, max });
      }
      items.push(item);
      start += raw.length + 1;
    }
    return items;
  }

  field(text: string, start: number, seen: Set<string>): string {
    if (fieldPathTooLong(text, this.limits.fieldBytesMax)) {
      const max = this.limits.fieldBytesMax;
      throw this.error(start, `a field longer than ${max} bytes`, ' (limit fieldBytesMax)', {
        limit: 'fieldBytesMax',
        max,
      });
    }
    const problem = fieldPathProblem(text);
    if (problem !== null) throw this.error(start, problem);
    if (seen.has(text)) throw this.error(start, `the field ${JSON.stringify(text)} is named twice`);
    seen.add(text);
    return text;
  }
}

export function parseSort(text: string, limits?: Partial<FilterLimits>): SortClause[] {
  const parser = new ListParser(text, 'invalid_sort', resolveLimits(limits));
  const seen = new Set<string>();
  const items = parser.items(
    'a sort clause like "year:desc"',
    parser.limits.sortClausesMax,
    'sortClausesMax',
  );
  return items.map(({ text: item, start }) => {
    const colon = item.lastIndexOf(':');
    if (colon < 0) {
      throw parser.error(start + item.length, 'expected ":asc" or ":desc" after the field');
    }
    const direction = item.slice(colon + 1);
    if (direction !== 'asc' && direction !== 'desc') {
      throw parser.error(
        start + colon + 1,
        'expected asc or desc after ":"',
        `, found ${JSON.stringify(direction)}`,
      );
    }
    return { field: parser.field(item.slice(0, colon), start, seen), direction };
  });
}

export function parseFacets(text: string, limits?: Partial<FilterLimits>): string[] {
  const parser = new ListParser(text, 'invalid_facets', resolveLimits(limits));
  const seen = new Set<string>();
  const items = parser.items(
    'a field like "genre"',
    parser.limits.facetFieldsMax,
    'facetFieldsMax',
  );
  return items.map(({ text: item, start }) => parser.field(item, start, seen));
}
