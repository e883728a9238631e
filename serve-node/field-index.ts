/**
 * The field indexes of the search store: B-trees in the same SQLite database (and so the same
 * apply transaction) as the FTS5 rows, keyed by the collection's table (its settings) and the
 * document's row, so a filter, a sort or a facet is a join on the row FTS5 answers with.
 *
 * - `field_values`: for each filterable field, every value at its path (arrays flattened), as
 *   (kind, value): numbers and strings as themselves, booleans as 0 and 1. Ordered by value, so a
 *   comparison or a range is one index range; and by row, so the facets of a set of matches are
 *   one lookup a match.
 * - `field_flags`: for each filterable field, whether the path exists, holds null, or is empty.
 * - `sort_values`: for each sortable field, the document's one sort key (shared/filter/facts.ts
 *   sortValue), absent when it has none.
 *
 * A document's entries are removed the way FTS5 rows are: recomputed from the version indexed.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { FieldFacts } from '../shared/filter/ast.js';
import { fieldFacts, sortValue } from '../shared/filter/facts.js';

/** The kinds of a value in `field_values` and `sort_values`; numbers sort before strings. */
export const KIND_NUMBER = 0;
export const KIND_STRING = 1;
export const KIND_BOOLEAN = 2;

export const FLAG_EXISTS = 0;
export const FLAG_NULL = 1;
export const FLAG_EMPTY = 2;

export const FIELD_INDEX_SCHEMA = `
  CREATE TABLE IF NOT EXISTS field_values (
    table_id INTEGER NOT NULL, field TEXT NOT NULL, kind INTEGER NOT NULL, value NOT NULL,
    row INTEGER NOT NULL,
    PRIMARY KEY (table_id, field, kind, value, row)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS field_values_by_row ON field_values (table_id, row, field);
  CREATE TABLE IF NOT EXISTS field_flags (
    table_id INTEGER NOT NULL, field TEXT NOT NULL, flag INTEGER NOT NULL, row INTEGER NOT NULL,
    PRIMARY KEY (table_id, field, flag, row)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS sort_values (
    table_id INTEGER NOT NULL, field TEXT NOT NULL, row INTEGER NOT NULL, kind INTEGER NOT NULL,
    value NOT NULL,
    PRIMARY KEY (table_id, field, row)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS sort_values_by_value ON sort_values (table_id, field, kind, value);
`;

/** The fields a collection's table indexes beside its text. */
export interface IndexedFields {
  filterable: readonly string[];
  sortable: readonly string[];
}

type Entry = [kind: number, value: number | string];

/** A document's entries in the three tables, for the fields its table indexes. */
function entriesOf(fields: IndexedFields, doc: unknown) {
  const values: Array<[string, ...Entry]> = [];
  const flags: Array<[string, number]> = [];
  const sorts: Array<[string, ...Entry]> = [];
  for (const field of fields.filterable) {
    const facts = fieldFacts(doc, field);
    for (const entry of valueEntries(facts)) values.push([field, ...entry]);
    for (const flag of flagsOf(facts)) flags.push([field, flag]);
  }
  for (const field of fields.sortable) {
    const value = sortValue(doc, field);
    if (value !== null) sorts.push([field, sortKind(value), value]);
  }
  return { values, flags, sorts };
}

function valueEntries(facts: FieldFacts): Entry[] {
  const entries: Entry[] = [];
  const seen = new Set<string>();
  const add = (kind: number, value: number | string) => {
    const id = `${kind}:${value}`;
    if (seen.has(id)) return;
    seen.add(id);
    entries.push([kind, value]);
  };
  for (const number of facts.numbers) add(KIND_NUMBER, number);
  for (const string of facts.strings) add(KIND_STRING, string);
  for (const boolean of facts.booleans) add(KIND_BOOLEAN, boolean ? 1 : 0);
  return entries;
}

function flagsOf(facts: FieldFacts): number[] {
  const flags: number[] = [];
  if (facts.exists) flags.push(FLAG_EXISTS);
  if (facts.isNull) flags.push(FLAG_NULL);
  if (facts.isEmpty) flags.push(FLAG_EMPTY);
  return flags;
}

export class FieldIndex {
  private readonly statements: Record<
    'insertValue' | 'deleteValue' | 'insertFlag' | 'deleteFlag' | 'insertSort' | 'deleteSort',
    Statement
  >;

  constructor(db: Database.Database) {
    db.exec(FIELD_INDEX_SCHEMA);
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      insertValue: prepare(
        'INSERT OR IGNORE INTO field_values (table_id, field, kind, value, row) VALUES (?, ?, ?, ?, ?)',
      ),
      deleteValue: prepare(
        'DELETE FROM field_values WHERE table_id = ? AND field = ? AND kind = ? AND value = ? AND row = ?',
      ),
      insertFlag: prepare(
        'INSERT OR IGNORE INTO field_flags (table_id, field, flag, row) VALUES (?, ?, ?, ?)',
      ),
      deleteFlag: prepare(
        'DELETE FROM field_flags WHERE table_id = ? AND field = ? AND flag = ? AND row = ?',
      ),
      insertSort: prepare(
        'INSERT OR REPLACE INTO sort_values (table_id, field, row, kind, value) VALUES (?, ?, ?, ?, ?)',
      ),
      deleteSort: prepare('DELETE FROM sort_values WHERE table_id = ? AND field = ? AND row = ?'),
    };
  }

  add(tableId: number, fields: IndexedFields, row: number, doc: unknown): void {
    const s = this.statements;
    const { values, flags, sorts } = entriesOf(fields, doc);
    for (const [field, kind, value] of values) s.insertValue.run(tableId, field, kind, value, row);
    for (const [field, flag] of flags) s.insertFlag.run(tableId, field, flag, row);
    for (const [field, kind, value] of sorts) s.insertSort.run(tableId, field, row, kind, value);
  }

  /** Removes what `add` made for the same document at the same row. */
  remove(tableId: number, fields: IndexedFields, row: number, doc: unknown): void {
    const s = this.statements;
    const { values, flags, sorts } = entriesOf(fields, doc);
    for (const [field, kind, value] of values) s.deleteValue.run(tableId, field, kind, value, row);
    for (const [field, flag] of flags) s.deleteFlag.run(tableId, field, flag, row);
    for (const [field] of sorts) s.deleteSort.run(tableId, field, row);
  }
}

export const sortKind = (value: number | string) =>
  typeof value === 'number' ? KIND_NUMBER : KIND_STRING;
