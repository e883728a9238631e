/**
 * Bounds on what one `filter=`, `sort=` or `facets=` parameter may ask for, all enforced by the
 * parser, so a hostile filter costs a bounded amount of parsing, SQL and evaluation. A limit
 * exceeded is a FilterError with the parameter's own code (invalid_filter, invalid_sort,
 * invalid_facets), its message naming the limit and its value, and `limit` and `max` in details.
 */
import { assert } from '../assert.js';

export interface FilterLimits {
  /** UTF-8 bytes of the filter's text. */
  filterBytesMax: number;
  /** Parentheses and NOTs open at once. */
  depthMax: number;
  /** Conditions (comparisons, ranges, IN, EXISTS, IS ...) in one filter. */
  conditionsMax: number;
  /** Values in one IN [...] list. */
  inValuesMax: number;
  /** UTF-8 bytes of one literal, after its escapes are read. */
  literalBytesMax: number;
  /** UTF-8 bytes of one field path (the settings' FIELD_PATH_BYTES_MAX). */
  fieldBytesMax: number;
  /** Clauses in one sort. */
  sortClausesMax: number;
  /** Fields in one facets list. */
  facetFieldsMax: number;
}

export const FILTER_BYTES_MAX_DEFAULT = 4096;
export const FILTER_DEPTH_MAX_DEFAULT = 16;
export const FILTER_CONDITIONS_MAX_DEFAULT = 64;
export const FILTER_IN_VALUES_MAX_DEFAULT = 256;
export const FILTER_LITERAL_BYTES_MAX_DEFAULT = 1024;
export const FILTER_FIELD_BYTES_MAX_DEFAULT = 256;
export const SORT_CLAUSES_MAX_DEFAULT = 8;
export const FACET_FIELDS_MAX_DEFAULT = 16;

export const FILTER_LIMITS_DEFAULT: Readonly<FilterLimits> = Object.freeze({
  filterBytesMax: FILTER_BYTES_MAX_DEFAULT,
  depthMax: FILTER_DEPTH_MAX_DEFAULT,
  conditionsMax: FILTER_CONDITIONS_MAX_DEFAULT,
  inValuesMax: FILTER_IN_VALUES_MAX_DEFAULT,
  literalBytesMax: FILTER_LITERAL_BYTES_MAX_DEFAULT,
  fieldBytesMax: FILTER_FIELD_BYTES_MAX_DEFAULT,
  sortClausesMax: SORT_CLAUSES_MAX_DEFAULT,
  facetFieldsMax: FACET_FIELDS_MAX_DEFAULT,
});

/** The defaults with `overrides` applied; each limit must be a positive integer. */
export function resolveLimits(overrides: Partial<FilterLimits> = {}): FilterLimits {
  const limits = { ...FILTER_LIMITS_DEFAULT };
  for (const name of Object.keys(FILTER_LIMITS_DEFAULT) as (keyof FilterLimits)[]) {
    const value = overrides[name];
    if (value === undefined) continue;
    assert(Number.isSafeInteger(value) && value > 0, `${name} must be a positive integer`);
    limits[name] = value;
  }
  return limits;
}
