/**
 * What the search store's reads keep in memory between writes is stamped with: SQLite's
 * total_changes(), which moves with every row any statement of the connection inserts, updates
 * or deletes, whatever the table, plus `PRAGMA data_version`, which moves with every commit of
 * another connection (the writer's, seen from a read thread's connection). Both only grow, so
 * their sum moves when either does. Something kept under an older stamp is read again, so it
 * never answers differently from the tables; a write elsewhere only costs reading it again.
 */
import type Database from 'better-sqlite3';

export function writeStamp(db: Database.Database): () => number {
  const statement = db
    .prepare('SELECT total_changes() + (SELECT data_version FROM pragma_data_version)')
    .pluck();
  return () => statement.get() as number;
}
