/**
 * What FTS5 itself keeps of a table's BM25 statistics, read from its shadow tables: the row count
 * and token total of the averages record (`<table>_data`, id 1) and a row's token count
 * (`<table>_docsize`), both SQLite varints. bm25() reads the same records (xRowCount,
 * xColumnTotalSize, xColumnSize), so a score computed from these equals FTS5's.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';

/** FTS5_AVERAGES_ROWID in SQLite's fts5_index.c. */
const AVERAGES_ROWID = 1;

/**
 * SQLite's varint: big-endian groups of 7 bits, the high bit set on all but the last, and a ninth
 * byte of 8 bits. Values past 2^53 are not exact, and no count here comes near one.
 */
function readVarints(bytes: Uint8Array): number[] {
  const values: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    let value = 0;
    let i = 0;
    for (; i < 8; i++) {
      const byte = bytes[at + i];
      assert(byte !== undefined, 'an FTS5 varint runs past its record');
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    if (i === 8) value = value * 256 + bytes[at + 8];
    at += i + 1;
    values.push(value);
  }
  return values;
}

export interface TableTotals {
  rows: number;
  /** Tokens of every column of every row. */
  tokens: number;
}

/** Reads of one FTS5 table's statistics through one connection. */
export class FtsStats {
  private readonly averages: Statement;
  private readonly docsize: Statement;

  constructor(db: Database.Database, tableName: string) {
    this.averages = db.prepare(`SELECT block FROM ${tableName}_data WHERE id = ?`).pluck();
    this.docsize = db.prepare(`SELECT sz FROM ${tableName}_docsize WHERE id = ?`).pluck();
  }

  totals(): TableTotals {
    const block = this.averages.get(AVERAGES_ROWID) as Buffer | undefined;
    if (block === undefined || block.length === 0) return { rows: 0, tokens: 0 };
    const [rows, ...columns] = readVarints(block);
    return { rows, tokens: columns.reduce((sum, n) => sum + n, 0) };
  }

  /** The row's tokens over every column, as bm25() takes it (xColumnSize(-1)). */
  rowTokens(row: number): number {
    const sz = this.docsize.get(row) as Buffer | undefined;
    assert(sz !== undefined, `FTS5 has no size of row ${row}`);
    return readVarints(sz).reduce((sum, n) => sum + n, 0);
  }
}
