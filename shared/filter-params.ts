/**
 * A read's `filter`, `sort` and `facets` parameters, parsed once into trees (shared/filter/), a
 * malformed one a 400 naming its position. The gateway parses them to refuse bad ones before any
 * fan-out and to merge sorted pages; the serve-node parses them again to run them.
 */
import type { FilterNode, SortClause } from './filter/ast.js';
import {
  FACET_FIELDS_MAX_DEFAULT,
  FILTER_BYTES_MAX_DEFAULT,
  FILTER_CONDITIONS_MAX_DEFAULT,
  FILTER_DEPTH_MAX_DEFAULT,
  FILTER_IN_VALUES_MAX_DEFAULT,
  parseFacets,
  parseFilter,
  parseSort,
  SORT_CLAUSES_MAX_DEFAULT,
  type FilterLimits,
} from './filter/index.js';

/** The filter language's limits as a node's limits name them (flags and config). */
export interface FieldParamLimits {
  filterBytesMax: number;
  filterDepthMax: number;
  filterConditionsMax: number;
  filterInValuesMax: number;
  sortClausesMax: number;
  facetFieldsMax: number;
}

export const FIELD_PARAM_LIMITS_DEFAULT: FieldParamLimits = {
  filterBytesMax: FILTER_BYTES_MAX_DEFAULT,
  filterDepthMax: FILTER_DEPTH_MAX_DEFAULT,
  filterConditionsMax: FILTER_CONDITIONS_MAX_DEFAULT,
  filterInValuesMax: FILTER_IN_VALUES_MAX_DEFAULT,
  sortClausesMax: SORT_CLAUSES_MAX_DEFAULT,
  facetFieldsMax: FACET_FIELDS_MAX_DEFAULT,
};

export const FIELD_PARAM_LIMIT_HELP: Record<keyof FieldParamLimits, string> = {
  filterBytesMax: 'longest filter=, UTF-8 bytes',
  filterDepthMax: 'deepest nesting of parentheses and NOTs in a filter',
  filterConditionsMax: 'most conditions in one filter',
  filterInValuesMax: 'most values in one IN [...] of a filter',
  sortClausesMax: 'most fields in one sort=',
  facetFieldsMax: 'most fields in one facets=',
};

function filterLimitsOf(limits: FieldParamLimits): Partial<FilterLimits> {
  return {
    filterBytesMax: limits.filterBytesMax,
    depthMax: limits.filterDepthMax,
    conditionsMax: limits.filterConditionsMax,
    inValuesMax: limits.filterInValuesMax,
    sortClausesMax: limits.sortClausesMax,
    facetFieldsMax: limits.facetFieldsMax,
  };
}

export interface FieldParams {
  filter?: string;
  sort?: string;
  facets?: string;
}

export interface ParsedFieldParams {
  filter: FilterNode | null;
  sort: SortClause[];
  facets: string[];
}

/** Throws the filter language's FilterError, a 400 naming the parameter and the position. */
export function parseFieldParams(
  params: FieldParams,
  nodeLimits: FieldParamLimits = FIELD_PARAM_LIMITS_DEFAULT,
): ParsedFieldParams {
  const limits = filterLimitsOf(nodeLimits);
  return {
    filter: params.filter ? parseFilter(params.filter, limits) : null,
    sort: params.sort ? parseSort(params.sort, limits) : [],
    facets: params.facets ? parseFacets(params.facets, limits) : [],
  };
}
