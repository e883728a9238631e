/**
 * A read's `filter`, `sort` and `facets` parameters, parsed once into trees (shared/filter/), a
 * malformed one a 400 naming its position. The gateway parses them to refuse bad ones before any
 * fan-out and to merge sorted pages; the serve-node parses them again to run them.
 */
import type { FilterNode, SortClause } from './filter/ast.js';
import { parseFacets, parseFilter, parseSort } from './filter/index.js';

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
export function parseFieldParams(params: FieldParams): ParsedFieldParams {
  return {
    filter: params.filter ? parseFilter(params.filter) : null,
    sort: params.sort ? parseSort(params.sort) : [],
    facets: params.facets ? parseFacets(params.facets) : [],
  };
}
