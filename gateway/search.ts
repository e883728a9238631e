/**
 * Search across serve-nodes: each replica ranks its share of the partitions (top offset+limit),
 * and the hits are merged by score, ties by partition and then offset: the order every node cuts
 * its top hits in, so pages of equal scores neither repeat nor skip a hit. With every partition on
 * one serve-node this is exactly that node's FTS5 ranking; across nodes each scores with its own
 * term statistics, so the merged order can differ from one global index (measured in the
 * benchmark, see README.md). With `sort=`, hits merge by their sort values, then score, then key:
 * the order each node cut its top hits in.
 */
import { compareCodePoints } from '../shared/code-points.js';
import type { SortClause } from '../shared/filter/ast.js';
import { compareSortValues } from '../shared/filter/facts.js';
import type { AppliedOffsets, SearchHit, SearchResult } from '../shared/serve-api.js';
import { collectApplied } from './consistency.js';

export interface NodeHits {
  assigned: readonly number[];
  result: SearchResult;
}

export function mergeSearchHits(
  pages: NodeHits[],
  offset: number,
  limit: number,
  sort: readonly SortClause[] = [],
): { hits: SearchHit[]; total: number; totalExact: boolean; applied: AppliedOffsets } {
  const hits: SearchHit[] = [];
  const applied: AppliedOffsets = {};
  let total = 0;
  let totalExact = true;
  for (const { assigned, result } of pages) {
    const mine = new Set(assigned);
    hits.push(...result.hits.filter((hit) => mine.has(hit.partition)));
    total += result.total;
    // A node older than the bound answers no totalExact: its count was exact.
    if (result.totalExact === false) totalExact = false;
    collectApplied(applied, result.applied, assigned);
  }
  hits.sort(sort.length === 0 ? byScore : bySortValues(sort));
  return { hits: hits.slice(offset, offset + limit), total, totalExact, applied };
}

const byScore = (a: SearchHit, b: SearchHit) =>
  b.score - a.score || a.partition - b.partition || a.offset - b.offset;

function bySortValues(sort: readonly SortClause[]) {
  return (a: SearchHit, b: SearchHit) => {
    for (let i = 0; i < sort.length; i++) {
      const order = compareSortValues(a.sort?.[i] ?? null, b.sort?.[i] ?? null, sort[i].direction);
      if (order !== 0) return order;
    }
    return b.score - a.score || compareCodePoints(a.key, b.key);
  };
}
