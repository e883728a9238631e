/**
 * The share of a table's rows a filter passes, estimated from the field indexes: each leaf's
 * entries counted (a walk of its index ranges, about 60 ns an entry, stopped at a bound the
 * caller names), the leaves combined as if they held independently (AND a product, OR the
 * complement of the complements' product, NOT the complement). What a search plan needs is
 * whether the share reaches some value, so a leaf is counted only that far: one counted to its
 * bound is taken at the bound, the least it holds (a NOT over it then at the most).
 *
 * Counts are kept until the next write (write-stamp.ts), so a filter asked again between writes
 * is not counted again.
 */
import type Database from 'better-sqlite3';
import type { FilterNode } from '../shared/filter/ast.js';
import { assert } from '../shared/assert.js';
import { leafRanges, type FilterLeaf } from './filter-sql.js';
import type { QueryCache } from './search-sql.js';
import { writeStamp } from './write-stamp.js';

/** Leaf counts kept between writes; past it the oldest goes. */
const LEAF_COUNTS_KEPT_MAX = 256;

interface LeafCount {
  /** Entries counted, to at most `bound`. */
  counted: number;
  bound: number;
}

export class FilterShares {
  private readonly stamp: () => number;
  private kept = { stamp: -1, counts: new Map<string, LeafCount>() };

  constructor(
    db: Database.Database,
    private readonly queries: QueryCache,
  ) {
    this.stamp = writeStamp(db);
  }

  /**
   * The share of the table's `rows` that `filter` passes, each leaf counted to at most
   * `entriesCountedMax` entries (a power of two: each bound is a statement of its own).
   */
  share(filter: FilterNode, tableId: number, rows: number, entriesCountedMax: number): number {
    assert(
      Number.isSafeInteger(Math.log2(entriesCountedMax)),
      `a count's bound is a power of two, not ${entriesCountedMax}`,
    );
    const stamp = this.stamp();
    if (stamp !== this.kept.stamp) this.kept = { stamp, counts: new Map() };
    const walk = (node: FilterNode): number => {
      switch (node.kind) {
        case 'and':
          return node.children.reduce((share, child) => share * walk(child), 1);
        case 'or':
          return 1 - node.children.reduce((rest, child) => rest * (1 - walk(child)), 1);
        case 'not':
          return 1 - walk(node.child);
        default:
          return Math.min(1, this.entries(node, tableId, entriesCountedMax) / Math.max(rows, 1));
      }
    };
    return walk(filter);
  }

  /** A leaf's entries in its index ranges, counted to at most `bound` each. */
  private entries(leaf: FilterLeaf, tableId: number, bound: number): number {
    let sum = 0;
    for (const { table, where, params } of leafRanges(leaf)) {
      const key = JSON.stringify([tableId, table, where, params]);
      const kept = this.kept.counts.get(key);
      if (kept !== undefined && (kept.counted < kept.bound || kept.bound >= bound)) {
        sum += Math.min(kept.counted, bound);
        continue;
      }
      const counted = this.queries
        .statement(
          `SELECT count(*) FROM (SELECT 1 FROM ${table} WHERE table_id = ? AND ${where} LIMIT ${bound})`,
        )
        .pluck()
        .get(tableId, ...params) as number;
      if (this.kept.counts.size >= LEAF_COUNTS_KEPT_MAX) {
        this.kept.counts.delete(this.kept.counts.keys().next().value!);
      }
      this.kept.counts.set(key, { counted, bound });
      sum += counted;
    }
    return sum;
  }
}
