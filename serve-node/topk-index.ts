/**
 * The top-k lists kept beside each FTS5 table (FORMAT.md): every term's document frequency,
 * and for each term in at least `listedDfMin` rows (a listed term) its postings ordered by
 * (weighted frequency, row tokens, partition, row). Within one frequency the rows come in
 * descending bm25 contribution for any average row length, so a search of a listed term merges
 * one run per frequency and reads about k postings, not every match (topk-reads.ts).
 *
 * Writes are gathered during a transaction (changed) and folded in before it commits (settle),
 * tokenized by FTS5 itself (fts-tokens.ts). Which terms are listed, and what their lists hold,
 * is a function of the table's rows alone, never of the order or the batches they came in, so
 * a replay or a re-index makes the same lists.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import { FtsStats } from './fts-stats.js';
import type { FtsTable } from './fts-table.js';
import { FtsTokenizers } from './fts-tokens.js';
import { partitionOfRow } from './fts-table.js';

export const TOPK_SCHEMA = `
  CREATE TABLE IF NOT EXISTS topk_settings (
    id INTEGER PRIMARY KEY CHECK (id = 0), listed_df_min INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS topk_terms (
    id INTEGER PRIMARY KEY, table_id INTEGER NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL);
  CREATE UNIQUE INDEX IF NOT EXISTS topk_terms_by_term ON topk_terms (table_id, term);
  CREATE TABLE IF NOT EXISTS topk_postings (
    term_id INTEGER NOT NULL, tf REAL NOT NULL, len INTEGER NOT NULL,
    partition INTEGER NOT NULL, row INTEGER NOT NULL,
    PRIMARY KEY (term_id, tf, len, partition, row)) WITHOUT ROWID;
`;

/**
 * Layout 6 kept the term's text in every posting (21 bytes a posting at 3·10^5 documents): its
 * lists are dropped, and open() builds them again in this layout.
 */
function dropTermTextLists(db: Database.Database): void {
  const hasTermIds = db
    .prepare("SELECT count(*) FROM pragma_table_info('topk_terms') WHERE name = 'id'")
    .pluck();
  const hasTerms = db
    .prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'topk_terms'")
    .pluck();
  if (hasTerms.get() === 0 || hasTermIds.get() === 1) return;
  db.exec(
    'DROP TABLE IF EXISTS topk_postings; DROP TABLE topk_terms; DROP TABLE IF EXISTS topk_settings',
  );
}

/** A trigram table's words are phrases of several tokens: no list answers one. */
export function hasTopkLists(table: FtsTable): boolean {
  return table.settings.tokenizer !== 'trigram';
}

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

interface RowChange {
  row: number;
  /** The row's column texts, as FTS5 indexed them. */
  texts: string[];
  added: boolean;
}

interface RowTerms {
  change: RowChange;
  tf: Map<string, number>;
  len: number;
}

export class TopkIndex {
  private readonly pending = new Map<number, { table: FtsTable; changes: RowChange[] }>();
  private readonly tokenizers: FtsTokenizers;
  private readonly statements: Record<
    | 'settings'
    | 'setSettings'
    | 'term'
    | 'insertTerm'
    | 'setDf'
    | 'deleteTerm'
    | 'insertPosting'
    | 'deletePosting'
    | 'deleteList'
    | 'listedTerms'
    | 'deleteTerms'
    | 'deletePostings',
    Statement
  >;

  constructor(
    private readonly db: Database.Database,
    /**
     * Rows a term must be in to be listed: below it FTS5 ranks every match quickly (about 1 us
     * a match); above it a list costs a posting for each row written.
     */
    private readonly listedDfMin: number,
  ) {
    assert(Number.isSafeInteger(listedDfMin) && listedDfMin >= 1, 'listedDfMin is at least 1');
    dropTermTextLists(db);
    db.exec(TOPK_SCHEMA);
    this.tokenizers = new FtsTokenizers(db);
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      settings: prepare('SELECT listed_df_min FROM topk_settings WHERE id = 0').pluck(),
      setSettings: prepare(
        'INSERT INTO topk_settings (id, listed_df_min) VALUES (0, ?) ' +
          'ON CONFLICT (id) DO UPDATE SET listed_df_min = excluded.listed_df_min',
      ),
      term: prepare('SELECT id, df FROM topk_terms WHERE table_id = ? AND term = ?').raw(),
      insertTerm: prepare(
        'INSERT INTO topk_terms (table_id, term, df) VALUES (?, ?, ?) RETURNING id',
      ).pluck(),
      setDf: prepare('UPDATE topk_terms SET df = ? WHERE id = ?'),
      deleteTerm: prepare('DELETE FROM topk_terms WHERE id = ?'),
      insertPosting: prepare(
        'INSERT INTO topk_postings (term_id, tf, len, partition, row) VALUES (?, ?, ?, ?, ?)',
      ),
      deletePosting: prepare(
        'DELETE FROM topk_postings WHERE term_id = ? AND tf = ? AND len = ? ' +
          'AND partition = ? AND row = ?',
      ),
      deleteList: prepare('DELETE FROM topk_postings WHERE term_id = ?'),
      listedTerms: prepare(
        'SELECT id, term FROM topk_terms WHERE table_id = ? AND df >= ? ORDER BY id',
      ).raw(),
      deleteTerms: prepare('DELETE FROM topk_terms WHERE table_id = ?'),
      deletePostings: prepare(
        'DELETE FROM topk_postings WHERE term_id IN (SELECT id FROM topk_terms WHERE table_id = ?)',
      ),
    };
  }

  /**
   * Builds every table's lists from its FTS5 index when the store has none of this
   * `listedDfMin` (a store of an earlier layout, or another setting): once, in a transaction.
   */
  open(tables: readonly FtsTable[]): void {
    if (this.statements.settings.get() === this.listedDfMin) return;
    this.db.transaction(() => {
      for (const table of tables) this.rebuild(table);
      this.statements.setSettings.run(this.listedDfMin);
    })();
  }

  /** A row indexed in (`added`) or removed from `table`, with the column texts FTS5 was given. */
  changed(table: FtsTable, row: number, texts: string[], added: boolean): void {
    if (!hasTopkLists(table)) return;
    let pending = this.pending.get(table.id);
    if (pending === undefined) {
      pending = { table, changes: [] };
      this.pending.set(table.id, pending);
    }
    pending.changes.push({ row, texts, added });
  }

  /** A table dropped in this transaction: its lists go with its other rows (retired-tables.ts). */
  dropped(tableId: number): void {
    this.pending.delete(tableId);
  }

  /** The transaction rolled back: what it gathered is forgotten. */
  forget(): void {
    this.pending.clear();
  }

  /** Folds the transaction's changes into the lists; called last in every writing transaction. */
  settle(): void {
    for (const { table, changes } of this.pending.values()) this.settleTable(table, changes);
    this.pending.clear();
  }

  private settleTable(table: FtsTable, changes: readonly RowChange[]): void {
    const rows = this.rowTerms(table, changes);
    const deltas = new Map<string, number>();
    for (const { change, tf } of rows) {
      for (const term of tf.keys()) {
        deltas.set(term, (deltas.get(term) ?? 0) + (change.added ? 1 : -1));
      }
    }
    // Terms listed before and after take the changes posting by posting; terms crossing the
    // threshold get their list built or dropped whole, once, from the table as it now stands.
    const kept = new Map<string, number>();
    const built: Array<[number, string]> = [];
    for (const [term, delta] of deltas) {
      const stored = this.statements.term.get(table.id, term) as [number, number] | undefined;
      const before = stored?.[1] ?? 0;
      const after = before + delta;
      assert(after >= 0, `term ${term} of table ${table.id} would be in ${after} rows`);
      const wasListed = before >= this.listedDfMin;
      const isListed = after >= this.listedDfMin;
      // A term's list goes before its id can: a new term may be given the id again.
      if (wasListed && !isListed) this.statements.deleteList.run(stored![0]);
      let id = stored?.[0];
      if (id === undefined) {
        if (after > 0) id = this.statements.insertTerm.get(table.id, term, after) as number;
      } else if (after === 0) {
        this.statements.deleteTerm.run(id);
      } else if (delta !== 0) {
        this.statements.setDf.run(after, id);
      }
      if (wasListed && isListed) kept.set(term, id!);
      else if (isListed) built.push([id!, term]);
    }
    for (const { change, tf, len } of rows) {
      const partition = partitionOfRow(change.row);
      for (const [term, frequency] of tf) {
        const id = kept.get(term);
        if (id === undefined) continue;
        const args = [id, frequency, len, partition, change.row];
        if (change.added) {
          this.statements.insertPosting.run(...args);
        } else {
          const { changes: removed } = this.statements.deletePosting.run(...args);
          assert(removed === 1, `table ${table.id} had no posting of ${term} in row ${change.row}`);
        }
      }
    }
    if (built.length > 0) {
      const source = new ListSource(this.db, table);
      for (const [id, term] of built) this.buildList(table, source, id, term);
    }
  }

  /** Each changed row's terms with their weighted frequencies, and its tokens. */
  private rowTerms(table: FtsTable, changes: readonly RowChange[]): RowTerms[] {
    const columns = table.layout.weights.length;
    const texts = changes.flatMap((change) => {
      assert(change.texts.length === columns, `a row of table ${table.id} has ${columns} columns`);
      return change.texts;
    });
    const tokenized = this.tokenizers.tokenize(table.settings.tokenizer, texts);
    return changes.map((change, i) => {
      const counts = new Map<string, Array<[number, number]>>();
      let len = 0;
      for (let column = 0; column < columns; column++) {
        const text = tokenized[i * columns + column];
        len += text.tokens;
        for (const [term, n] of text.counts) {
          let termCounts = counts.get(term);
          if (termCounts === undefined) {
            termCounts = [];
            counts.set(term, termCounts);
          }
          termCounts.push([column, n]);
        }
      }
      const tf = new Map<string, number>();
      for (const [term, termCounts] of counts) {
        tf.set(term, weightedFrequency(termCounts, table.layout.weights));
      }
      return { change, tf, len };
    });
  }

  /** The term's list, from FTS5's postings of it and its rows' sizes. */
  private buildList(table: FtsTable, source: ListSource, id: number, term: string): void {
    this.statements.deleteList.run(id);
    for (const { row, counts } of source.rowsOf(term)) {
      const tf = weightedFrequency(counts, table.layout.weights);
      const len = source.stats.rowTokens(row);
      this.statements.insertPosting.run(id, tf, len, partitionOfRow(row), row);
    }
  }

  /** The table's document frequencies and lists made again from its FTS5 index. */
  private rebuild(table: FtsTable): void {
    this.statements.deletePostings.run(table.id);
    this.statements.deleteTerms.run(table.id);
    if (!hasTopkLists(table)) return;
    const source = new ListSource(this.db, table);
    source.copyFrequencies(table.id);
    const listed = this.statements.listedTerms.all(table.id, this.listedDfMin) as Array<
      [number, string]
    >;
    for (const [id, term] of listed) this.buildList(table, source, id, term);
  }
}

/** FTS5's own view of a table's terms: fts5vocab tables over it (temporary, per connection). */
class ListSource {
  readonly stats: FtsStats;
  private readonly instances: Statement;
  private readonly copy: Statement;

  constructor(db: Database.Database, table: FtsTable) {
    db.exec(
      `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table.name}_instances ` +
        `USING fts5vocab(main, ${table.name}, instance);` +
        `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${table.name}_terms ` +
        `USING fts5vocab(main, ${table.name}, row);`,
    );
    this.stats = new FtsStats(db, table.name);
    this.instances = db.prepare(
      `SELECT doc, col, count(*) FROM temp.${table.name}_instances WHERE term = ? GROUP BY doc, col`,
    );
    this.copy = db.prepare(
      `INSERT INTO topk_terms (table_id, term, df) SELECT ?, term, doc FROM temp.${table.name}_terms ` +
        'ORDER BY term',
    );
  }

  copyFrequencies(tableId: number): void {
    this.copy.run(tableId);
  }

  /** Each row holding `term`, with [column, instances] in ascending column order. */
  *rowsOf(term: string): Generator<{ row: number; counts: Array<[number, number]> }> {
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
