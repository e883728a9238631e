/**
 * The search store: one SQLite database (search.sqlite, WAL) holding an FTS5 table per collection
 * (fts-table.ts), made for the collection's latest settings and shared by every hosted partition,
 * and each tailed topic-partition's applied offset, written in the same transaction as the rows it
 * covers. FTS5 tables are contentless (content=''): the
 * text lives once, in LMDB. A row is removed with FTS5's 'delete' command and the text it was
 * indexed with, recomputed from the stored version of the document; that keeps BM25's statistics
 * exact, which contentless_delete=1 does not (its deletes leave row and token totals behind, so
 * scores would depend on a replica's history). Layout in README.md.
 *
 * This module writes: applying records, re-index builds (table-builds.ts), retired tables
 * (retired-tables.ts) and segment merges (segment-merges.ts). Reads are search-reads.ts's.
 */
import { existsSync } from 'node:fs';
import { assert } from '../shared/assert.js';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { TopicPartition } from '../shared/log-api.js';
import { isCollectionTopic, SETTINGS_TOPIC } from '../shared/topics.js';
import {
  type CollectionSettings,
  columnTexts,
  DEFAULT_SETTINGS,
  parseSettings,
} from './collection-settings.js';
import { FieldIndex } from './field-index.js';
import type { ParsedQuery } from './fts-query.js';
import {
  ftsWriteConfig,
  openFtsTable,
  rowOf,
  type FtsTable,
  type FtsWriteConfig,
} from './fts-table.js';
import { Highlighters } from './highlighter.js';
import { RetiredTables } from './retired-tables.js';
import { FreePages, type FreePagesStep } from './free-pages.js';
import {
  SegmentMerges,
  type CollectionMergeStep,
  type MergePolicy,
  type MergeWait,
} from './segment-merges.js';
import { SearchReads } from './search-reads.js';
import { searchCollectionBytes } from './search-bytes.js';
import { TableBuilds, type TableBuild } from './table-builds.js';
import { DEFAULT_LIMITS } from './config.js';
import { TopkIndex, type TopkMergeStep } from './topk-index.js';
import type { PartitionChange, PreparedRecord } from './prepared-record.js';

export { MARK_CLOSE, MARK_OPEN } from './highlighter.js';

export const SEARCH_FILE = 'search.sqlite';
/** SQLite's write-ahead log beside the store; a clean close folds it in and removes it. */
export const WAL_SUFFIX = '-wal';
/**
 * `PRAGMA user_version` of this layout. Versions 0 (tables per partition and collection), 2
 * (checkpoints per partition, tables per partition and settings) and 3 (no field indexes) are
 * read by no code: a serve-node finding one replays the log into new stores
 * (outdatedSearchLayout). Version 4 (no `table_builds`: settings re-indexed in the apply
 * transaction) is opened and upgraded in place, as it only lacks that table; a serve-node of
 * version 4 finding version 5 replays instead of ignoring a re-index under way. Versions 4 and 5
 * lack the top-k lists (topk-index.ts), which opening builds from the FTS5 tables; a serve-node
 * of version 5 finding version 6 replays rather than leave the lists behind its writes. Version 6
 * kept each posting's term text where 7 keeps a term id, and 7 a B-tree entry a posting where 8
 * packs them into blocks: opening either drops its lists and builds them again; a serve-node of
 * version 6 finding version 7, or of 7 finding 8, replays. Version 8 kept every term's document
 * frequency where 9 keeps the listed terms' (the others are FTS5's): opening drops the others'
 * rows; a serve-node of version 8 finding version 9 replays rather than read a missing row as a
 * term in no row. The version is the LMDB store's beside it too (doc-store.ts has none): version
 * 9 held each collection's documents in one key space, where 10 moves it to the next at each
 * drop; opening 9 reads it as key space 0 (DocStore.upgradeDroppingMarks); a serve-node of
 * version 9 finding version 10 replays rather than read a collection created again after a drop
 * as empty. Versions 8 to 10 kept each term's list in one set of blocks, rewritten a block a
 * posting, where 11 keeps it in segments (topk-segments.ts) and removed rows apart
 * (topk-removed.ts): opening drops the lists and builds them again; a serve-node of version 10
 * finding version 11 replays rather than miss the segments' postings.
 */
const SEARCH_LAYOUT_VERSION = 11;
const SEARCH_LAYOUTS_UPGRADED = [4, 5, 6, 7, 8, 9, 10];

/** One connection's memory bounds as SQLite says them (PRAGMA cache_size and mmap_size). */
export interface SqliteConnectionMemory {
  cacheBytesMax: number;
  mmapBytesMax: number;
}

/** A stored version of a document: what the search store indexed for it. */
export interface DocVersion {
  key: string;
  json: string;
  offset: number;
  partition: number;
}

/**
 * The documents as of the record being applied: the search store reads the version it indexed of
 * a key (to delete it) through this.
 */
export interface DocView {
  get(collection: string, key: string): DocVersion | undefined;
  /** Called after each document record is applied, so later records of the answer see it. */
  advance(record: PreparedRecord): void;
}

export interface SearchStoreOptions {
  /** Rows a term must be in to have a top-k list (ServeNodeLimits.searchTopkListedDfMin). */
  topkListedDfMin: number;
  /** Terms whose document frequency the writer keeps in memory (ServeNodeLimits.searchTopkKnownTermsMax). */
  topkKnownTermsMax?: number;
  /** Segments of a tier of a term's list merged into one (ServeNodeLimits.searchTopkMergeSegments). */
  topkMergeSegmentsMin?: number;
  /** FTS5's `automerge` of the tables this writer opens (ServeNodeLimits.ftsAutomergeSegments). */
  automergeSegments?: number;
  /** This connection's page cache (ServeNodeLimits.sqliteCacheBytesMax); absent: SQLite's. */
  cacheBytesMax?: number;
  /** This connection's memory map (ServeNodeLimits.sqliteMmapBytesMax); absent: SQLite's. */
  mmapBytesMax?: number;
  /** The WAL file's length kept after a checkpoint (ServeNodeLimits.sqliteWalBytesKeptMax). */
  walBytesKeptMax?: number;
  /**
   * A read thread's handle on the writer's store: it builds no top-k lists (a reader's limit may
   * differ from the writer's, and only the writer may rebuild them); its searches follow the limit
   * the writer stored.
   */
  reader?: boolean;
}

/** Rows of a shared table deleted at a time for a retired table (retired-tables.ts). */
const RETIRED_ROWS_CHUNK = 1_000;

/** Why the search store at `path` cannot be opened by this code, or null when it can. */
export function outdatedSearchLayout(path: string): string | null {
  if (!existsSync(path)) return null;
  const db = new Database(path, { readonly: true });
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const tables = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck();
    if (version === SEARCH_LAYOUT_VERSION || SEARCH_LAYOUTS_UPGRADED.includes(version)) return null;
    if (version === 0 && tables.get() === 0) return null;
    return `the search store has layout ${version}; this serve-node reads layout ${SEARCH_LAYOUT_VERSION}`;
  } finally {
    db.close();
  }
}

export class SearchStore {
  private readonly db: Database.Database;
  private readonly highlighters: Highlighters;
  private readonly fields: FieldIndex;
  private readonly builds: TableBuilds;
  private readonly retired: RetiredTables;
  private readonly merges: SegmentMerges;
  private readonly freePages: FreePages;
  private readonly topk: TopkIndex;
  /** Searches, facets and scans (search-reads.ts). */
  readonly reads: SearchReads;
  private readonly tablesById = new Map<number, FtsTable>();
  /** collection → the table it is indexed in. */
  private readonly tableIdOf = new Map<string, number>();
  /** `PRAGMA data_version`: moves when another connection commits (followWriter). */
  private readonly dataVersion: Statement;
  private seenDataVersion = -1;
  /** What openFtsTable sets of each table's FTS5 configuration: only a writer sets any. */
  private readonly ftsConfig: FtsWriteConfig | null;
  private readonly statements: Record<
    | 'applied'
    | 'partitions'
    | 'setApplied'
    | 'tableById'
    | 'tableBySettings'
    | 'insertTable'
    | 'deleteTable'
    | 'tableCollection'
    | 'collectionTable'
    | 'setCollectionTable'
    | 'upsertRow'
    | 'deleteRow',
    Statement
  >;

  /**
   * WAL with `synchronous=NORMAL`: a commit is not fsynced, and a power loss keeps a prefix of the
   * commits whole (the WAL's frames are checksummed in a chain). Automatic checkpoints are off, as
   * the one commit in ~80 that ran one with an fsync held the event loop 5.9-8.3 ms: flush()
   * checkpoints (and fsyncs) on the replica's interval instead.
   */
  constructor(
    path: string,
    options: SearchStoreOptions = { topkListedDfMin: DEFAULT_LIMITS.searchTopkListedDfMin },
  ) {
    this.db = new Database(path);
    this.ftsConfig =
      options.reader === true
        ? null
        : ftsWriteConfig(options.automergeSegments ?? DEFAULT_LIMITS.ftsAutomergeSegments);
    // Set before anything creates the file's first table: SQLite takes it only then (free-pages.ts).
    if (options.reader !== true) this.db.pragma('auto_vacuum = INCREMENTAL');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('wal_autocheckpoint = 0');
    // The WAL file keeps the length of its largest run of commits between checkpoints (92 MB
    // during a bulk load of 10^5 scale documents) unless it is cut back when it starts over.
    if (options.walBytesKeptMax !== undefined) {
      this.db.pragma(`journal_size_limit = ${Math.floor(options.walBytesKeptMax)}`);
    }
    // Negative: a size in KiB rather than in pages.
    if (options.cacheBytesMax !== undefined) {
      this.db.pragma(`cache_size = ${-Math.ceil(options.cacheBytesMax / 1024)}`);
    }
    if (options.mmapBytesMax !== undefined) {
      this.db.pragma(`mmap_size = ${Math.floor(options.mmapBytesMax)}`);
    }
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS checkpoints (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, applied INTEGER NOT NULL,
        PRIMARY KEY (topic, partition)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS fts_tables (
        id INTEGER PRIMARY KEY, collection TEXT NOT NULL, settings TEXT NOT NULL,
        UNIQUE (collection, settings));
      CREATE TABLE IF NOT EXISTS collection_tables (
        collection TEXT PRIMARY KEY, table_id INTEGER NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS doc_rows (
        table_id INTEGER NOT NULL, key TEXT NOT NULL, row INTEGER NOT NULL,
        PRIMARY KEY (table_id, key)) WITHOUT ROWID;
      CREATE UNIQUE INDEX IF NOT EXISTS doc_rows_by_row ON doc_rows (table_id, row);
    `);
    this.highlighters = new Highlighters(this.db);
    this.fields = new FieldIndex(this.db);
    this.builds = new TableBuilds(this.db);
    // Before RetiredTables, which deletes from its tables.
    this.topk = new TopkIndex(
      this.db,
      options.topkListedDfMin,
      options.topkKnownTermsMax ?? DEFAULT_LIMITS.searchTopkKnownTermsMax,
      options.topkMergeSegmentsMin ?? DEFAULT_LIMITS.searchTopkMergeSegments,
      options.reader !== true,
    );
    this.retired = new RetiredTables(this.db);
    // Once every table of the layout is there (a version-4 store gains table_builds and
    // retired_tables here).
    this.db.pragma(`user_version = ${SEARCH_LAYOUT_VERSION}`);
    this.reads = new SearchReads(this.db, (collection) => this.table(collection));
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      applied: prepare('SELECT applied FROM checkpoints WHERE topic = ? AND partition = ?').pluck(),
      partitions: prepare('SELECT topic, partition FROM checkpoints'),
      setApplied: prepare(
        'INSERT INTO checkpoints (topic, partition, applied) VALUES (?, ?, ?) ' +
          'ON CONFLICT (topic, partition) DO UPDATE SET applied = excluded.applied',
      ),
      tableById: prepare('SELECT id, settings FROM fts_tables WHERE id = ?'),
      tableBySettings: prepare(
        'SELECT id FROM fts_tables WHERE collection = ? AND settings = ?',
      ).pluck(),
      insertTable: prepare('INSERT INTO fts_tables (id, collection, settings) VALUES (?, ?, ?)'),
      deleteTable: prepare('DELETE FROM fts_tables WHERE id = ?'),
      tableCollection: prepare('SELECT collection FROM fts_tables WHERE id = ?').pluck(),
      collectionTable: prepare(
        'SELECT table_id FROM collection_tables WHERE collection = ?',
      ).pluck(),
      setCollectionTable: prepare(
        'INSERT INTO collection_tables (collection, table_id) VALUES (?, ?) ' +
          'ON CONFLICT (collection) DO UPDATE SET table_id = excluded.table_id',
      ),
      upsertRow: prepare(
        'INSERT INTO doc_rows (table_id, key, row) VALUES (?, ?, ?) ' +
          'ON CONFLICT (table_id, key) DO UPDATE SET row = excluded.row',
      ),
      deleteRow: prepare('DELETE FROM doc_rows WHERE table_id = ? AND key = ?'),
    };
    this.dataVersion = this.db.prepare('SELECT data_version FROM pragma_data_version').pluck();
    const tableIds = this.db.prepare('SELECT id FROM fts_tables').pluck().all() as number[];
    this.merges = new SegmentMerges(this.db, tableIds);
    this.freePages = new FreePages(this.db);
    if (options.reader !== true) this.topk.open(tableIds.map((id) => this.tableById(id)));
  }

  applied(topic: string, partition: number): number | null {
    const value = this.statements.applied.get(topic, partition) as number | undefined;
    return value ?? null;
  }

  /** Every topic-partition with a checkpoint here. */
  checkpointed(): TopicPartition[] {
    return this.statements.partitions.all() as TopicPartition[];
  }

  /**
   * Applies several topic-partitions' records (each already filtered to offsets >= its
   * checkpoint) in one transaction. `docs` is the view of the documents, which must show them
   * exactly as of this store's checkpoints (the replica applies this store before LMDB so it does).
   */
  applyMany(changes: readonly PartitionChange[], docs: DocView): void {
    try {
      this.applyInTransaction(changes, docs);
    } catch (error) {
      this.forgetCaches();
      throw error;
    }
  }

  /**
   * For a connection that only reads (a read thread's): once another connection has committed
   * since the last call, memory forgets what it holds of tables and builds, which that commit may
   * have made, swapped or retired (a table id is reused after a dropped build).
   */
  followWriter(): void {
    const version = this.dataVersion.get() as number;
    if (version === this.seenDataVersion) return;
    this.seenDataVersion = version;
    this.forgetCaches();
  }

  /** A rolled-back transaction may have made or moved tables, or builds: memory forgets them. */
  private forgetCaches(): void {
    this.tableIdOf.clear();
    this.tablesById.clear();
    this.builds.reload();
    this.topk.forget();
  }

  private applyInTransaction(changes: readonly PartitionChange[], docs: DocView): void {
    this.db.transaction(() => {
      for (const { topic, partition, records, nextOffset } of changes) {
        if (topic === SETTINGS_TOPIC) {
          for (const record of records) this.applySettings(record);
        } else {
          for (const record of records) {
            this.applyDocument(record, docs);
            docs.advance(record);
          }
        }
        this.statements.setApplied.run(topic, partition, nextOffset);
      }
      this.topk.settle();
    })();
  }

  /** What the top-k lists' writer holds of terms in memory (TopkIndex.knownTermsHeld). */
  topkKnownTermsHeld(): ReturnType<TopkIndex['knownTermsHeld']> {
    return this.topk.knownTermsHeld();
  }

  /**
   * `read` in one read transaction: its statements (a list's runs and blocks, its removed rows,
   * FTS5's rows, the keys) see one commit, where each alone would see the latest, and a merge
   * committed between two of them would give a row twice or a removed row back. A read
   * connection's caches follow that commit first (followWriter).
   */
  private inSnapshot<T>(read: () => T): T {
    return this.db
      .transaction(() => {
        if (this.ftsConfig === null) this.followWriter();
        return read();
      })
      .deferred();
  }

  /** SearchReads.search: the best matches of a query and their number. */
  search(...args: Parameters<SearchReads['search']>): ReturnType<SearchReads['search']> {
    return this.inSnapshot(() => this.reads.search(...args));
  }

  /** SearchReads.facets: the count of each value of some fields over a query's matches. */
  facets(...args: Parameters<SearchReads['facets']>): ReturnType<SearchReads['facets']> {
    return this.inSnapshot(() => this.reads.facets(...args));
  }

  /** SearchReads.scanKeys: the keys of a filtered or sorted scan. */
  scanKeys(...args: Parameters<SearchReads['scanKeys']>): ReturnType<SearchReads['scanKeys']> {
    return this.inSnapshot(() => this.reads.scanKeys(...args));
  }

  /** The settings the collection is indexed with (the defaults before any). */
  settingsOf(collection: string): CollectionSettings {
    return this.table(collection)?.settings ?? DEFAULT_SETTINGS;
  }

  /**
   * For each (hit, field) the field's text, or a snippet of it, with the query's matches marked,
   * tokenized as the collection's table tokenizes them.
   */
  highlights(
    collection: string,
    docs: Array<{ doc: unknown }>,
    query: ParsedQuery,
  ): Array<Record<string, string>> {
    const table = this.table(collection);
    if (table === undefined) return docs.map(() => ({}));
    return this.highlighters.mark(table, docs, query);
  }

  /** This connection's page cache and memory map bounds, read back from SQLite. */
  connectionMemory(): SqliteConnectionMemory {
    const cacheSize = this.db.pragma('cache_size', { simple: true }) as number;
    const pageBytes = this.db.pragma('page_size', { simple: true }) as number;
    return {
      cacheBytesMax: cacheSize < 0 ? -cacheSize * 1024 : cacheSize * pageBytes,
      mmapBytesMax: this.db.pragma('mmap_size', { simple: true }) as number,
    };
  }

  /** Each collection's bytes in this store (search-bytes.ts). */
  collectionBytes(): Map<string, number> {
    return searchCollectionBytes(this.db);
  }

  /** A consistent copy of the database (SQLite's online backup) at `path`. */
  async backup(path: string): Promise<void> {
    await this.db.backup(path);
  }

  /**
   * Makes every commit so far durable: a checkpoint fsyncs the WAL, copies it into the database
   * file and fsyncs that. PASSIVE: it never waits for the read threads' connections; frames one of
   * them still reads are copied at a later flush, and the WAL restarts once none reads it.
   */
  flush(): void {
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /**
   * Empties the WAL file when no read thread's connection holds a snapshot in it: the WAL is cut
   * back (journal_size_limit) only by the first commit after it starts over, so a store that
   * stopped writing keeps its last second of commits on disk (12 MiB after a load of 10^4 scale
   * documents) until its next write. TRUNCATE waits for readers through the busy handler: with
   * it at 0 the checkpoint answers busy at once instead, and the next idle flush tries again.
   * Whether the WAL is empty now.
   */
  trimWal(): boolean {
    const busyMs = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      const [{ busy }] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      return busy === 0;
    } finally {
      this.db.pragma(`busy_timeout = ${busyMs}`);
    }
  }

  close(): void {
    this.db.close();
  }

  /**
   * `docs` holds a version of a key exactly when this store indexed it (both are as of this
   * store's checkpoint), so it tells, without a lookup here, which row to remove and the text it
   * was indexed with. A collection being re-indexed gets the write in its new table too when the
   * build has copied the key already (table-builds.ts).
   */
  private applyDocument(record: PreparedRecord, docs: DocView): void {
    let table = this.table(record.collection);
    if (table === undefined) {
      if (record.json === null) return;
      table = this.tableFor(record.collection, JSON.stringify(DEFAULT_SETTINGS));
      this.setTable(record.collection, table);
    }
    const indexed = docs.get(record.collection, record.key);
    const old =
      indexed === undefined
        ? undefined
        : {
            row: rowOf(indexed.partition, indexed.offset),
            doc: JSON.parse(indexed.json) as unknown,
          };
    this.replaceVersion(table, record, old);
    const build = this.builds.of(record.collection);
    if (build !== undefined && this.builds.covers(build, record.key)) {
      this.replaceVersion(this.tableById(build.tableId), record, old);
    }
  }

  /** Removes `old` (the version `table` holds of the record's key, if any), indexes the record. */
  private replaceVersion(
    table: FtsTable,
    record: PreparedRecord,
    old: { row: number; doc: unknown } | undefined,
  ): void {
    this.merges.wrote(table.id);
    if (old !== undefined) {
      const texts = columnTexts(old.doc, table.layout);
      table.remove.run(old.row, ...texts);
      this.topk.changed(table, old.row, texts, false);
      this.fields.remove(table.id, table.settings, old.row, old.doc);
    }
    if (record.json === null) {
      if (old !== undefined) this.statements.deleteRow.run(table.id, record.key);
      return;
    }
    this.index(table, record.key, rowOf(record.partition, record.offset), record.doc);
  }

  private index(table: FtsTable, key: string, row: number, doc: unknown): void {
    this.statements.upsertRow.run(table.id, key, row);
    const texts = columnTexts(doc, table.layout);
    table.insert.run(row, ...texts);
    this.topk.changed(table, row, texts, true);
    this.fields.add(table.id, table.settings, row, doc);
  }

  /**
   * A settings record (key = the collection): starts the build of a table of the new settings,
   * which copyIntoBuild fills with the collection's documents of every hosted partition and then
   * swaps in (table-builds.ts); until then the collection answers from its current table. The
   * settings topic and the collection topics are not ordered with each other, so the index must
   * be a function of the latest settings and the documents, whatever the interleaving: a build
   * copying everything gives exactly that. A build under way towards other settings is dropped;
   * settings equal to the current table's need none. A tombstone restores the defaults; an
   * invalid value, or a key that is no collection, is ignored, the same way on every replay.
   */
  private applySettings(record: PreparedRecord): void {
    const collection = record.key;
    if (!isCollectionTopic(collection)) return;
    const settings = record.json === null ? DEFAULT_SETTINGS : parseSettings(record.json);
    if (settings === null) return;
    const current = this.table(collection);
    const next = this.tableFor(collection, JSON.stringify(settings));
    if (current === undefined) {
      // No document was ever indexed here: there is nothing to copy.
      this.setTable(collection, next);
      return;
    }
    const build = this.builds.of(collection);
    if (build?.tableId === next.id) return;
    if (build !== undefined) this.retireTable(this.tableById(build.tableId));
    if (next === current) {
      if (build !== undefined) this.builds.finish(collection);
      return;
    }
    this.builds.start(collection, next.id, build?.sinceOffset ?? record.offset);
  }

  /**
   * One step of a collection's build: indexes the next of `docs` (the collection's documents in
   * key order after the build's last key, as LMDB holds them, which must be the versions this
   * store indexed) in the build's table: at most `docsMax`, and none more once `deadlineMs`
   * (performance.now()) has passed, but at least one. When `docs` runs out, that table takes the
   * collection over and the old one is dropped, in the same transaction. Returns the build as it
   * stands after the step, or undefined once swapped in.
   */
  copyIntoBuild(
    collection: string,
    docs: Iterator<DocVersion>,
    docsMax: number,
    deadlineMs = Infinity,
  ): TableBuild | undefined {
    const build = this.builds.of(collection);
    assert(build !== undefined, `${collection} has no table being built`);
    try {
      return this.db.transaction(() => {
        const table = this.tableById(build.tableId);
        let copied = 0;
        let lastKey: string | undefined;
        let ended = false;
        while (copied < docsMax && (copied === 0 || performance.now() < deadlineMs)) {
          const next = docs.next();
          if (next.done === true) {
            ended = true;
            break;
          }
          const doc = next.value;
          this.index(table, doc.key, rowOf(doc.partition, doc.offset), JSON.parse(doc.json));
          this.merges.wrote(table.id);
          copied += 1;
          lastKey = doc.key;
        }
        const advanced =
          lastKey === undefined ? build : this.builds.advance(build, lastKey, copied);
        if (!ended) {
          this.topk.settle();
          return advanced;
        }
        const current = this.table(collection)!;
        this.setTable(collection, table);
        this.retireTable(current);
        this.builds.finish(collection);
        this.topk.settle();
        return undefined;
      })();
    } catch (error) {
      this.forgetCaches();
      throw error;
    }
  }

  /** The collections being re-indexed, each with its build. */
  reindexing(): TableBuild[] {
    return this.builds.all();
  }

  buildOf(collection: string): TableBuild | undefined {
    return this.builds.of(collection);
  }

  /**
   * A dropped collection leaves, in one transaction: each of its tables is retired (its FTS5
   * table dropped, its rows in the shared tables left to deleteRetiredRows), its build, its
   * table's row and its checkpoints go. Dropping what is not here changes nothing.
   */
  dropCollection(collection: string): void {
    try {
      this.db.transaction(() => {
        const ids = this.db
          .prepare('SELECT id FROM fts_tables WHERE collection = ?')
          .pluck()
          .all(collection) as number[];
        for (const id of ids) this.retireTable(this.tableById(id));
        this.builds.finish(collection);
        this.db.prepare('DELETE FROM collection_tables WHERE collection = ?').run(collection);
        this.db.prepare('DELETE FROM checkpoints WHERE topic = ?').run(collection);
        this.tableIdOf.delete(collection);
      })();
    } catch (error) {
      this.forgetCaches();
      throw error;
    }
  }

  /**
   * A table no collection answers from any more: its FTS5 table is dropped (its rows and
   * statistics with it) and its rows in the shared tables are left to deleteRetiredRows.
   */
  private retireTable(table: FtsTable): void {
    this.db.exec(`DROP TABLE ${table.name}`);
    this.statements.deleteTable.run(table.id);
    this.tablesById.delete(table.id);
    this.retired.retire(table.id);
    this.merges.dropped(table.id);
    this.topk.dropped(table.id);
  }

  /**
   * Gives free pages back to the file system (free-pages.ts) once writes have paused for the
   * merge policy's quiet time: a busy writer would take them again at once. Null when none can
   * be.
   */
  freePagesStep(deadlineMs: number, policy: MergePolicy): FreePagesStep | MergeWait | null {
    const free = this.freePages.count();
    if (free === 0) return null;
    const waitMs = this.merges.quietWaitMs(policy);
    if (waitMs > 0) return { waitMs };
    return this.freePages.step(deadlineMs, free);
  }

  /**
   * A step merging the FTS5 segments of a table due a merge (segment-merges.ts), until
   * `deadlineMs` (performance.now()): null when none is due, or how long to wait for writes to
   * pause first.
   */
  mergeSegments(deadlineMs: number, policy: MergePolicy): CollectionMergeStep | null {
    const step = this.merges.step((id) => this.tableById(id), deadlineMs, policy);
    if (step === null || 'waitMs' in step) return step;
    const collection = this.statements.tableCollection.get(step.merged.tableId) as string;
    return { merged: { collection, finished: step.merged.finished } };
  }

  /** The collections with a table due a segment merge, under way or waiting for writes to pause. */
  mergesDue(policy: MergePolicy): string[] {
    const due = this.merges.due(policy);
    return [...new Set(due.map((id) => this.statements.tableCollection.get(id) as string))];
  }

  /** How long writes must still pause to have paused for `policy`'s quiet time; 0: they have. */
  quietWaitMs(policy: MergePolicy): number {
    return this.merges.quietWaitMs(policy);
  }

  /**
   * Whether a step merging top-k list segments is left for the background steps (a tier due, or
   * with writes paused a whole list of several segments under `policy`'s writtenPercent).
   */
  topkMergesDue(policy: MergePolicy): boolean {
    return this.topk.mayMerge(policy.writtenPercent);
  }

  /** The free pages left for freePagesStep to give back (none for a store created without). */
  freePagesLeft(): number {
    return this.freePages.count();
  }

  /**
   * A step merging the segments of top-k lists due a merge (TopkIndex.mergeStep: whole lists too
   * with `wholeWrittenPercent`), in one transaction, until `deadlineMs` (performance.now())
   * passes: the terms taken and whether their lists were rewritten, or null when none is due.
   */
  mergeTopkSegments(deadlineMs: number, wholeWrittenPercent: number | null): TopkMergeStep | null {
    if (!this.topk.mayMerge(wholeWrittenPercent)) return null;
    try {
      return this.db.transaction(() => this.topk.mergeStep(deadlineMs, wholeWrittenPercent))();
    } catch (error) {
      this.forgetCaches();
      throw error;
    }
  }

  /**
   * Deletes rows retired tables left in the shared tables, in one transaction, until
   * `deadlineMs` (performance.now()) passes: the rows deleted, or null when none are left.
   */
  deleteRetiredRows(deadlineMs: number): number | null {
    if (!this.retired.mayHaveRows()) return null;
    return this.db.transaction(() => this.retired.deleteSome(RETIRED_ROWS_CHUNK, deadlineMs))();
  }

  /** The table the collection is indexed in; undefined before its first document or settings. */
  private table(collection: string): FtsTable | undefined {
    let id = this.tableIdOf.get(collection);
    if (id === undefined) {
      id = this.statements.collectionTable.get(collection) as number | undefined;
      if (id === undefined) return undefined;
      this.tableIdOf.set(collection, id);
    }
    return this.tableById(id);
  }

  private setTable(collection: string, table: FtsTable): void {
    this.statements.setCollectionTable.run(collection, table.id);
    this.tableIdOf.set(collection, table.id);
  }

  private tableById(id: number): FtsTable {
    let table = this.tablesById.get(id);
    if (table === undefined) {
      const row = this.statements.tableById.get(id) as Parameters<typeof openFtsTable>[1];
      table = openFtsTable(this.db, row, this.ftsConfig);
      this.tablesById.set(id, table);
    }
    return table;
  }

  /** The collection's table for these settings, made when no partition has used it yet. */
  private tableFor(collection: string, settingsJson: string): FtsTable {
    const found = this.statements.tableBySettings.get(collection, settingsJson) as
      number | undefined;
    if (found !== undefined) return this.tableById(found);
    // Not SQLite's next rowid, which could be a retired table's whose rows are still there.
    const id = this.retired.nextTableId();
    this.statements.insertTable.run(id, collection, settingsJson);
    return this.tableById(id);
  }
}
