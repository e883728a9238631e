/**
 * A table's postings as FTS5 itself holds them, read through fts5vocab tables over it (temporary,
 * per connection): what a term's top-k list is built from (topk-index.ts), and what a search
 * reads of a word without a list beside listed ones (topk-reads.ts).
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { FtsStats } from './fts-stats.js';
import type { FtsTable } from './fts-table.js';
import type { Posting } from './topk-blocks.js';

/**
 * The frequency bm25() gives a term in a row: each instance's column weight added in (column,
 * offset) order (xInst's), so the sum has the same rounding as FTS5's. `counts` is
 * [column, instances] in ascending column order.
 */
export function weightedFrequency(
  counts: ReadonlyArray<[number, number]>,
  weights: readonly number[],
): number {
  let tf = 0;
  for (const [column, n] of counts) {
    for (let i = 0; i < n; i++) tf += weights[column];
  }
  return tf;
}

/**
 * The rows holding a term, counted by FTS5 from its postings (none: no result), through a
 * temporary fts5vocab 'row' table over the table `name`, made here if the connection has none.
 */
export function documentFrequencyStatement(db: Database.Database, name: string): Statement {
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${name}_terms USING fts5vocab(main, ${name}, row)`,
  );
  return db.prepare(`SELECT doc FROM temp.${name}_terms WHERE term = ?`).pluck();
}

/** FTS5's own view of a table's terms: fts5vocab tables over it (temporary, per connection). */
export class FtsPostings {
  private readonly stats: FtsStats;
  private readonly instances: Statement;
  private readonly copy: Statement;
  private readonly documents: Statement;
  private readonly rowsUpTo: Statement;
  private readonly everyTerm: Statement;

  constructor(
    db: Database.Database,
    private readonly table: FtsTable,
  ) {
    this.documents = documentFrequencyStatement(db, table.name);
    db.exec(
      `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table.name}_instances ` +
        `USING fts5vocab(main, ${table.name}, instance);`,
    );
    this.stats = new FtsStats(db, table.name);
    this.instances = db.prepare(
      `SELECT doc, col, count(*) FROM temp.${table.name}_instances WHERE term = ? GROUP BY doc, col`,
    );
    this.copy = db.prepare(
      `INSERT INTO topk_terms (table_id, term, df) SELECT ?, term, doc FROM temp.${table.name}_terms ` +
        'WHERE doc >= ? ORDER BY term',
    );
    this.rowsUpTo = db
      .prepare(`SELECT count(*) FROM (SELECT 1 FROM ${table.name}_docsize LIMIT ?)`)
      .pluck();
    this.everyTerm = db.prepare(`SELECT term, doc FROM temp.${table.name}_terms`).raw();
  }

  /**
   * The table's rows as of its last commit or savepoint (FTS5's averages record): with the rows a
   * transaction changed since it began, a bound on the rows before and after it.
   */
  rowsSynced(): number {
    return this.stats.totals().rows;
  }

  /** Every term's document frequency, this connection's writes included: a scan of them all. */
  documentFrequencies(): Map<string, number> {
    return new Map(this.everyTerm.all() as Array<[string, number]>);
  }

  /**
   * Whether the table holds more than `rows` rows, this connection's writes included: counted
   * from `_docsize`, which FTS5 writes at once (its averages record waits for a commit or a
   * savepoint), reading at most `rows + 1` of them.
   */
  holdsMoreThan(rows: number): boolean {
    return rows < 0 || (this.rowsUpTo.get(rows + 1) as number) > rows;
  }

  /** The document frequency of every term in at least `dfMin` rows, into `topk_terms`. */
  copyFrequencies(tableId: number, dfMin: number): void {
    this.copy.run(tableId, dfMin);
  }

  /**
   * The rows holding `term` (0: none), this connection's writes included: FTS5 counts them from
   * the term's postings, so a term in few rows costs little.
   */
  documentFrequency(term: string): number {
    return (this.documents.get(term) as number | undefined) ?? 0;
  }

  /** Each row holding `term`: its weighted frequency (`tf`) and tokens (`len`), in row order. */
  postingsOf(term: string): Array<Posting & { tf: number }> {
    const postings: Array<Posting & { tf: number }> = [];
    for (const { row, counts } of this.rowsOf(term)) {
      const tf = weightedFrequency(counts, this.table.layout.weights);
      postings.push({ tf, len: this.stats.rowTokens(row), row });
    }
    return postings;
  }

  /** Each row holding `term`, with [column, instances] in ascending column order. */
  private *rowsOf(term: string): Generator<{ row: number; counts: Array<[number, number]> }> {
    let row: number | undefined;
    let counts: Array<[number, number]> = [];
    const byColumn = (a: [number, number], b: [number, number]) => a[0] - b[0];
    // all(), not iterate(): the caller writes the list while reading this.
    const instances = this.instances.raw().all(term) as Array<[number, string, number]>;
    for (const [doc, col, n] of instances) {
      if (doc !== row) {
        if (row !== undefined) yield { row, counts: counts.sort(byColumn) };
        row = doc;
        counts = [];
      }
      // fts5vocab names the column: c<i> (fts-table.ts).
      counts.push([Number(col.slice(1)), n]);
    }
    if (row !== undefined) yield { row, counts: counts.sort(byColumn) };
  }
}
