/**
 * printFilter: a tree back to filter text that parses to the same tree, quoting only what must be
 * quoted. For messages and logs that show a filter in one canonical form, and for the round-trip
 * property test of the parser.
 */
import type { FilterLiteral, FilterNode } from './ast.js';
import { isKeyword, isWordText } from './lexer.js';

export function printFilter(node: FilterNode): string {
  switch (node.kind) {
    case 'and':
    case 'or':
      return node.children.map(grouped).join(node.kind === 'and' ? ' AND ' : ' OR ');
    case 'not':
      return printNegation(node.child);
    case 'compare':
      return `${text(node.field)} ${node.op} ${literal(node.value)}`;
    case 'range':
      return `${text(node.field)} ${literal(node.low)} TO ${literal(node.high)}`;
    case 'in':
      return `${text(node.field)} IN [${node.values.map(literal).join(', ')}]`;
    case 'exists':
      return `${text(node.field)} EXISTS`;
    case 'isNull':
      return `${text(node.field)} IS NULL`;
    case 'isEmpty':
      return `${text(node.field)} IS EMPTY`;
  }
}

/** The short forms the parser reads as not(...): !=, NOT IN, NOT EXISTS, IS NOT ... */
function printNegation(child: FilterNode): string {
  switch (child.kind) {
    case 'compare':
      if (child.op === '=') return `${text(child.field)} != ${literal(child.value)}`;
      break;
    case 'in':
      return `${text(child.field)} NOT IN [${child.values.map(literal).join(', ')}]`;
    case 'exists':
      return `${text(child.field)} NOT EXISTS`;
    case 'isNull':
      return `${text(child.field)} IS NOT NULL`;
    case 'isEmpty':
      return `${text(child.field)} IS NOT EMPTY`;
  }
  return `NOT ${grouped(child)}`;
}

const grouped = (node: FilterNode): string =>
  node.kind === 'and' || node.kind === 'or' ? `(${printFilter(node)})` : printFilter(node);

const literal = (value: FilterLiteral): string => text(value.text);

/** Bare when the lexer reads it back as this word, else double-quoted with \\ and \" escaped. */
function text(value: string): string {
  if (isWordText(value) && !isKeyword(value)) return value;
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
