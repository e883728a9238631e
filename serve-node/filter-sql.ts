/**
 * A parsed filter (shared/filter/ast.ts) as a SQL condition on a document's row, over the field
 * indexes (field-index.ts). The user's text never reaches the SQL: fields and literals are bound
 * parameters, and the SQL's shape comes only from the tree's kinds. Each leaf is the union of a
 * few index ranges, reached one of two ways (FilterAccess); AND, OR and NOT combine the leaves.
 * The semantics are shared/filter/evaluate.ts's, which the property test holds both ways to.
 */
import type { FilterLiteral, FilterNode } from '../shared/filter/ast.js';
import {
  FLAG_EMPTY,
  FLAG_EXISTS,
  FLAG_NULL,
  KIND_BOOLEAN,
  KIND_NUMBER,
  KIND_STRING,
} from './field-index.js';

export interface SqlCondition {
  sql: string;
  params: Array<number | string>;
}

/**
 * How a condition reads the field indexes:
 * - `set`: each leaf's rows gathered once (`row IN (SELECT row ...)`), then each row tested
 *   against them: its cost follows the rows the leaves hold, whatever the rows tested (a filter
 *   on 14% of 10^6 documents gathers 140,000 rows for a search of 5,000 matches);
 * - `probe`: each row tested looks up its own entries (`EXISTS`, through `field_values_by_row`,
 *   or a point of `field_flags`): about 0.4 us a row and leaf, whatever the leaves hold.
 */
export type FilterAccess = 'set' | 'probe';

/** A leaf without its boolean combinators. */
export type FilterLeaf = Exclude<FilterNode, { kind: 'and' | 'or' | 'not' }>;

/** One index range of a leaf: rows of `table` where `table_id = ? AND where`. */
export interface IndexRange {
  table: 'field_values' | 'field_flags';
  where: string;
  params: Array<number | string>;
}

const COMPARE = { '=': '=', '>': '>', '>=': '>=', '<': '<', '<=': '<=' } as const;

/**
 * `row` is the SQL expression of the row being tested (e.g. `rowid` or `r.row`); with `probe`,
 * one the leaves' subqueries can refer to (a column of an outer table, not `+rowid`).
 */
export function filterCondition(
  node: FilterNode,
  tableId: number,
  row: string,
  access: FilterAccess = 'set',
): SqlCondition {
  const params: Array<number | string> = [];
  const leaf = (node: FilterLeaf): string => {
    const ranges = leafRanges(node);
    if (ranges.length === 0) return '0';
    for (const range of ranges) params.push(tableId, ...range.params);
    if (access === 'set') {
      const selects = ranges.map(
        ({ table, where }) => `SELECT row FROM ${table} WHERE table_id = ? AND ${where}`,
      );
      return `${row} IN (${selects.join(' UNION ALL ')})`;
    }
    const probes = ranges.map(({ table, where }) =>
      table === 'field_flags'
        ? `EXISTS (SELECT 1 FROM field_flags WHERE table_id = ? AND ${where} AND row = ${row})`
        : // A row's entries are a few: found by the row, then tested, never by the value's range.
          `EXISTS (SELECT 1 FROM field_values INDEXED BY field_values_by_row WHERE table_id = ? AND row = ${row} AND ${where})`,
    );
    return probes.length === 1 ? probes[0] : `(${probes.join(' OR ')})`;
  };
  const walk = (node: FilterNode): string => {
    switch (node.kind) {
      case 'and':
      case 'or':
        return `(${node.children.map(walk).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${walk(node.child)})`;
      default:
        return leaf(node);
    }
  };
  const sql = walk(node);
  return { sql, params };
}

/** The index ranges whose rows, together, are the rows `node` holds for. */
export function leafRanges(node: FilterLeaf): IndexRange[] {
  const values = (where: string, ...params: Array<number | string>): IndexRange => ({
    table: 'field_values',
    where,
    params,
  });
  const flag = (field: string, which: number): IndexRange => ({
    table: 'field_flags',
    where: 'field = ? AND flag = ?',
    params: [field, which],
  });
  /** The ranges of documents holding a value equal to one of `literals`. */
  const equalTo = (field: string, literals: readonly FilterLiteral[]): IndexRange[] => {
    const ranges: IndexRange[] = [];
    const strings = literals.map((literal) => literal.text);
    const numbers = literals.flatMap((literal) =>
      literal.number === null ? [] : [literal.number],
    );
    const booleans = literals.flatMap((literal) => booleanOf(literal));
    const each = (kind: number, list: Array<number | string>) => {
      if (list.length === 0) return;
      const marks = list.map(() => '?').join(', ');
      ranges.push(values(`field = ? AND kind = ? AND value IN (${marks})`, field, kind, ...list));
    };
    each(KIND_STRING, [...new Set(strings)]);
    each(KIND_NUMBER, [...new Set(numbers)]);
    each(KIND_BOOLEAN, [...new Set(booleans)]);
    return ranges;
  };
  const ordered = (field: string, literal: FilterLiteral, op: string) =>
    literal.number === null
      ? values(`field = ? AND kind = ${KIND_STRING} AND value ${op} ?`, field, literal.text)
      : values(`field = ? AND kind = ${KIND_NUMBER} AND value ${op} ?`, field, literal.number);

  switch (node.kind) {
    case 'compare':
      return node.op === '='
        ? equalTo(node.field, [node.value])
        : [ordered(node.field, node.value, COMPARE[node.op])];
    case 'range': {
      const numeric = node.low.number !== null && node.high.number !== null;
      return [
        numeric
          ? values(
              `field = ? AND kind = ${KIND_NUMBER} AND value BETWEEN ? AND ?`,
              node.field,
              node.low.number!,
              node.high.number!,
            )
          : values(
              `field = ? AND kind = ${KIND_STRING} AND value BETWEEN ? AND ?`,
              node.field,
              node.low.text,
              node.high.text,
            ),
      ];
    }
    case 'in':
      return equalTo(node.field, node.values);
    case 'exists':
      return [flag(node.field, FLAG_EXISTS)];
    case 'isNull':
      return [flag(node.field, FLAG_NULL)];
    case 'isEmpty':
      return [flag(node.field, FLAG_EMPTY)];
  }
}

/** A literal's boolean when its text is one: `true` matches the boolean true, as Meilisearch does. */
function booleanOf(literal: FilterLiteral): number[] {
  if (literal.text === 'true') return [1];
  if (literal.text === 'false') return [0];
  return [];
}
