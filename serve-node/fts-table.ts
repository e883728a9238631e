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

/** FTS5 options of how a table is written (its `_config` rows), set by the writer alone. */
export interface FtsWriteConfig {
  /** FTS5's `automerge` (ServeNodeLimits.ftsAutomergeSegments). */
  automergeSegments: number;
}

/**
 * Creates `fts_<id>` when it does not exist yet and prepares its statements; with `config` (the
 * writer's), sets those options where the table holds others. They change how FTS5 lays out its
 * segments, never what a query answers.
 */
export function openFtsTable(
  db: Database.Database,
  row: { id: number; settings: string },
  config: FtsWriteConfig | null = null,
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
  if (config !== null) setAutomerge(db, name, config.automergeSegments);
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

/**
 * FTS5's default `crisismerge`: a level holding this many segments is merged whole within the
 * write that reached it, so an `automerge` at or past it would leave merging to those.
 */
const FTS5_CRISISMERGE = 16;

/** The bounds of FTS5's `automerge` this store sets: FTS5's own least, and below crisismerge. */
export const FTS_AUTOMERGE_SEGMENTS_MIN = 2;
export const FTS_AUTOMERGE_SEGMENTS_MAX = FTS5_CRISISMERGE - 1;

/** A writer's FtsWriteConfig, checked when its store opens rather than at its first table. */
export function ftsWriteConfig(automergeSegments: number): FtsWriteConfig {
  assert(
    Number.isInteger(automergeSegments) &&
      automergeSegments >= FTS_AUTOMERGE_SEGMENTS_MIN &&
      automergeSegments <= FTS_AUTOMERGE_SEGMENTS_MAX,
    `FTS5's automerge is an integer from ${FTS_AUTOMERGE_SEGMENTS_MIN} to ${FTS_AUTOMERGE_SEGMENTS_MAX}, not ${automergeSegments}`,
  );
  return { automergeSegments };
}

/** Absent from `_config`, FTS5's default (4) holds. */
function setAutomerge(db: Database.Database, name: string, segments: number): void {
  const current = db.prepare(`SELECT v FROM ${name}_config WHERE k = 'automerge'`).pluck().get();
  if (current === segments) return;
  // FTS5 refuses a bound REAL (a JS number binds as one): the value is a checked integer.
  db.exec(`INSERT INTO ${name} (${name}, rank) VALUES ('automerge', ${segments})`);
}
