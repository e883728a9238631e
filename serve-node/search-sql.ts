/**
 * The SQL of a search, a count, a facet count and a filtered or sorted scan, for one collection's
 * table: built from the shape of the request (filter tree, sort clauses, which key bounds are
 * set), never from its text, so statements are cached by their SQL (QueryCache) and every value
 * is a bound parameter.
 *
 * Orders, the same in every replica:
 * - search without sort: score, then partition, then offset (fts-table.ts's row order);
 * - search with sort: each clause's value (numbers before strings, documents without one last),
 *   then score, then key;
 * - scan: each clause's value as above, then key.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { FilterNode, SortClause } from '../shared/filter/ast.js';
import type { SortValues } from '../shared/serve-api.js';
import { assert } from '../shared/assert.js';
import { filterCondition, type FilterAccess } from './filter-sql.js';
import { ROW_PARTITIONS, type FtsTable } from './fts-table.js';

export type Param = number | string | null;
export type { SortValues };

interface Query {
  sql: string;
  params: Param[];
}

/** Builds SQL text and its parameters in the order they appear. */
class SqlText {
  private readonly parts: string[] = [];
  readonly params: Param[] = [];
  add(sql: string, ...params: Param[]): this {
    this.parts.push(sql);
    this.params.push(...params);
    return this;
  }
  query(): Query {
    return { sql: this.parts.join(' '), params: this.params };
  }
}

/** The statements of recent query shapes; past `max` the oldest is dropped. */
export class QueryCache {
  private readonly statements = new Map<string, Statement>();
  constructor(
    private readonly db: Database.Database,
    private readonly max: number,
  ) {}

  statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement !== undefined) {
      // Re-inserted, so the map's order is least recently used first.
      this.statements.delete(sql);
    } else {
      statement = this.db.prepare(sql);
      if (this.statements.size >= this.max) {
        this.statements.delete(this.statements.keys().next().value!);
      }
    }
    this.statements.set(sql, statement);
    return statement;
  }
}

export interface MatchShape {
  table: FtsTable;
  match: string;
  /**
   * The hosted partitions searched, as a JSON array; null when they are every partition the
   * table can hold rows of, so that no row needs the test.
   */
  partitions: string | null;
  filter: FilterNode | null;
  /** How the filter reads the field indexes (filter-sql.ts); `set` when not given. */
  filterAccess?: FilterAccess;
}

/**
 * `LIMIT n` with n written into the text, not bound: SQLite (3.53) plans with a LIMIT's value, so
 * binding a LIMIT parameter expires the statement and every run prepared it again. Measured on
 * the filters bench's store: the SQL of a 1%-filtered search 181 us with `LIMIT ?`, 129 us with
 * the number written (a prepare of it: 74 us); a one-row read 11.3 against 5.7 us. Each limit is
 * then a statement of its own in QueryCache.
 */
function limit(n: number): string {
  assert(Number.isSafeInteger(n) && n >= 0, `a LIMIT must be a whole number, not ${n}`);
  return `LIMIT ${n}`;
}

/**
 * The `partitions` of a MatchShape or ScanShape: the partitions asked for as a JSON array, or
 * null when they include every partition `held` (those the store has rows of), so no row needs
 * the test: a probe a match, a third of the SQL of a search with a selective filter.
 */
export function partitionsParam(held: readonly number[], asked: readonly number[]): string | null {
  const set = new Set(asked);
  return held.every((partition) => set.has(partition)) ? null : JSON.stringify(asked);
}

const inPartitions = (row: string) =>
  `${row} % ${ROW_PARTITIONS} IN (SELECT value FROM json_each(?))`;

/** `SELECT rowid AS row[, score] FROM fts WHERE MATCH AND partitions AND filter`. */
function matching(text: SqlText, shape: MatchShape, withScore: boolean): void {
  const { table } = shape;
  const score = withScore
    ? `, -bm25(${table.name}, ${table.layout.weights.join(', ')}) AS score`
    : '';
  text.add(
    `SELECT rowid AS row${score} FROM ${table.name} WHERE ${table.name} MATCH ?`,
    shape.match,
  );
  if (shape.partitions !== null) text.add(`AND ${inPartitions('rowid')}`, shape.partitions);
  if (shape.filter !== null) {
    // `+rowid`, not `rowid`: SQLite would hand the filter's rows to FTS5 as rowid constraints,
    // which FTS5 answers with a seek into the term's doclist each, costing about a scan of it
    // each (a 1% filter on a term in 13,220 documents: 390 ms, against 60 ms unfiltered).
    const condition = filterCondition(
      shape.filter,
      table.id,
      `+${table.name}.rowid`,
      shape.filterAccess ?? 'set',
    );
    text.add(`AND ${condition.sql}`, ...condition.params);
  }
}

/** LEFT JOINs of each clause's sort value onto `row`, and the ORDER BY terms they give. */
function sortJoins(text: SqlText, tableId: number, sort: readonly SortClause[], row: string) {
  const terms: string[] = [];
  const columns: string[] = [];
  sort.forEach((clause, i) => {
    text.add(
      `LEFT JOIN sort_values s${i} ON s${i}.table_id = ${tableId} AND s${i}.field = ? AND s${i}.row = ${row}`,
      clause.field,
    );
    const direction = clause.direction === 'desc' ? 'DESC' : 'ASC';
    terms.push(`s${i}.kind IS NULL`, `s${i}.kind`, `s${i}.value ${direction}`);
    columns.push(`s${i}.kind AS k${i}`, `s${i}.value AS v${i}`);
  });
  return { terms, columns };
}

/** The best `depth` matches: (row, score, key[, k0, v0, ...]). */
export function searchQuery(shape: MatchShape, sort: readonly SortClause[], depth: number): Query {
  const { table } = shape;
  const text = new SqlText();
  if (sort.length === 0) {
    text.add('SELECT m.row AS row, m.score AS score, r.key AS key FROM (');
    matching(text, shape, true);
    text.add(`ORDER BY score DESC, rowid % ${ROW_PARTITIONS}, rowid ${limit(depth)}) m`);
    // CROSS JOIN keeps the top rows the outer loop: left to itself, SQLite scans every row of
    // the table in doc_rows and probes the top rows for each.
    text.add(`CROSS JOIN doc_rows r ON r.table_id = ${table.id} AND r.row = m.row`);
    text.add(`ORDER BY m.score DESC, m.row % ${ROW_PARTITIONS}, m.row`);
    return text.query();
  }
  // The select list names the sort columns, which are only known once the joins are built.
  const inner = new SqlText();
  matching(inner, shape, true);
  const joins = new SqlText();
  const { terms, columns } = sortJoins(joins, table.id, sort, 'm.row');
  const { sql: innerSql, params: innerParams } = inner.query();
  const { sql: joinSql, params: joinParams } = joins.query();
  text.add(`SELECT m.row AS row, m.score AS score, r.key AS key, ${columns.join(', ')}`);
  text.add(`FROM (${innerSql}) m`, ...innerParams);
  text.add(`JOIN doc_rows r ON r.table_id = ${table.id} AND r.row = m.row`);
  text.add(joinSql, ...joinParams);
  text.add(`ORDER BY ${terms.join(', ')}, m.score DESC, r.key ${limit(depth)}`);
  return text.query();
}

/**
 * Of the rows in a JSON array, those `filter` passes, each looked up: the array is the first
 * parameter, `params` the rest.
 */
export function passingRowsQuery(tableId: number, filter: FilterNode): Query {
  const condition = filterCondition(filter, tableId, 'j.value', 'probe');
  return new SqlText()
    .add(`SELECT j.value FROM json_each(?) j WHERE ${condition.sql}`, ...condition.params)
    .query();
}

/** The number of matches, counting at most `max`. */
export function countQuery(shape: MatchShape, max: number): Query {
  const text = new SqlText().add('SELECT count(*) FROM (');
  matching(text, shape, false);
  return text.add(`${limit(max)})`).query();
}

/** The row of every match, ascending. */
export function matchRowsQuery(shape: MatchShape): Query {
  const text = new SqlText();
  matching(text, shape, false);
  return text.add('ORDER BY rowid').query();
}

/**
 * How the facets of a query are counted:
 * - `byMatch`: a lookup of each match's values, then a sort of them by value to group them; its
 *   cost follows the matches.
 * - `byValue`: a walk of the fields' values in index order (already grouped), each row tested
 *   against the matches gathered once; its cost follows the fields' entries in the table, and
 *   no sort is needed.
 */
export type FacetPlan = 'byMatch' | 'byValue';

/** (field, kind, value, n) for each value of `fields` over every match. */
export function facetQuery(shape: MatchShape, fields: readonly string[], plan: FacetPlan): Query {
  const marks = fields.map(() => '?').join(', ');
  const text = new SqlText().add('SELECT f.field AS field, f.kind AS kind, f.value AS value,');
  if (plan === 'byValue') {
    text.add(`count(*) AS n FROM field_values f WHERE f.table_id = ${shape.table.id}`);
    text.add(`AND f.field IN (${marks}) AND f.row IN (`, ...fields);
    matching(text, shape, false);
    return text.add(') GROUP BY f.field, f.kind, f.value').query();
  }
  text.add('count(*) AS n FROM (');
  matching(text, shape, false);
  // CROSS JOIN keeps the matches the outer loop, a lookup of each match's values: left to
  // itself, SQLite walks every value of the fields and asks FTS5 whether each row matches, a
  // doclist seek each (two facets over 13,220 matches: 1.3 s, against 80 ms this way). `+f.field`
  // makes the lookup one range of the row's values, not one seek a field.
  text.add(
    `) m CROSS JOIN field_values f ON f.table_id = ${shape.table.id} AND f.row = m.row AND +f.field IN (${marks})`,
    ...fields,
  );
  return text.add('GROUP BY f.field, f.kind, f.value').query();
}

/**
 * The number of entries `fields` have in the table, counting at most `max`: what a `byValue`
 * facet count walks. Bounded, so choosing a plan never walks a large table for a small query.
 */
export function facetEntriesQuery(tableId: number, fields: readonly string[], max: number): Query {
  const marks = fields.map(() => '?').join(', ');
  return new SqlText()
    .add(`SELECT count(*) FROM (SELECT 1 FROM field_values WHERE table_id = ${tableId}`)
    .add(`AND field IN (${marks}) ${limit(max)})`, ...fields)
    .query();
}

export interface ScanShape {
  tableId: number;
  /** As MatchShape's. */
  partitions: string | null;
  start?: string;
  end?: string;
  prefix?: string;
  filter: FilterNode | null;
  sort: readonly SortClause[];
  /** Resume after this position: its key, and its sort values when the scan is sorted. */
  after?: { key: string; sort: SortValues };
  limit: number;
}

/** (key, row[, k0, v0, ...]) in the scan's order. */
export function scanQuery(shape: ScanShape): Query {
  const { tableId, sort } = shape;
  const joins = new SqlText();
  const { terms, columns } = sortJoins(joins, tableId, sort, 'r.row');
  const { sql: joinSql, params: joinParams } = joins.query();
  const select = ['r.key AS key', 'r.row AS row', ...columns].join(', ');
  const text = new SqlText().add(`SELECT ${select} FROM doc_rows r`);
  text.add(joinSql, ...joinParams);
  text.add(`WHERE r.table_id = ${tableId}`);
  if (shape.partitions !== null) text.add(`AND ${inPartitions('r.row')}`, shape.partitions);
  if (shape.start !== undefined) text.add('AND r.key >= ?', shape.start);
  if (shape.end !== undefined) text.add('AND r.key < ?', shape.end);
  if (shape.prefix !== undefined && shape.prefix !== '') {
    text.add('AND r.key >= ?', shape.prefix);
    const upper = prefixSuccessor(shape.prefix);
    if (upper !== null) text.add('AND r.key < ?', upper);
  }
  if (shape.filter !== null) {
    const condition = filterCondition(shape.filter, tableId, 'r.row');
    text.add(`AND ${condition.sql}`, ...condition.params);
  }
  if (shape.after !== undefined) {
    const after = afterCondition(sort, shape.after);
    text.add(`AND ${after.sql}`, ...after.params);
  }
  text.add(`ORDER BY ${[...terms, 'r.key'].join(', ')} ${limit(shape.limit)}`);
  return text.query();
}

/**
 * Rows strictly after `after` in the scan's order, as a lexicographic comparison over (for each
 * clause: has no value, kind, value) and then the key. `IS` compares the nulls of a document
 * without a value as equal; `>` and `<` with a null are never true, so a position without a value
 * is followed only by others without one (and a greater key).
 */
function afterCondition(sort: readonly SortClause[], after: { key: string; sort: SortValues }) {
  const terms: Array<{ column: string; value: Param; greater: '>' | '<' }> = [];
  sort.forEach((clause, i) => {
    const value = after.sort[i] ?? null;
    const kind = value === null ? null : typeof value === 'number' ? 0 : 1;
    terms.push({ column: `(s${i}.kind IS NULL)`, value: value === null ? 1 : 0, greater: '>' });
    terms.push({ column: `s${i}.kind`, value: kind, greater: '>' });
    terms.push({
      column: `s${i}.value`,
      value,
      greater: clause.direction === 'desc' ? '<' : '>',
    });
  });
  terms.push({ column: 'r.key', value: after.key, greater: '>' });
  // (t0 > v0) OR (t0 IS v0 AND ((t1 > v1) OR (t1 IS v1 AND ...))), built from the last term out.
  let sql = '';
  const params: Param[] = [];
  for (let i = terms.length - 1; i >= 0; i--) {
    const { column, greater } = terms[i];
    sql =
      sql === ''
        ? `${column} ${greater} ?`
        : `(${column} ${greater} ? OR (${column} IS ? AND ${sql}))`;
  }
  // Parameters in text order: each term's value for `>` then, except the last, for `IS`.
  terms.forEach(({ value }, i) => {
    params.push(value);
    if (i < terms.length - 1) params.push(value);
  });
  return { sql, params };
}

/**
 * The least string greater than every string starting with `prefix`, in code point order (which
 * is SQLite's BINARY order of UTF-8): the last code point raised by one (past the surrogates),
 * or dropped and the one before raised when it is the last code point there is.
 */
export function prefixSuccessor(prefix: string): string | null {
  const points = Array.from(prefix, (char) => char.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return null;
}
