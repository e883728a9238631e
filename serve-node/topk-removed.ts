/**
 * The rows removed from a table whose postings a segment of its top-k lists still holds
 * (FORMAT.md): a removed row costs one entry here, whatever its terms, where taking its posting
 * out of each listed term's list cost a block rewritten a term. Reads skip the rows here; merges
 * drop their postings and count them off, and a row's entry goes when its last posting does. A
 * row removed never comes back (rows are `offset * 1024 + partition`), so a posting of a row here
 * is dead in every segment, old or merged.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';

export const TOPK_REMOVED_SCHEMA = `
  CREATE TABLE IF NOT EXISTS topk_removed (
    table_id INTEGER NOT NULL, row INTEGER NOT NULL, postings INTEGER NOT NULL,
    PRIMARY KEY (table_id, row)) WITHOUT ROWID;
`;

/**
 * Rows a connection keeps answers of, by table, between commits: past it they are forgotten and
 * looked up again (about 50 bytes a row).
 */
const KNOWN_ROWS_MAX = 100_000;

type RemovedStatements = Record<
  'any' | 'has' | 'rows' | 'insert' | 'deleteIfAll' | 'countOff',
  Statement
>;

/**
 * Which rows of one table are removed, as of one commit: free while the table has none (a load,
 * a rebuild), else a look-up a row, each answered once, or none at all once the table's removed
 * rows are read whole (readWhole).
 */
export class RemovedRowsOf {
  private readonly known = new Map<number, boolean>();
  /** Every removed row of the table, once read whole. */
  private whole: Set<number> | null = null;
  private readonly any: boolean;

  constructor(
    private readonly statements: RemovedStatements,
    private readonly tableId: number,
  ) {
    this.any = statements.any.get(tableId) === 1;
  }

  readonly has = (row: number): boolean => {
    if (!this.any) return false;
    if (this.whole !== null) return this.whole.has(row);
    let removed = this.known.get(row);
    if (removed === undefined) {
      removed = this.statements.has.get(this.tableId, row) !== undefined;
      if (this.known.size >= KNOWN_ROWS_MAX) this.known.clear();
      this.known.set(row, removed);
    }
    return removed;
  };

  /**
   * The table's removed rows read in one range scan where they are at most `rowsMax` (the rows
   * about to be looked up: fewer rows read than look-ups made), so `has` asks SQLite nothing.
   */
  readWhole(rowsMax: number): void {
    if (!this.any || this.whole !== null) return;
    const rows = this.statements.rows.all(this.tableId, rowsMax + 1) as number[];
    if (rows.length <= rowsMax) this.whole = new Set(rows);
  }
}

export class RemovedRows {
  private readonly statements: RemovedStatements;

  constructor(db: Database.Database) {
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      any: prepare('SELECT EXISTS (SELECT 1 FROM topk_removed WHERE table_id = ?)').pluck(),
      has: prepare('SELECT 1 FROM topk_removed WHERE table_id = ? AND row = ?').pluck(),
      rows: prepare('SELECT row FROM topk_removed WHERE table_id = ? LIMIT ?').pluck(),
      insert: prepare('INSERT INTO topk_removed (table_id, row, postings) VALUES (?, ?, ?)'),
      deleteIfAll: prepare(
        'DELETE FROM topk_removed WHERE table_id = ? AND row = ? AND postings = ?',
      ),
      countOff: prepare(
        'UPDATE topk_removed SET postings = postings - ? ' +
          'WHERE table_id = ? AND row = ? AND postings > ?',
      ),
    };
  }

  /** The table's removed rows as of now: to be asked again after another commit. */
  of(tableId: number): RemovedRowsOf {
    return new RemovedRowsOf(this.statements, tableId);
  }

  /** `row` removed while `postings` postings of it are in segments of the table's lists. */
  add(tableId: number, row: number, postings: number): void {
    assert(postings >= 1, `a removed row of table ${tableId} is held by a posting at least`);
    this.statements.insert.run(tableId, row, postings);
  }

  /** Postings of removed rows dropped from the lists, by row: each row's count goes down. */
  countOff(tableId: number, dropped: ReadonlyMap<number, number>): void {
    for (const [row, postings] of dropped) {
      if (this.statements.deleteIfAll.run(tableId, row, postings).changes === 1) continue;
      const { changes } = this.statements.countOff.run(postings, tableId, row, postings);
      assert(changes === 1, `row ${row} of table ${tableId} lost more postings than it had`);
    }
  }
}

/**
 * A writing transaction's view of a table's removed rows: which rows are, and how many of their
 * postings it dropped, counted off at the end (flush).
 */
export class DroppedPostings {
  private readonly dropped = new Map<number, number>();
  private readonly isRemoved: (row: number) => boolean;

  constructor(
    private readonly removed: RemovedRows,
    private readonly tableId: number,
  ) {
    this.isRemoved = removed.of(tableId).has;
  }

  /** Whether `row` is removed; if so, a posting of it is counted as dropped. */
  drops(row: number): boolean {
    if (!this.isRemoved(row)) return false;
    this.dropped.set(row, (this.dropped.get(row) ?? 0) + 1);
    return true;
  }

  flush(): void {
    this.removed.countOff(this.tableId, this.dropped);
    this.dropped.clear();
  }
}
