/**
 * The search store: one SQLite database (search.sqlite, WAL) holding an FTS5 table per collection
 * and partition, the settings each was built with, and each partition's applied offset, written in
 * the same transaction as the rows it covers. FTS5 tables are contentless (content=''): the text
 * lives once, in LMDB. A row is removed with FTS5's 'delete' command and the text it was indexed
 * with, recomputed from the stored version of the document; that keeps BM25's statistics exact,
 * which contentless_delete=1 does not (its deletes leave row and token totals behind, so scores
 * would depend on a replica's history). Highlights re-tokenize the hits' fields in a temporary
 * table. Layout in README.md.
 */
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import {
  columnLayout,
  columnTexts,
  DEFAULT_SETTINGS,
  parseSettings,
  searchableFields,
  SETTINGS_COLLECTION,
  TOKENIZERS,
  type CollectionSettings,
  type ColumnLayout,
} from './collection-settings.js';
import type { ParsedQuery } from './fts-query.js';
import type { PartitionChange, PreparedRecord } from './prepared-record.js';

export const SEARCH_FILE = 'search.sqlite';
/** Matches are wrapped in these in highlights. */
export const MARK_OPEN = '<mark>';
export const MARK_CLOSE = '</mark>';
/** Tokens of context a highlight keeps around the matches of a long field (FTS5 allows <= 64). */
const SNIPPET_TOKENS = 24;

/** A stored version of a document: what the search store indexed for it. */
export interface DocVersion {
  key: string;
  json: string;
  offset: number;
}

/**
 * The documents as of the record being applied: the search store reads the version it indexed
 * (to delete it) and a collection's documents (to re-index it) through this.
 */
export interface DocView {
  get(collection: string, key: string): DocVersion | undefined;
  documentsOf(collection: string, partition: number): Iterable<DocVersion>;
  /** Called after each record is applied, so later records of the same batch see it. */
  advance(record: PreparedRecord): void;
}

export interface SearchMatch {
  key: string;
  partition: number;
  /** The offset of the version indexed (its FTS5 rowid). */
  offset: number;
  score: number;
}

interface FtsTable {
  id: number;
  name: string;
  settings: CollectionSettings;
  layout: ColumnLayout;
  insert: Statement;
  remove: Statement;
  search: Statement;
  count: Statement;
}

export class SearchStore {
  private readonly db: Database.Database;
  private readonly tables = new Map<string, FtsTable>();
  /** Per tokenizer: a temp FTS5 table that highlights one answer's fields, and its statements. */
  private readonly highlighters = new Map<
    string,
    { insert: Statement; select: Statement; clear: Statement }
  >();
  private readonly statements: {
    applied: Statement;
    setApplied: Statement;
    tableRow: Statement;
    insertTable: Statement;
    updateTable: Statement;
    upsertRow: Statement;
    deleteRow: Statement;
    deleteRowsOf: Statement;
  };

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // No fsync per commit: the log can give back whatever a power loss takes (README.md).
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS checkpoints (partition INTEGER PRIMARY KEY, applied INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS fts_tables (
        id INTEGER PRIMARY KEY, partition INTEGER NOT NULL, collection TEXT NOT NULL,
        settings TEXT NOT NULL, UNIQUE (partition, collection));
      CREATE TABLE IF NOT EXISTS doc_rows (
        table_id INTEGER NOT NULL, key TEXT NOT NULL, row INTEGER NOT NULL,
        PRIMARY KEY (table_id, key)) WITHOUT ROWID;
      CREATE UNIQUE INDEX IF NOT EXISTS doc_rows_by_row ON doc_rows (table_id, row);
    `);
    this.statements = {
      applied: this.db.prepare('SELECT applied FROM checkpoints WHERE partition = ?').pluck(),
      setApplied: this.db.prepare(
        'INSERT INTO checkpoints (partition, applied) VALUES (?, ?) ' +
          'ON CONFLICT (partition) DO UPDATE SET applied = excluded.applied',
      ),
      tableRow: this.db.prepare(
        'SELECT id, settings FROM fts_tables WHERE partition = ? AND collection = ?',
      ),
      insertTable: this.db.prepare(
        'INSERT INTO fts_tables (partition, collection, settings) VALUES (?, ?, ?)',
      ),
      updateTable: this.db.prepare('UPDATE fts_tables SET settings = ? WHERE id = ?'),
      upsertRow: this.db.prepare(
        'INSERT INTO doc_rows (table_id, key, row) VALUES (?, ?, ?) ' +
          'ON CONFLICT (table_id, key) DO UPDATE SET row = excluded.row',
      ),
      deleteRow: this.db.prepare('DELETE FROM doc_rows WHERE table_id = ? AND key = ?'),
      deleteRowsOf: this.db.prepare('DELETE FROM doc_rows WHERE table_id = ?'),
    };
  }

  applied(partition: number): number | null {
    const value = this.statements.applied.get(partition) as number | undefined;
    return value ?? null;
  }

  /**
   * Applies several partitions' records (each already filtered to offsets >= its checkpoint) in
   * one transaction. `view` gives each partition its view of the documents, which must show them
   * exactly as of this store's checkpoint (the replica applies this store before LMDB so it does).
   */
  applyMany(changes: readonly PartitionChange[], view: () => DocView): void {
    this.db.transaction(() => {
      for (const { partition, records, nextOffset } of changes) {
        const docs = view();
        for (const record of records) {
          if (record.collection === SETTINGS_COLLECTION) {
            this.applySettings(partition, record, docs);
          } else {
            this.applyDocument(partition, record, docs);
          }
          docs.advance(record);
        }
        this.statements.setApplied.run(partition, nextOffset);
      }
    })();
  }

  /**
   * Matches of one collection across partitions, best first (ties by partition, then offset: the
   * same order in every replica), and their count.
   */
  search(
    collection: string,
    partitions: readonly number[],
    query: ParsedQuery,
    depth: number,
  ): { matches: SearchMatch[]; total: number } {
    const matches: SearchMatch[] = [];
    let total = 0;
    for (const partition of partitions) {
      const table = this.table(partition, collection, false);
      if (table === undefined) continue;
      const rows = table.search.all(query.match, depth) as Array<Omit<SearchMatch, 'partition'>>;
      for (const row of rows) matches.push({ ...row, partition });
      // Fewer rows than asked for are all the matches: no second pass to count them.
      total += rows.length < depth ? rows.length : (table.count.get(query.match) as number);
    }
    matches.sort((a, b) => b.score - a.score || a.partition - b.partition || a.offset - b.offset);
    return { matches, total };
  }

  /**
   * For each (hit, field) the field's text, or a snippet of it, with the query's matches marked,
   * tokenized as the collection's table tokenizes them.
   */
  highlights(
    collection: string,
    partition: number,
    docs: Array<{ doc: unknown }>,
    query: ParsedQuery,
  ): Array<Record<string, string>> {
    const table = this.table(partition, collection, false);
    const result = docs.map(() => ({}) as Record<string, string>);
    if (table === undefined) return result;
    const highlighter = this.highlighter(table.settings.tokenizer);
    const fields: Array<{ hit: number; path: string }> = [];
    try {
      docs.forEach(({ doc }, hit) => {
        for (const field of searchableFields(doc, table.layout)) {
          highlighter.insert.run(fields.length, field.text);
          fields.push({ hit, path: field.path });
        }
      });
      const rows = highlighter.select.all(MARK_OPEN, MARK_CLOSE, query.highlightMatch) as Array<{
        id: number;
        text: string;
      }>;
      for (const row of rows) {
        const field = fields[row.id];
        result[field.hit][field.path] ??= row.text;
      }
    } finally {
      highlighter.clear.run();
    }
    return result;
  }

  /** Made once per tokenizer, not on every search: the table and its statements never change. */
  private highlighter(tokenizer: string) {
    let highlighter = this.highlighters.get(tokenizer);
    if (highlighter === undefined) {
      const name = `highlight_${TOKENIZERS.indexOf(tokenizer as (typeof TOKENIZERS)[number])}`;
      this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${name} USING fts5(text, tokenize = '${tokenizer}')`,
      );
      highlighter = {
        insert: this.db.prepare(`INSERT INTO temp.${name} (rowid, text) VALUES (?, ?)`),
        select: this.db.prepare(
          `SELECT rowid AS id, snippet(${name}, 0, ?, ?, '…', ${SNIPPET_TOKENS}) AS text ` +
            `FROM temp.${name} WHERE ${name} MATCH ?`,
        ),
        clear: this.db.prepare(`DELETE FROM temp.${name}`),
      };
      this.highlighters.set(tokenizer, highlighter);
    }
    return highlighter;
  }

  /** A consistent copy of the database (SQLite's online backup) at `path`. */
  async backup(path: string): Promise<void> {
    await this.db.backup(path);
  }

  close(): void {
    this.db.close();
  }

  /**
   * A document's FTS5 rowid is the offset of the version indexed: the same in every replica, so
   * ties in score break the same way everywhere. `docs` holds a version of a key exactly when
   * this table indexed it (both are as of this store's checkpoint), so it tells, without a
   * lookup here, which row to remove and the text it was indexed with.
   */
  private applyDocument(partition: number, record: PreparedRecord, docs: DocView): void {
    const table = this.table(partition, record.collection, record.json !== null);
    if (table === undefined) return;
    const indexed = docs.get(record.collection, record.key);
    if (indexed !== undefined) {
      table.remove.run(indexed.offset, ...columnTexts(JSON.parse(indexed.json), table.layout));
    }
    if (record.json === null) {
      if (indexed !== undefined) this.statements.deleteRow.run(table.id, record.key);
      return;
    }
    this.statements.upsertRow.run(table.id, record.key, record.offset);
    table.insert.run(record.offset, ...columnTexts(record.doc, table.layout));
  }

  private applySettings(partition: number, record: PreparedRecord, docs: DocView): void {
    // A tombstone restores the defaults; an invalid value is ignored, the same way on every replay.
    const settings = record.json === null ? DEFAULT_SETTINGS : parseSettings(record.json);
    if (settings === null) return;
    const collection = record.key;
    const previous = this.table(partition, collection, false);
    if (previous !== undefined) {
      this.db.exec(`DROP TABLE ${previous.name}`);
      this.statements.deleteRowsOf.run(previous.id);
      this.statements.updateTable.run(JSON.stringify(settings), previous.id);
      this.tables.delete(`${partition}/${collection}`);
    } else {
      this.statements.insertTable.run(partition, collection, JSON.stringify(settings));
    }
    const table = this.table(partition, collection, false);
    if (table === undefined) return;
    for (const doc of docs.documentsOf(collection, partition)) {
      this.statements.upsertRow.run(table.id, doc.key, doc.offset);
      table.insert.run(doc.offset, ...columnTexts(JSON.parse(doc.json), table.layout));
    }
  }

  /** The collection's FTS5 table in a partition; made with default settings when `create`. */
  private table(partition: number, collection: string, create: boolean): FtsTable | undefined {
    const cacheKey = `${partition}/${collection}`;
    const cached = this.tables.get(cacheKey);
    if (cached !== undefined) return cached;
    let row = this.statements.tableRow.get(partition, collection) as
      { id: number; settings: string } | undefined;
    if (row === undefined) {
      if (!create) return undefined;
      const settings = JSON.stringify(DEFAULT_SETTINGS);
      const id = Number(
        this.statements.insertTable.run(partition, collection, settings).lastInsertRowid,
      );
      row = { id, settings };
    }
    const settings = JSON.parse(row.settings) as CollectionSettings;
    const layout = columnLayout(settings);
    const name = `fts_${row.id}`;
    const columns = layout.weights.map((_, i) => `c${i}`);
    // Settings were validated on parse: the tokenizer is one of TOKENIZERS, never user text.
    this.db.exec(
      `CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING fts5(${columns.join(', ')}, ` +
        `content = '', tokenize = '${settings.tokenizer}')`,
    );
    const table: FtsTable = {
      id: row.id,
      name,
      settings,
      layout,
      insert: this.db.prepare(
        `INSERT INTO ${name} (rowid, ${columns.join(', ')}) VALUES (?, ${columns.map(() => '?').join(', ')})`,
      ),
      remove: this.db.prepare(
        `INSERT INTO ${name} (${name}, rowid, ${columns.join(', ')}) ` +
          `VALUES ('delete', ?, ${columns.map(() => '?').join(', ')})`,
      ),
      // Keys are looked up for the page only, not for every match.
      search: this.db.prepare(
        'SELECT m.row AS offset, m.score AS score, r.key AS key FROM ' +
          `(SELECT rowid AS row, -bm25(${name}, ${layout.weights.join(', ')}) AS score ` +
          `FROM ${name} WHERE ${name} MATCH ? ORDER BY score DESC, rowid LIMIT ?) m ` +
          `JOIN doc_rows r ON r.table_id = ${row.id} AND r.row = m.row ORDER BY m.score DESC, m.row`,
      ),
      count: this.db.prepare(`SELECT count(*) FROM ${name} WHERE ${name} MATCH ?`).pluck(),
    };
    this.tables.set(cacheKey, table);
    return table;
  }
}
