/**
 * matches: the reference semantics of ast.ts over one JSON document. The serve-node's SQL is
 * property-tested against it and the change feed filters events with it, so every rule here is
 * the documented one (README.md beside this file), decided on fieldFacts alone.
 */
import type { FieldFacts, FilterLiteral, FilterNode } from './ast.js';
import { compareCodePoints, fieldFacts } from './facts.js';

export function matches(node: FilterNode, doc: unknown): boolean {
  const factsByField = new Map<string, FieldFacts>();
  const factsOf = (field: string): FieldFacts => {
    let facts = factsByField.get(field);
    if (facts === undefined) {
      facts = fieldFacts(doc, field);
      factsByField.set(field, facts);
    }
    return facts;
  };
  const holds = (node: FilterNode): boolean => {
    switch (node.kind) {
      case 'and':
        return node.children.every(holds);
      case 'or':
        return node.children.some(holds);
      case 'not':
        return !holds(node.child);
      case 'compare': {
        const facts = factsOf(node.field);
        if (node.op === '=') return equals(facts, node.value);
        const test = ORDER_TESTS[node.op];
        const { number, text } = node.value;
        return number !== null
          ? facts.numbers.some((value) => test(compare(value, number)))
          : facts.strings.some((value) => test(compareCodePoints(value, text)));
      }
      case 'range':
        return inRange(factsOf(node.field), node.low, node.high);
      case 'in': {
        const facts = factsOf(node.field);
        return node.values.some((value) => equals(facts, value));
      }
      case 'exists':
        return factsOf(node.field).exists;
      case 'isNull':
        return factsOf(node.field).isNull;
      case 'isEmpty':
        return factsOf(node.field).isEmpty;
    }
  };
  return holds(node);
}

const ORDER_TESTS: Record<'>' | '>=' | '<' | '<=', (order: number) => boolean> = {
  '>': (order) => order > 0,
  '>=': (order) => order >= 0,
  '<': (order) => order < 0,
  '<=': (order) => order <= 0,
};

const compare = (a: number, b: number): number => (a < b ? -1 : a > b ? 1 : 0);

/** The literal's text equals a string or a boolean's name; its number equals a number. */
function equals(facts: FieldFacts, literal: FilterLiteral): boolean {
  if (facts.strings.includes(literal.text)) return true;
  if (literal.number !== null && facts.numbers.includes(literal.number)) return true;
  return facts.booleans.some((value) => String(value) === literal.text);
}

/** One value within both ends: numbers when the ends are numbers, strings when they are not. */
function inRange(facts: FieldFacts, low: FilterLiteral, high: FilterLiteral): boolean {
  if (low.number !== null && high.number !== null) {
    const [from, to] = [low.number, high.number];
    return facts.numbers.some((value) => value >= from && value <= to);
  }
  return facts.strings.some(
    (value) => compareCodePoints(value, low.text) >= 0 && compareCodePoints(value, high.text) <= 0,
  );
}
