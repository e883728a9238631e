/**
 * One FTS5 table of the search store: a collection's documents, in every partition this node
 * hosts that indexes it with the same settings, and the statements that write and query it.
 * Holding a collection's partitions in one table gives one set of BM25 statistics per node, so a
 * search over all of them ranks exactly as a single FTS5 index of those documents would.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import { PARTITIONS_MAX } from '../shared/log-api.js';
import { columnLayout, type CollectionSettings, type ColumnLayout } from './collection-settings.js';

/**
 * A row is `offset * ROW_PARTITIONS + partition`: unique across partitions, the same in every
 * replica, and in (offset, partition) order. Offsets stay below 2^53 / 1024, about 8.8e12.
 */
export const ROW_PARTITIONS = PARTITIONS_MAX;

export function rowOf(partition: number, offset: number): number {
  const row = offset * ROW_PARTITIONS + partition;
  assert(Number.isSafeInteger(row), `offset ${offset} is past what an FTS5 row can hold`);
  return row;
}

export function partitionOfRow(row: number): number {
  return row % ROW_PARTITIONS;
}

export function offsetOfRow(row: number): number {
  return Math.floor(row / ROW_PARTITIONS);
}

export interface FtsTable {
  id: number;
  name: string;
  settings: CollectionSettings;
  layout: ColumnLayout;
  insert: Statement;
  remove: Statement;
  /** FTS5's incremental 'merge' command; its parameter is the pages to write (segment-merges.ts). */
  merge: Statement;
}

/** Creates `fts_<id>` when it does not exist yet and prepares its statements. */
export function openFtsTable(
  db: Database.Database,
  row: { id: number; settings: string },
): FtsTable {
  const settings = JSON.parse(row.settings) as CollectionSettings;
  const layout = columnLayout(settings);
  const name = `fts_${row.id}`;
  const columns = layout.weights.map((_, i) => `c${i}`);
  // Settings were validated on parse: the tokenizer is one of TOKENIZERS, never user text.
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING fts5(${columns.join(', ')}, ` +
      `content = '', tokenize = '${settings.tokenizer}')`,
  );
  return {
    id: row.id,
    name,
    settings,
    layout,
    insert: db.prepare(
      `INSERT INTO ${name} (rowid, ${columns.join(', ')}) VALUES (?, ${columns.map(() => '?').join(', ')})`,
    ),
    remove: db.prepare(
      `INSERT INTO ${name} (${name}, rowid, ${columns.join(', ')}) ` +
        `VALUES ('delete', ?, ${columns.map(() => '?').join(', ')})`,
    ),
    merge: db.prepare(`INSERT INTO ${name} (${name}, rank) VALUES ('merge', ?)`),
  };
}
