/**
 * A parsed filter (shared/filter/ast.ts) as a SQL condition on a document's row, over the field
 * indexes (field-index.ts). The user's text never reaches the SQL: fields and literals are bound
 * parameters, and the SQL's shape comes only from the tree's kinds. Each leaf is `row IN (one
 * index range)`, so SQLite answers it from the B-tree; AND, OR and NOT combine those sets. The
 * semantics are shared/filter/evaluate.ts's, which the property test holds this to.
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

const COMPARE = { '=': '=', '>': '>', '>=': '>=', '<': '<', '<=': '<=' } as const;

/** `row` is the SQL expression of the row being tested (e.g. `rowid` or `r.row`). */
export function filterCondition(node: FilterNode, tableId: number, row: string): SqlCondition {
  const params: Array<number | string> = [];
  const values = (where: string, ...bound: Array<number | string>) => {
    params.push(tableId, ...bound);
    return `SELECT row FROM field_values WHERE table_id = ? AND ${where}`;
  };
  const inValues = (selects: string[]) =>
    selects.length === 0 ? '0' : `${row} IN (${selects.join(' UNION ALL ')})`;
  const flag = (field: string, which: number) => {
    params.push(tableId, field, which);
    return `${row} IN (SELECT row FROM field_flags WHERE table_id = ? AND field = ? AND flag = ?)`;
  };
  /** The selects that find documents holding a value equal to one of `literals`. */
  const equalTo = (field: string, literals: readonly FilterLiteral[]): string[] => {
    const selects: string[] = [];
    const strings = literals.map((literal) => literal.text);
    const numbers = literals.flatMap((literal) =>
      literal.number === null ? [] : [literal.number],
    );
    const booleans = literals.flatMap((literal) => booleanOf(literal));
    const each = (kind: number, list: Array<number | string>) => {
      if (list.length === 0) return;
      const marks = list.map(() => '?').join(', ');
      selects.push(values(`field = ? AND kind = ? AND value IN (${marks})`, field, kind, ...list));
    };
    each(KIND_STRING, [...new Set(strings)]);
    each(KIND_NUMBER, [...new Set(numbers)]);
    each(KIND_BOOLEAN, [...new Set(booleans)]);
    return selects;
  };
  const ordered = (field: string, literal: FilterLiteral, op: string) =>
    literal.number === null
      ? values(`field = ? AND kind = ${KIND_STRING} AND value ${op} ?`, field, literal.text)
      : values(`field = ? AND kind = ${KIND_NUMBER} AND value ${op} ?`, field, literal.number);

  const walk = (node: FilterNode): string => {
    switch (node.kind) {
      case 'and':
      case 'or':
        return `(${node.children.map(walk).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${walk(node.child)})`;
      case 'compare':
        return node.op === '='
          ? inValues(equalTo(node.field, [node.value]))
          : inValues([ordered(node.field, node.value, COMPARE[node.op])]);
      case 'range': {
        const numeric = node.low.number !== null && node.high.number !== null;
        const select = numeric
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
            );
        return inValues([select]);
      }
      case 'in':
        return inValues(equalTo(node.field, node.values));
      case 'exists':
        return flag(node.field, FLAG_EXISTS);
      case 'isNull':
        return flag(node.field, FLAG_NULL);
      case 'isEmpty':
        return flag(node.field, FLAG_EMPTY);
    }
  };
  const sql = walk(node);
  return { sql, params };
}

/** A literal's boolean when its text is one: `true` matches the boolean true, as Meilisearch does. */
function booleanOf(literal: FilterLiteral): number[] {
  if (literal.text === 'true') return [1];
  if (literal.text === 'false') return [0];
  return [];
}
