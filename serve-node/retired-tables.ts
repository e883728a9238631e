/**
 * Tables no collection answers from any more (replaced by a re-index, or a build given up), whose
 * rows in the shared B-trees (`doc_rows`, `field_values`, `field_flags`, `sort_values`,
 * `topk_terms`, `topk_segments`, `topk_blocks`, `topk_removed`) are
 * deleted a chunk at a time after their FTS5 table is dropped, so no one transaction deletes a
 * whole collection's rows: on the filters bench's store those deletes were 63 ms of a 105 ms swap
 * for 13,484 documents, and they grow with the collection. (An FTS5 table can only be dropped
 * whole: its shadow tables refuse direct writes.) A retired table's id is never given to a new
 * table while its rows remain.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';

export const RETIRED_TABLES_SCHEMA = `
  CREATE TABLE IF NOT EXISTS retired_tables (table_id INTEGER PRIMARY KEY);
`;

/** Each shared table's rows of one table id, a chunk at a time (by primary key). */
const CHUNK_DELETES = [
  'DELETE FROM doc_rows WHERE table_id = @table AND key IN ' +
    '(SELECT key FROM doc_rows WHERE table_id = @table LIMIT @rows)',
  'DELETE FROM field_values WHERE (table_id, field, kind, value, row) IN ' +
    '(SELECT table_id, field, kind, value, row FROM field_values WHERE table_id = @table LIMIT @rows)',
  'DELETE FROM field_flags WHERE (table_id, field, flag, row) IN ' +
    '(SELECT table_id, field, flag, row FROM field_flags WHERE table_id = @table LIMIT @rows)',
  'DELETE FROM sort_values WHERE (table_id, field, row) IN ' +
    '(SELECT table_id, field, row FROM sort_values WHERE table_id = @table LIMIT @rows)',
  // Blocks and segments before terms: they name their table only through their term.
  'DELETE FROM topk_blocks WHERE (term_id, segment, tf, len, tie) IN ' +
    '(SELECT b.term_id, b.segment, b.tf, b.len, b.tie FROM topk_terms t ' +
    'JOIN topk_blocks b ON b.term_id = t.id WHERE t.table_id = @table LIMIT @rows)',
  'DELETE FROM topk_segments WHERE (term_id, segment) IN ' +
    '(SELECT s.term_id, s.segment FROM topk_terms t ' +
    'JOIN topk_segments s ON s.term_id = t.id WHERE t.table_id = @table LIMIT @rows)',
  'DELETE FROM topk_removed WHERE (table_id, row) IN ' +
    '(SELECT table_id, row FROM topk_removed WHERE table_id = @table LIMIT @rows)',
  'DELETE FROM topk_terms WHERE id IN ' +
    '(SELECT id FROM topk_terms WHERE table_id = @table LIMIT @rows)',
];

export class RetiredTables {
  /** Whether a retired table may still have rows: false skips the lookup on every step. */
  private pending: boolean;
  private readonly statements: {
    add: Statement;
    first: Statement;
    remove: Statement;
    nextId: Statement;
    chunks: Statement[];
  };

  /** The tables it deletes from must exist (the search store and field-index.ts make them). */
  constructor(db: Database.Database) {
    db.exec(RETIRED_TABLES_SCHEMA);
    this.statements = {
      add: db.prepare('INSERT OR IGNORE INTO retired_tables (table_id) VALUES (?)'),
      first: db.prepare('SELECT table_id FROM retired_tables ORDER BY table_id LIMIT 1').pluck(),
      remove: db.prepare('DELETE FROM retired_tables WHERE table_id = ?'),
      nextId: db
        .prepare(
          'SELECT max(coalesce((SELECT max(id) FROM fts_tables), 0), ' +
            'coalesce((SELECT max(table_id) FROM retired_tables), 0)) + 1',
        )
        .pluck(),
      chunks: CHUNK_DELETES.map((sql) => db.prepare(sql)),
    };
    this.pending = this.statements.first.get() !== undefined;
  }

  /** Marks a table's rows for deleting; its FTS5 table and fts_tables row are gone already. */
  retire(tableId: number): void {
    this.statements.add.run(tableId);
    this.pending = true;
  }

  /** False once no retired table is left (then a step costs no transaction). */
  mayHaveRows(): boolean {
    return this.pending;
  }

  /** An id no table has, retired ones included. */
  nextTableId(): number {
    return this.statements.nextId.get() as number;
  }

  /**
   * Deletes rows of the first retired table, `chunkRows` of a shared table at a time, until
   * `deadlineMs` (performance.now()) passes (one chunk at least) or none are left, when the
   * table stops being retired. Returns the rows deleted, or null when no table is retired.
   */
  deleteSome(chunkRows: number, deadlineMs: number): number | null {
    if (!this.pending) return null;
    const tableId = this.statements.first.get() as number | undefined;
    if (tableId === undefined) {
      this.pending = false;
      return null;
    }
    let deleted = 0;
    for (const chunk of this.statements.chunks) {
      for (;;) {
        const { changes } = chunk.run({ table: tableId, rows: chunkRows });
        deleted += changes;
        if (changes < chunkRows) break;
        if (performance.now() >= deadlineMs) return deleted;
      }
    }
    this.statements.remove.run(tableId);
    return deleted;
  }
}
