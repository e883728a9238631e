/**
 * What the search store's reads keep in memory between writes is stamped with: SQLite's
 * total_changes(), which moves with every row any statement of the connection (the store's only
 * writer) inserts, updates or deletes, whatever the table. Something kept under an older stamp
 * is read again, so it never answers differently from the tables; a write elsewhere only costs
 * reading it again.
 */
import type Database from 'better-sqlite3';

export function writeStamp(db: Database.Database): () => number {
  const statement = db.prepare('SELECT total_changes()').pluck();
  return () => statement.get() as number;
}
