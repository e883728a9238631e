/**
 * The search store: one SQLite database (search.sqlite, WAL) holding an FTS5 table per collection
 * and settings (fts-table.ts) that every hosted partition indexing the collection with those
 * settings shares, which table each partition uses, and each partition's applied offset, written
 * in the same transaction as the rows it covers. FTS5 tables are contentless (content=''): the
 * text lives once, in LMDB. A row is removed with FTS5's 'delete' command and the text it was
 * indexed with, recomputed from the stored version of the document; that keeps BM25's statistics
 * exact, which contentless_delete=1 does not (its deletes leave row and token totals behind, so
 * scores would depend on a replica's history). Layout in README.md.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import {
  columnTexts,
  DEFAULT_SETTINGS,
  parseSettings,
  SETTINGS_COLLECTION,
} from './collection-settings.js';
import type { ParsedQuery } from './fts-query.js';
import { openFtsTable, offsetOfRow, partitionOfRow, rowOf, type FtsTable } from './fts-table.js';
import { Highlighters } from './highlighter.js';
import type { PartitionChange, PreparedRecord } from './prepared-record.js';

export { MARK_CLOSE, MARK_OPEN } from './highlighter.js';

export const SEARCH_FILE = 'search.sqlite';
/** SQLite's write-ahead log beside the store; a clean close folds it in and removes it. */
export const WAL_SUFFIX = '-wal';
/**
 * `PRAGMA user_version` of this layout. Version 0 (tables per partition and collection) is read
 * by no code: a serve-node finding it replays the log into new stores (outdatedSearchLayout).
 */
const SEARCH_LAYOUT_VERSION = 2;

/** A stored version of a document: what the search store indexed for it. */
export interface DocVersion {
  key: string;
  json: string;
  offset: number;
}

/**
 * The documents as of the record being applied: the search store reads the version it indexed
 * (to delete it) and a partition's documents of a collection (to re-index them) through this.
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
  /** The offset of the version indexed. */
  offset: number;
  score: number;
}

/** Why the search store at `path` cannot be opened by this code, or null when it can. */
export function outdatedSearchLayout(path: string): string | null {
  if (!existsSync(path)) return null;
  const db = new Database(path, { readonly: true });
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const tables = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck();
    if (version === SEARCH_LAYOUT_VERSION || (version === 0 && tables.get() === 0)) return null;
    return `the search store has layout ${version}; this serve-node reads layout ${SEARCH_LAYOUT_VERSION}`;
  } finally {
    db.close();
  }
}

export class SearchStore {
  private readonly db: Database.Database;
  private readonly highlighters: Highlighters;
  private readonly tablesById = new Map<number, FtsTable>();
  /** `partition/collection` → the table the partition indexes the collection in. */
  private readonly tableIdOf = new Map<string, number>();
  private readonly statements: Record<
    | 'applied'
    | 'partitions'
    | 'setApplied'
    | 'tableById'
    | 'tableBySettings'
    | 'insertTable'
    | 'deleteTable'
    | 'partitionTable'
    | 'setPartitionTable'
    | 'tableUsers'
    | 'upsertRow'
    | 'deleteRow',
    Statement
  >;

  /**
   * `noSync`: no fsync at all, not even at WAL checkpoints, for stores behind the replica's
   * unflushed marker (unflushed-marker.ts); otherwise fsync only at checkpoints. Either way a
   * commit is not fsynced: the log can give back whatever a power loss takes (README.md).
   */
  constructor(path: string, options: { noSync: boolean }) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(options.noSync ? 'synchronous = OFF' : 'synchronous = NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS checkpoints (partition INTEGER PRIMARY KEY, applied INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS fts_tables (
        id INTEGER PRIMARY KEY, collection TEXT NOT NULL, settings TEXT NOT NULL,
        UNIQUE (collection, settings));
      CREATE TABLE IF NOT EXISTS partition_tables (
        partition INTEGER NOT NULL, collection TEXT NOT NULL, table_id INTEGER NOT NULL,
        PRIMARY KEY (partition, collection)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS doc_rows (
        table_id INTEGER NOT NULL, key TEXT NOT NULL, row INTEGER NOT NULL,
        PRIMARY KEY (table_id, key)) WITHOUT ROWID;
      CREATE UNIQUE INDEX IF NOT EXISTS doc_rows_by_row ON doc_rows (table_id, row);
      PRAGMA user_version = ${SEARCH_LAYOUT_VERSION};
    `);
    this.highlighters = new Highlighters(this.db);
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      applied: prepare('SELECT applied FROM checkpoints WHERE partition = ?').pluck(),
      partitions: prepare('SELECT partition FROM checkpoints').pluck(),
      setApplied: prepare(
        'INSERT INTO checkpoints (partition, applied) VALUES (?, ?) ' +
          'ON CONFLICT (partition) DO UPDATE SET applied = excluded.applied',
      ),
      tableById: prepare('SELECT id, settings FROM fts_tables WHERE id = ?'),
      tableBySettings: prepare(
        'SELECT id FROM fts_tables WHERE collection = ? AND settings = ?',
      ).pluck(),
      insertTable: prepare('INSERT INTO fts_tables (collection, settings) VALUES (?, ?)'),
      deleteTable: prepare('DELETE FROM fts_tables WHERE id = ?'),
      partitionTable: prepare(
        'SELECT table_id FROM partition_tables WHERE partition = ? AND collection = ?',
      ).pluck(),
      setPartitionTable: prepare(
        'INSERT INTO partition_tables (partition, collection, table_id) VALUES (?, ?, ?) ' +
          'ON CONFLICT (partition, collection) DO UPDATE SET table_id = excluded.table_id',
      ),
      tableUsers: prepare('SELECT count(*) FROM partition_tables WHERE table_id = ?').pluck(),
      upsertRow: prepare(
        'INSERT INTO doc_rows (table_id, key, row) VALUES (?, ?, ?) ' +
          'ON CONFLICT (table_id, key) DO UPDATE SET row = excluded.row',
      ),
      deleteRow: prepare('DELETE FROM doc_rows WHERE table_id = ? AND key = ?'),
    };
  }

  applied(partition: number): number | null {
    const value = this.statements.applied.get(partition) as number | undefined;
    return value ?? null;
  }

  /** Every partition with a checkpoint here. */
  checkpointedPartitions(): number[] {
    return this.statements.partitions.all() as number[];
  }

  /**
   * Applies several partitions' records (each already filtered to offsets >= its checkpoint) in
   * one transaction. `view` gives each partition its view of the documents, which must show them
   * exactly as of this store's checkpoint (the replica applies this store before LMDB so it does).
   */
  applyMany(changes: readonly PartitionChange[], view: () => DocView): void {
    try {
      this.applyInTransaction(changes, view);
    } catch (error) {
      // A rolled-back transaction may have made or moved tables: the caches forget them.
      this.tableIdOf.clear();
      this.tablesById.clear();
      throw error;
    }
  }

  private applyInTransaction(changes: readonly PartitionChange[], view: () => DocView): void {
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
   * The best `depth` matches of one collection in `partitions`, best first (ties by partition,
   * then offset: the same order in every replica), and the number of matches. Partitions that
   * share a table are scored with that table's statistics; during a settings change, partitions
   * the change has not reached yet are in another table, scored with its own.
   */
  search(
    collection: string,
    partitions: readonly number[],
    query: ParsedQuery,
    depth: number,
    totalExactMax: number,
  ): { matches: SearchMatch[]; total: number; totalExact: boolean } {
    const byTable = new Map<FtsTable, number[]>();
    for (const partition of partitions) {
      const table = this.table(partition, collection);
      if (table === undefined) continue;
      const inTable = byTable.get(table);
      if (inTable === undefined) byTable.set(table, [partition]);
      else inTable.push(partition);
    }
    const matches: SearchMatch[] = [];
    let total = 0;
    let totalExact = true;
    for (const [table, inTable] of byTable) {
      const among = JSON.stringify(inTable);
      const rows = table.search.all(query.match, among, depth) as Array<{
        row: number;
        score: number;
        key: string;
      }>;
      for (const { row, score, key } of rows) {
        matches.push({ key, score, partition: partitionOfRow(row), offset: offsetOfRow(row) });
      }
      // Fewer rows than asked for are all the matches: no second pass to count them. Otherwise
      // matches are counted up to totalExactMax, as Elasticsearch's track_total_hits does:
      // counting every match of a common term costs more than the whole top-k search.
      if (rows.length < depth) {
        total += rows.length;
      } else {
        const counted = table.count.get(query.match, among, totalExactMax) as number;
        total += counted;
        if (counted >= totalExactMax) totalExact = false;
      }
    }
    matches.sort((a, b) => b.score - a.score || a.partition - b.partition || a.offset - b.offset);
    return { matches: matches.slice(0, depth), total, totalExact };
  }

  /**
   * For each (hit, field) the field's text, or a snippet of it, with the query's matches marked,
   * tokenized as the partition's table of the collection tokenizes them.
   */
  highlights(
    collection: string,
    partition: number,
    docs: Array<{ doc: unknown }>,
    query: ParsedQuery,
  ): Array<Record<string, string>> {
    const table = this.table(partition, collection);
    if (table === undefined) return docs.map(() => ({}));
    return this.highlighters.mark(table, docs, query);
  }

  /** A consistent copy of the database (SQLite's online backup) at `path`. */
  async backup(path: string): Promise<void> {
    await this.db.backup(path);
  }

  close(): void {
    this.db.close();
  }

  /**
   * `docs` holds a version of a key exactly when this store indexed it (both are as of this
   * store's checkpoint), so it tells, without a lookup here, which row to remove and the text it
   * was indexed with.
   */
  private applyDocument(partition: number, record: PreparedRecord, docs: DocView): void {
    let table = this.table(partition, record.collection);
    if (table === undefined) {
      if (record.json === null) return;
      table = this.tableFor(record.collection, JSON.stringify(DEFAULT_SETTINGS));
      this.setTable(partition, record.collection, table);
    }
    const indexed = docs.get(record.collection, record.key);
    if (indexed !== undefined) {
      const texts = columnTexts(JSON.parse(indexed.json), table.layout);
      table.remove.run(rowOf(partition, indexed.offset), ...texts);
    }
    if (record.json === null) {
      if (indexed !== undefined) this.statements.deleteRow.run(table.id, record.key);
      return;
    }
    const row = rowOf(partition, record.offset);
    this.statements.upsertRow.run(table.id, record.key, row);
    table.insert.run(row, ...columnTexts(record.doc, table.layout));
  }

  /**
   * Moves the partition's documents of the collection to the table of the new settings. A
   * tombstone restores the defaults; an invalid value is ignored, the same way on every replay.
   */
  private applySettings(partition: number, record: PreparedRecord, docs: DocView): void {
    const settings = record.json === null ? DEFAULT_SETTINGS : parseSettings(record.json);
    if (settings === null) return;
    const collection = record.key;
    const previous = this.table(partition, collection);
    const next = this.tableFor(collection, JSON.stringify(settings));
    if (previous === next) return;
    for (const doc of docs.documentsOf(collection, partition)) {
      const row = rowOf(partition, doc.offset);
      const value = JSON.parse(doc.json) as unknown;
      if (previous !== undefined) {
        previous.remove.run(row, ...columnTexts(value, previous.layout));
        this.statements.deleteRow.run(previous.id, doc.key);
      }
      this.statements.upsertRow.run(next.id, doc.key, row);
      next.insert.run(row, ...columnTexts(value, next.layout));
    }
    this.setTable(partition, collection, next);
    if (previous !== undefined && this.statements.tableUsers.get(previous.id) === 0) {
      this.db.exec(`DROP TABLE ${previous.name}`);
      this.statements.deleteTable.run(previous.id);
      this.tablesById.delete(previous.id);
    }
  }

  /** The table the partition indexes the collection in; undefined before its first document. */
  private table(partition: number, collection: string): FtsTable | undefined {
    const cacheKey = `${partition}/${collection}`;
    let id = this.tableIdOf.get(cacheKey);
    if (id === undefined) {
      id = this.statements.partitionTable.get(partition, collection) as number | undefined;
      if (id === undefined) return undefined;
      this.tableIdOf.set(cacheKey, id);
    }
    return this.tableById(id);
  }

  private setTable(partition: number, collection: string, table: FtsTable): void {
    this.statements.setPartitionTable.run(partition, collection, table.id);
    this.tableIdOf.set(`${partition}/${collection}`, table.id);
  }

  private tableById(id: number): FtsTable {
    let table = this.tablesById.get(id);
    if (table === undefined) {
      const row = this.statements.tableById.get(id) as Parameters<typeof openFtsTable>[1];
      table = openFtsTable(this.db, row);
      this.tablesById.set(id, table);
    }
    return table;
  }

  /** The collection's table for these settings, made when no partition has used it yet. */
  private tableFor(collection: string, settingsJson: string): FtsTable {
    const found = this.statements.tableBySettings.get(collection, settingsJson) as
      number | undefined;
    const id =
      found ?? Number(this.statements.insertTable.run(collection, settingsJson).lastInsertRowid);
    return this.tableById(id);
  }
}
