/**
 * A read's `filter`, `sort` and `facets`, parsed (shared/filter-params.ts), checked against the
 * settings the read is served with: a field that is not filterable (filters, facets) or sortable
 * (sort) is a 400 naming it.
 */
import { badRequest } from '../shared/errors.js';
import { filterFields } from '../shared/filter/index.js';
import type { ParsedFieldParams } from '../shared/filter-params.js';
import type { CollectionSettings } from './collection-settings.js';

export {
  parseFieldParams,
  type FieldParams,
  type ParsedFieldParams,
} from '../shared/filter-params.js';

export function checkFieldParams(parsed: ParsedFieldParams, settings: CollectionSettings): void {
  const filterable = new Set(settings.filterable);
  const sortable = new Set(settings.sortable);
  const named = [
    ...(parsed.filter ? filterFields(parsed.filter) : []).map((field) => ['filter', field]),
    ...parsed.facets.map((field) => ['facets', field]),
  ];
  for (const [parameter, field] of named) {
    if (!filterable.has(field)) {
      throw badRequest(
        'field_not_filterable',
        `${parameter} names "${field}", which is not filterable: add it to the collection's ` +
          `filterable settings (filterable now: ${list(settings.filterable)})`,
        { field },
      );
    }
  }
  for (const { field } of parsed.sort) {
    if (!sortable.has(field)) {
      throw badRequest(
        'field_not_sortable',
        `sort names "${field}", which is not sortable: add it to the collection's sortable ` +
          `settings (sortable now: ${list(settings.sortable)})`,
        { field },
      );
    }
  }
}

const list = (fields: readonly string[]) => (fields.length === 0 ? 'none' : fields.join(', '));
