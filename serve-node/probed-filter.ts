/**
 * A search's filter as the top-k lists use it (topk-reads.ts RowFilter): the rows a list yields
 * tested in batches, each row's entries looked up in the field indexes (filter-sql.ts `probe`),
 * and the share of the table it passes estimated from the indexes' counts (filter-share.ts). Also
 * how the search's total is then counted: by FTS5, the filter probed a match or gathered once.
 */
import type { FilterNode } from '../shared/filter/ast.js';
import type { FilterAccess } from './filter-sql.js';
import type { FilterShares } from './filter-share.js';
import { passingRowsQuery, type QueryCache } from './search-sql.js';
import type { RowFilter } from './topk-reads.js';

/** Entries a leaf of the filter is counted to, at least and at most, to choose a plan. */
const SHARE_ENTRIES_COUNTED_MIN = 64;
const SHARE_ENTRIES_COUNTED_MAX = 16_384;
/**
 * The count's bound is this many times the entries the share must reach: a share estimated as
 * a product of leaves needs its leaves counted past its own bound.
 */
const SHARE_ENTRIES_COUNTED_SLACK = 2;

/**
 * A match probed costs about what gathering this many of the filter's rows does (measured at
 * 10^5 documents, a word in 35,000: probed 0.7 us a match; 28,000 rows of one value gathered and
 * the matches walked, 9 ms; 50,000 of a range, 51 ms).
 */
const PROBE_ROWS_GATHERED = 2;

/** The least power of two at or above `n`. */
const powerOfTwoAtLeast = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(n, 1)));

export class ProbedFilter implements RowFilter {
  constructor(
    private readonly queries: QueryCache,
    private readonly shares: FilterShares,
    private readonly tableId: number,
    private readonly filter: FilterNode,
  ) {}

  passing(rows: readonly number[]): ReadonlySet<number> {
    const { sql, params } = passingRowsQuery(this.tableId, this.filter);
    const passed = this.queries
      .statement(sql)
      .pluck()
      .all(JSON.stringify(rows), ...params) as number[];
    return new Set(passed);
  }

  share(shareMin: number, rows: number): number {
    const bound = powerOfTwoAtLeast(shareMin * rows * SHARE_ENTRIES_COUNTED_SLACK);
    return this.shares.share(
      this.filter,
      this.tableId,
      rows,
      Math.min(Math.max(bound, SHARE_ENTRIES_COUNTED_MIN), SHARE_ENTRIES_COUNTED_MAX),
    );
  }

  /**
   * How FTS5 counts the matches the filter passes, up to `countMax`, given the words' rows
   * (`matches`), the table's `rows` and the share of the rows the lists tested that passed:
   * matches walked at that share until `countMax` pass, or all of them (walkAccess).
   */
  countAccess(matches: number, rows: number, passedShare: number, countMax: number): FilterAccess {
    return this.walkAccess(Math.min(matches, countMax / Math.max(passedShare, 1 / matches)), rows);
  }

  /**
   * How the filter is read for a walk of `walked` matches in a table of `rows`: each probed
   * where that costs less than gathering the filter's rows (PROBE_ROWS_GATHERED); the rows are
   * counted only as far as that decides (about 60 ns an entry), a fraction of the walk's cost.
   */
  walkAccess(walked: number, rows: number): FilterAccess {
    const gathered = walked * PROBE_ROWS_GATHERED;
    const share = this.shares.share(this.filter, this.tableId, rows, powerOfTwoAtLeast(gathered));
    return gathered <= share * rows ? 'probe' : 'set';
  }
}
