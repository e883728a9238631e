/**
 * Each collection's bytes in the search store, from SQLite's dbstat table (compiled into
 * better-sqlite3): the pages of its FTS5 tables (`fts_<id>` and their shadow tables, every table
 * it has: a re-index under way has two) exactly, and the rest of the file's B-trees (the field
 * indexes, top-k lists and document rows, which every collection shares keyed by table id, and
 * the node's bookkeeping) in proportion to its documents, so the collections add up to the file's
 * used pages. dbstat reads every page of the file: the cost of a listing grows with the store.
 */
import type Database from 'better-sqlite3';

const FTS_BTREE = /^fts_(\d+)(?:_|$)/;

export function searchCollectionBytes(db: Database.Database): Map<string, number> {
  const collectionOf = new Map(
    (
      db.prepare('SELECT id, collection FROM fts_tables').all() as {
        id: number;
        collection: string;
      }[]
    ).map((row) => [row.id, row.collection]),
  );
  const bytes = new Map<string, number>();
  const add = (collection: string, more: number) =>
    bytes.set(collection, (bytes.get(collection) ?? 0) + more);
  let sharedBytes = 0;
  const btrees = db.prepare('SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE').all() as {
    name: string;
    pgsize: number;
  }[];
  for (const { name, pgsize } of btrees) {
    const match = FTS_BTREE.exec(name);
    const collection = match === null ? undefined : collectionOf.get(Number(match[1]));
    if (collection === undefined) sharedBytes += pgsize;
    else add(collection, pgsize);
  }
  const documents = new Map<string, number>();
  let total = 0;
  const counts = db
    .prepare('SELECT table_id AS id, count(*) AS count FROM doc_rows GROUP BY table_id')
    .all() as { id: number; count: number }[];
  for (const { id, count } of counts) {
    const collection = collectionOf.get(id);
    if (collection === undefined) continue;
    documents.set(collection, (documents.get(collection) ?? 0) + count);
    total += count;
  }
  for (const [collection, count] of documents) {
    add(collection, Math.round((sharedBytes * count) / total));
  }
  return bytes;
}
