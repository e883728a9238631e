/**
 * Re-indexes under way: a collection whose settings changed keeps answering from its current
 * table while a table of the new settings is filled in the background, a step of documents at a
 * time in key order, then takes its place in one transaction. The state of each lives in the
 * search store (`table_builds`), written in the transactions that change the tables, so a crash
 * resumes a build where its last step committed.
 *
 * While a collection's build is under way, a document write whose key the build has already
 * copied is applied to both tables; a key past it is not, as its step will copy the version
 * current then. So when the last step is done, the new table holds exactly the collection's
 * documents indexed with the new settings, whatever writes came in between.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';

export interface TableBuild {
  collection: string;
  /** The table being filled, with the collection's latest settings. */
  tableId: number;
  /** The last key copied, or null before the first step. */
  afterKey: string | null;
  /**
   * The settings topic's offset of the first settings record of the collection that is not in
   * effect yet: reads asking for that offset or later wait until the new table takes over.
   */
  sinceOffset: number;
  /** Documents copied so far. */
  copied: number;
}

export const TABLE_BUILDS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS table_builds (
    collection TEXT PRIMARY KEY, table_id INTEGER NOT NULL, after_key TEXT,
    since_offset INTEGER NOT NULL, copied INTEGER NOT NULL) WITHOUT ROWID;
`;

interface BuildRow {
  collection: string;
  table_id: number;
  after_key: string | null;
  since_offset: number;
  copied: number;
}

/** Keys compare as LMDB orders them (doc-store.ts): by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The builds of one search store: its `table_builds` rows, mirrored in memory for writes. */
export class TableBuilds {
  private readonly byCollection = new Map<string, TableBuild>();
  private readonly statements: Record<'all' | 'put' | 'remove', Statement>;

  constructor(db: Database.Database) {
    db.exec(TABLE_BUILDS_SCHEMA);
    this.statements = {
      all: db.prepare('SELECT * FROM table_builds ORDER BY collection'),
      put: db.prepare(
        'INSERT OR REPLACE INTO table_builds (collection, table_id, after_key, since_offset, copied) ' +
          'VALUES (?, ?, ?, ?, ?)',
      ),
      remove: db.prepare('DELETE FROM table_builds WHERE collection = ?'),
    };
    this.reload();
  }

  /** Reads the rows again: after a rolled-back transaction, memory may hold what it undid. */
  reload(): void {
    this.byCollection.clear();
    for (const row of this.statements.all.all() as BuildRow[]) {
      this.byCollection.set(row.collection, {
        collection: row.collection,
        tableId: row.table_id,
        afterKey: row.after_key,
        sinceOffset: row.since_offset,
        copied: row.copied,
      });
    }
  }

  of(collection: string): TableBuild | undefined {
    return this.byCollection.get(collection);
  }

  all(): TableBuild[] {
    return [...this.byCollection.values()];
  }

  /** Starts (or restarts, towards another table) the build of a collection. */
  start(collection: string, tableId: number, sinceOffset: number): TableBuild {
    return this.put({ collection, tableId, afterKey: null, sinceOffset, copied: 0 });
  }

  /** Records a step: `copied` more documents, the last of them `afterKey`. */
  advance(build: TableBuild, afterKey: string, copied: number): TableBuild {
    return this.put({ ...build, afterKey, copied: build.copied + copied });
  }

  finish(collection: string): void {
    this.statements.remove.run(collection);
    this.byCollection.delete(collection);
  }

  /** Whether a write of `key` must go to the build's table too: a step copied the key already. */
  covers(build: TableBuild, key: string): boolean {
    return build.afterKey !== null && compareKeys(key, build.afterKey) <= 0;
  }

  private put(build: TableBuild): TableBuild {
    const { collection, tableId, afterKey, sinceOffset, copied } = build;
    this.statements.put.run(collection, tableId, afterKey, sinceOffset, copied);
    this.byCollection.set(collection, build);
    return build;
  }
}
