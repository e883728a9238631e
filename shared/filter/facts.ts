/**
 * What one JSON document holds at a field path (fieldFacts), the key it sorts by (sortValue), and
 * the order of those keys (compareSortValues). Both the evaluator and a serve-node's field index
 * decide on these facts, so the two agree by construction.
 */
import type { FieldFacts, SortClause } from './ast.js';
import { compareCodePoints } from '../code-points.js';

export { compareCodePoints };

/**
 * Arrays and objects nested deeper than this are not looked into: a hostile document must not
 * exhaust the stack. The same bound as the serve-node's DOCUMENT_DEPTH_MAX, so the fields a
 * filter sees are the ones the serve-node indexes.
 */
export const FACTS_DEPTH_MAX = 32;

export type SortValue = number | string | null;

/**
 * The values at `path` ("a.b.c"), arrays flattened at any level. A key may itself hold dots: the
 * path "a.b" finds both {"a": {"b": 1}} and {"a.b": 1}, as a walk that joins keys with "." does.
 * Values keep document order and repeats; an empty array is an empty value, never a value itself.
 */
export function fieldFacts(doc: unknown, path: string): FieldFacts {
  const facts: FieldFacts = {
    exists: false,
    isNull: false,
    isEmpty: false,
    strings: [],
    numbers: [],
    booleans: [],
  };
  walk(doc, path, 0, facts);
  return facts;
}

function walk(value: unknown, rest: string, depth: number, facts: FieldFacts): void {
  if (rest === '') {
    found(value, depth, facts);
    return;
  }
  if (typeof value !== 'object' || value === null || depth >= FACTS_DEPTH_MAX) return;
  if (Array.isArray(value)) {
    for (const item of value) walk(item, rest, depth + 1, facts);
    return;
  }
  // Every key the remaining path starts with, whole segments only: "a", then "a.b", ...
  let end = rest.indexOf('.');
  for (;;) {
    const key = end < 0 ? rest : rest.slice(0, end);
    if (Object.hasOwn(value, key)) {
      const inner = (value as Record<string, unknown>)[key];
      walk(inner, end < 0 ? '' : rest.slice(end + 1), depth + 1, facts);
    }
    if (end < 0) return;
    end = rest.indexOf('.', end + 1);
  }
}

function found(value: unknown, depth: number, facts: FieldFacts): void {
  switch (typeof value) {
    case 'string':
      facts.exists = true;
      facts.strings.push(value);
      if (value === '') facts.isEmpty = true;
      return;
    case 'number':
      facts.exists = true;
      facts.numbers.push(value);
      return;
    case 'boolean':
      facts.exists = true;
      facts.booleans.push(value);
      return;
    case 'object':
      facts.exists = true;
      if (value === null) {
        facts.isNull = true;
      } else if (Array.isArray(value)) {
        if (value.length === 0) facts.isEmpty = true;
        else if (depth < FACTS_DEPTH_MAX) for (const item of value) found(item, depth + 1, facts);
      } else if (isEmptyObject(value)) {
        facts.isEmpty = true;
      }
      return;
    default:
    // Not a JSON value (undefined, a function): not there.
  }
}

function isEmptyObject(value: object): boolean {
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
}

/**
 * A document's sort key for a field: its value when the path holds exactly one string, number or
 * boolean and that value is a number or a string; null otherwise (absent, null, several values,
 * a boolean), and such documents sort last. Nulls, objects and empty arrays hold no value.
 */
export function sortValue(doc: unknown, path: string): SortValue {
  return sortValueOfFacts(fieldFacts(doc, path));
}

export function sortValueOfFacts(facts: FieldFacts): SortValue {
  const { strings, numbers, booleans } = facts;
  if (strings.length + numbers.length + booleans.length !== 1) return null;
  if (numbers.length === 1) return numbers[0];
  return strings.length === 1 ? firstCodePoints(strings[0], SORT_STRING_CHARS_MAX) : null;
}

/**
 * A string sorts by its first this many characters (code points). A sorted page's cursor carries
 * the last item's sort values, through a URL, so they must be bounded: a title of 20,000
 * characters made the next page's request too large to send. Strings equal this far tie, and the
 * tie goes on to the next clause, then relevance (search) or the key.
 */
export const SORT_STRING_CHARS_MAX = 64;

function firstCodePoints(text: string, count: number): string {
  // Each code point is one or two UTF-16 units: a string this short has at most `count` of them.
  if (text.length <= count) return text;
  let end = 0;
  for (let taken = 0; taken < count && end < text.length; taken++) {
    end += text.codePointAt(end)! > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * Sort order, in both directions: numbers before strings, null last; within a type the direction
 * applies, numbers numerically and strings by code point. Returns -1, 0 or 1.
 */
export function compareSortValues(
  a: SortValue,
  b: SortValue,
  direction: SortClause['direction'],
): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;
  const order =
    typeof a === 'number' ? compareNumbers(a, b as number) : compareCodePoints(a, b as string);
  return direction === 'asc' || order === 0 ? order : -order;
}

const compareNumbers = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0);
