/**
 * Facets across serve-nodes: each node counts every value of a field over its partitions' matches
 * (serve-node/reads.ts), and the counts add up value by value, so the merged counts are exactly
 * those of one index over all the partitions. The answer keeps the `facetValuesMax` most frequent
 * values (ties by value: numbers, then strings by code point, then booleans), says how many were
 * left out, and gives numeric fields' min and max over every value counted.
 */
import type { NodeFacet } from '../shared/serve-api.js';
import { compareFacetValues, type FacetValue } from '../shared/facet-order.js';

export interface Facet {
  values: Array<{ value: FacetValue; count: number }>;
  /** Distinct values not in `values`. */
  omitted: number;
  min?: number;
  max?: number;
  /** Present (true) when a node had more values than it may answer: counts are then partial. */
  truncated?: true;
}

export function mergeFacets(
  fields: readonly string[],
  answers: ReadonlyArray<Record<string, NodeFacet> | undefined>,
  valuesMax: number,
): Record<string, Facet> {
  const merged: Record<string, Facet> = {};
  for (const field of fields) {
    const counts = new Map<string, { value: FacetValue; count: number }>();
    let truncated = false;
    for (const answer of answers) {
      const facet = answer?.[field];
      if (facet === undefined) continue;
      truncated ||= facet.truncated;
      for (const { value, count } of facet.values) {
        // The type is part of the identity: the number 1, the string "1" and true are three values.
        const id = `${typeof value}:${String(value)}`;
        const entry = counts.get(id);
        if (entry) entry.count += count;
        else counts.set(id, { value, count });
      }
    }
    const all = [...counts.values()].sort(
      (a, b) => b.count - a.count || compareFacetValues(a.value, b.value),
    );
    const numbers = all.flatMap(({ value }) => (typeof value === 'number' ? [value] : []));
    merged[field] = {
      values: all.slice(0, valuesMax),
      omitted: Math.max(0, all.length - valuesMax),
      ...(numbers.length > 0 ? { min: numbers.reduce(min), max: numbers.reduce(max) } : {}),
      ...(truncated ? { truncated: true as const } : {}),
    };
  }
  return merged;
}

const min = (a: number, b: number) => (b < a ? b : a);
const max = (a: number, b: number) => (b > a ? b : a);
