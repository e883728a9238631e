/**
 * The shapes a `filter=`, `sort=` and `facets=` parameter parse into (shared/filter/parse.ts),
 * which the serve-node compiles into SQL over its field indexes and the gateway's change feed
 * evaluates over documents (shared/filter/evaluate.ts). Semantics, as Meilisearch users know them:
 *
 * - A literal is text. When the text is a number (JSON's grammar), it also compares as a number:
 *   `year = 1965` matches the number 1965 and the string "1965"; `inStock = true` matches the
 *   boolean true and the string "true". Quoting changes nothing but what the text may contain.
 * - `>`, `>=`, `<`, `<=` and `a TO b` compare numbers numerically when the literal is a number,
 *   and strings by code point when it is not; they never match across those types.
 * - A field is a dotted path into nested objects; arrays met on the way are flattened, and a
 *   condition holds when any value found at the path satisfies it.
 * - `!=`, `NOT IN` and `NOT` are complements over the collection's documents, so they also match
 *   documents without the field.
 */

/** A literal: its text, and its value as a number when the text is one. */
export interface FilterLiteral {
  text: string;
  number: number | null;
}

export type CompareOp = '=' | '>' | '>=' | '<' | '<=';

export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  /** `field != v` parses as not(compare =). */
  | { kind: 'compare'; field: string; op: CompareOp; value: FilterLiteral }
  /** `field a TO b`: a <= value <= b; a and b are both numbers or both not. */
  | { kind: 'range'; field: string; low: FilterLiteral; high: FilterLiteral }
  /** `field IN [a, b]`; `NOT IN` parses as not(in). */
  | { kind: 'in'; field: string; values: FilterLiteral[] }
  /** The path is present, whatever its value (null included). */
  | { kind: 'exists'; field: string }
  /** A value at the path is null. */
  | { kind: 'isNull'; field: string }
  /** A value at the path is "", [] or {}. */
  | { kind: 'isEmpty'; field: string };

export interface SortClause {
  field: string;
  direction: 'asc' | 'desc';
}

/**
 * What a document holds at one field path, arrays flattened: the facts every condition above is
 * decided on, and what a serve-node's field index stores for the path.
 */
export interface FieldFacts {
  exists: boolean;
  isNull: boolean;
  isEmpty: boolean;
  strings: string[];
  numbers: number[];
  booleans: boolean[];
}
