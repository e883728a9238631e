/** The order of facet values wherever they are ranked: on a serve-node and in the gateway's merge. */
import { compareCodePoints } from './code-points.js';

export type FacetValue = number | string | boolean;

/** Numbers, then strings (code point order), then booleans (false first). */
export function compareFacetValues(a: FacetValue, b: FacetValue): number {
  const rank = (value: FacetValue) =>
    typeof value === 'number' ? 0 : typeof value === 'string' ? 1 : 2;
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  if (typeof a === 'string') return compareCodePoints(a, b as string);
  return Number(a) - Number(b);
}
