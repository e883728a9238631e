/**
 * parseFilter: the text of a `filter=` parameter into the tree of ast.ts, by recursive descent
 * whose depth is bounded by limits.depthMax (each "(" and NOT is one level), so no input can
 * exhaust the stack. Grammar and semantics: README.md beside this file.
 */
import type { CompareOp, FilterLiteral, FilterNode } from './ast.js';
import { FilterError, characterPosition, utf8Bytes, utf8IndexPast } from './filter-error.js';
import { fieldPathProblem } from './field-path.js';
import { type Token, KEYWORDS, Lexer, UNSUPPORTED_KEYWORDS, isKeyword } from './lexer.js';
import { type FilterLimits, resolveLimits } from './limits.js';

export { parseFacets, parseSort } from './parse-lists.js';

/** JSON's number grammar: a literal with this text also compares as a number. */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const OPERATORS =
  '=, !=, >, >=, <, <=, IN, NOT IN, TO, EXISTS, NOT EXISTS, IS NULL, IS NOT NULL, IS EMPTY or IS NOT EMPTY';
const COMPARE_TOKENS = new Set(['=', '!=', '>', '>=', '<', '<=']);
const DESCRIBED_TEXT_MAX = 40;

export function parseFilter(text: string, limits?: Partial<FilterLimits>): FilterNode {
  const resolved = resolveLimits(limits);
  const past = utf8IndexPast(text, resolved.filterBytesMax);
  if (past.index >= 0) {
    const position = characterPosition(text, past.index);
    throw new FilterError(
      'invalid_filter',
      `the filter is longer than ${resolved.filterBytesMax} bytes at position ${position} (limit filterBytesMax)`,
      position,
      { limit: 'filterBytesMax', max: resolved.filterBytesMax },
    );
  }
  return new FilterParser(text, resolved).filter();
}

/** Every field the filter names, each once, in the order they first appear. */
export function filterFields(node: FilterNode): string[] {
  const fields = new Set<string>();
  const pending: FilterNode[] = [node];
  while (pending.length > 0) {
    const next = pending.pop() as FilterNode;
    if (next.kind === 'and' || next.kind === 'or') {
      for (let i = next.children.length - 1; i >= 0; i--) pending.push(next.children[i]);
    } else if (next.kind === 'not') {
      pending.push(next.child);
    } else {
      fields.add(next.field);
    }
  }
  return [...fields];
}

class FilterParser {
  private readonly lexer: Lexer;
  private depth = 0;
  private conditions = 0;

  constructor(
    text: string,
    private readonly limits: FilterLimits,
  ) {
    this.lexer = new Lexer(text);
  }

  filter(): FilterNode {
    const node = this.expression();
    const next = this.lexer.peek();
    if (next.kind !== 'end') {
      const hint =
        next.kind === 'word' && KEYWORDS.has(next.text.toUpperCase())
          ? ' (keywords are upper case)'
          : next.kind === ')'
            ? ' (no "(" is open)'
            : '';
      throw this.expected(next, 'AND, OR or the end of the filter', hint);
    }
    return node;
  }

  private expression(): FilterNode {
    const children = [this.conjunction()];
    while (this.isKeyword(this.lexer.peek(), 'OR')) {
      this.lexer.next();
      children.push(this.conjunction());
    }
    return children.length === 1 ? children[0] : { kind: 'or', children };
  }

  private conjunction(): FilterNode {
    const children = [this.negation()];
    while (this.isKeyword(this.lexer.peek(), 'AND')) {
      this.lexer.next();
      children.push(this.negation());
    }
    return children.length === 1 ? children[0] : { kind: 'and', children };
  }

  private negation(): FilterNode {
    const next = this.lexer.peek();
    if (!this.isKeyword(next, 'NOT')) return this.primary();
    this.lexer.next();
    this.enter(next);
    const child = this.negation();
    this.depth--;
    return { kind: 'not', child };
  }

  private primary(): FilterNode {
    const open = this.lexer.peek();
    if (open.kind !== '(') return this.condition();
    this.lexer.next();
    this.enter(open);
    const node = this.expression();
    const close = this.lexer.next();
    if (close.kind !== ')') {
      const opened = characterPosition(this.lexer.text, open.start);
      throw this.expected(close, '")"', ` (the "(" at position ${opened} is not closed)`);
    }
    this.depth--;
    return node;
  }

  private condition(): FilterNode {
    const fieldToken = this.lexer.next();
    if (!this.isValue(fieldToken)) {
      throw this.expected(
        fieldToken,
        'a condition (a field, "(" or NOT)',
        this.quoteHint(fieldToken),
      );
    }
    const field = this.fieldPath(fieldToken);
    this.conditions++;
    if (this.conditions > this.limits.conditionsMax) {
      throw this.limitError(
        fieldToken,
        `more than ${this.limits.conditionsMax} conditions`,
        'conditionsMax',
      );
    }
    const op = this.lexer.next();
    if (COMPARE_TOKENS.has(op.kind)) {
      const value = this.literal(`"${op.kind}"`);
      if (op.kind === '!=')
        return { kind: 'not', child: { kind: 'compare', field, op: '=', value } };
      return { kind: 'compare', field, op: op.kind as CompareOp, value };
    }
    if (this.isKeyword(op, 'IN')) return this.inList(field);
    if (this.isKeyword(op, 'EXISTS')) return { kind: 'exists', field };
    if (this.isKeyword(op, 'NOT')) return this.negatedCondition(field);
    if (this.isKeyword(op, 'IS')) return this.isCondition(field);
    if (this.isValue(op)) return this.range(field, fieldToken, op);
    const unsupported = op.kind === 'word' && UNSUPPORTED_KEYWORDS.has(op.text);
    throw this.expected(
      op,
      `an operator (${OPERATORS}) after the field ${JSON.stringify(field)}`,
      unsupported ? ', which tailbase does not support' : '',
    );
  }

  private negatedCondition(field: string): FilterNode {
    const next = this.lexer.next();
    if (this.isKeyword(next, 'IN')) return { kind: 'not', child: this.inList(field) };
    if (this.isKeyword(next, 'EXISTS')) return { kind: 'not', child: { kind: 'exists', field } };
    throw this.expected(next, 'IN or EXISTS after "NOT"');
  }

  private isCondition(field: string): FilterNode {
    let next = this.lexer.next();
    const negated = this.isKeyword(next, 'NOT');
    if (negated) next = this.lexer.next();
    let node: FilterNode;
    if (this.isKeyword(next, 'NULL')) node = { kind: 'isNull', field };
    else if (this.isKeyword(next, 'EMPTY')) node = { kind: 'isEmpty', field };
    else
      throw this.expected(
        next,
        negated ? 'NULL or EMPTY after "IS NOT"' : 'NULL, EMPTY or NOT after "IS"',
      );
    return negated ? { kind: 'not', child: node } : node;
  }

  private range(field: string, fieldToken: Token, lowToken: Token): FilterNode {
    const to = this.lexer.next();
    if (!this.isKeyword(to, 'TO')) {
      // `a LIKE b`: an operator we do not know reads as the low end of a range; say so plainly.
      if (lowToken.kind === 'word' && /^[A-Z]+$/.test(lowToken.text)) {
        throw this.expected(
          lowToken,
          `an operator (${OPERATORS}) after the field ${JSON.stringify(field)}`,
          ', which is not an operator',
        );
      }
      throw this.expected(
        to,
        `TO after ${this.describe(lowToken)} in a range like "${fieldToken.text} 1 TO 9"`,
      );
    }
    const low = this.literalOf(lowToken);
    const highToken = this.lexer.next();
    if (!this.isValue(highToken)) {
      throw this.expected(highToken, 'a value after "TO"', this.quoteHint(highToken));
    }
    const high = this.literalOf(highToken);
    if ((low.number === null) !== (high.number === null)) {
      throw this.expected(
        highToken,
        `${low.number === null ? 'a value that is not a number' : 'a number'} after "TO"`,
        ` (the low end ${JSON.stringify(low.text)} ${low.number === null ? 'is not' : 'is'} a number)`,
      );
    }
    return { kind: 'range', field, low, high };
  }

  private inList(field: string): FilterNode {
    const open = this.lexer.next();
    if (open.kind !== '[') throw this.expected(open, '"[" after "IN"');
    const values: FilterLiteral[] = [];
    let after = '"["';
    while (this.lexer.peek().kind !== ']') {
      const valueToken = this.lexer.peek();
      if (values.length >= this.limits.inValuesMax) {
        throw this.limitError(
          valueToken,
          `more than ${this.limits.inValuesMax} values in IN [...]`,
          'inValuesMax',
        );
      }
      values.push(this.literal(after));
      const separator = this.lexer.peek();
      if (separator.kind === ',') {
        this.lexer.next();
        after = '","';
      } else if (separator.kind !== ']') {
        throw this.expected(separator, '"," or "]" in the IN list');
      }
    }
    this.lexer.next();
    return { kind: 'in', field, values };
  }

  private literal(after: string): FilterLiteral {
    const token = this.lexer.next();
    if (!this.isValue(token)) {
      throw this.expected(token, `a value after ${after}`, this.quoteHint(token));
    }
    return this.literalOf(token);
  }

  private literalOf(token: Token): FilterLiteral {
    if (utf8Bytes(token.text) > this.limits.literalBytesMax) {
      throw this.limitError(
        token,
        `a value longer than ${this.limits.literalBytesMax} bytes`,
        'literalBytesMax',
      );
    }
    if (!JSON_NUMBER.test(token.text)) return { text: token.text, number: null };
    const number = Number(token.text);
    if (!Number.isFinite(number)) {
      throw this.expected(token, 'a number within the range of a 64-bit float');
    }
    return { text: token.text, number };
  }

  private fieldPath(token: Token): string {
    if (utf8Bytes(token.text) > this.limits.fieldBytesMax) {
      throw this.limitError(
        token,
        `a field longer than ${this.limits.fieldBytesMax} bytes`,
        'fieldBytesMax',
      );
    }
    const problem = fieldPathProblem(token.text);
    if (problem !== null) throw this.lexer.error(token.start, problem);
    return token.text;
  }

  private enter(token: Token): void {
    this.depth++;
    if (this.depth > this.limits.depthMax) {
      throw this.limitError(
        token,
        `more than ${this.limits.depthMax} parentheses and NOTs open at once`,
        'depthMax',
      );
    }
  }

  private isKeyword(token: Token, keyword: string): boolean {
    return token.kind === 'word' && token.text === keyword;
  }

  /** A field or a literal: a quoted string, or a word that is not a keyword. */
  private isValue(token: Token): boolean {
    return token.kind === 'string' || (token.kind === 'word' && !isKeyword(token.text));
  }

  private quoteHint(token: Token): string {
    return token.kind === 'word' && isKeyword(token.text)
      ? ' (quote a keyword to use it as a value)'
      : '';
  }

  private describe(token: Token): string {
    if (token.kind === 'end') return 'the end of the filter';
    const shown =
      token.text.length > DESCRIBED_TEXT_MAX
        ? `${token.text.slice(0, DESCRIBED_TEXT_MAX)}…`
        : token.text;
    if (token.kind === 'string') return `the string ${JSON.stringify(shown)}`;
    if (token.kind === 'word' && isKeyword(token.text)) return `the keyword ${token.text}`;
    return JSON.stringify(shown);
  }

  private expected(token: Token, what: string, suffix = ''): FilterError {
    const position = characterPosition(this.lexer.text, token.start);
    return new FilterError(
      'invalid_filter',
      `expected ${what} at position ${position}, found ${this.describe(token)}${suffix}`,
      position,
      { expected: what },
    );
  }

  private limitError(token: Token, what: string, limit: keyof FilterLimits): FilterError {
    const position = characterPosition(this.lexer.text, token.start);
    const max = this.limits[limit];
    return new FilterError(
      'invalid_filter',
      `the filter has ${what} at position ${position} (limit ${limit})`,
      position,
      { limit, max },
    );
  }
}
