// Proves every hostile or malformed filter is a FilterError (code, position, a message naming the
// position), never another exception, and that no input can overflow the parser's stack.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TailbaseError } from '../../shared/errors.js';
import { FilterError } from '../../shared/filter/filter-error.js';
import { parseFilter } from '../../shared/filter/parse.js';
import { testSeed } from '../harness/random.js';

const roomy = { filterBytesMax: 1_000_000 };

interface Hostile {
  name: string;
  text: string;
  position: number;
  /** A part of the message, besides the position it must name. */
  says: string;
  limits?: Parameters<typeof parseFilter>[1];
  limit?: string;
}

const HOSTILE: Hostile[] = [
  {
    name: '10,000 "(" past the size limit',
    text: `${'('.repeat(10_000)}a = 1${')'.repeat(10_000)}`,
    position: 4096,
    says: 'longer than 4096 bytes',
    limit: 'filterBytesMax',
  },
  {
    name: '10,000 "(" past the depth limit',
    text: `${'('.repeat(10_000)}a = 1${')'.repeat(10_000)}`,
    limits: roomy,
    position: 16,
    says: 'more than 16 parentheses and NOTs',
    limit: 'depthMax',
  },
  {
    name: '10,000 NOTs',
    text: `${'NOT '.repeat(10_000)}a = 1`,
    limits: roomy,
    position: 64,
    says: 'more than 16',
    limit: 'depthMax',
  },
  {
    name: '17 nested parentheses',
    text: `${'('.repeat(17)}a = 1${')'.repeat(17)}`,
    position: 16,
    says: 'depthMax',
    limit: 'depthMax',
  },
  {
    name: 'a 10 kB string',
    text: `a = "${'x'.repeat(10_000)}"`,
    position: 4096,
    says: 'filterBytesMax',
    limit: 'filterBytesMax',
  },
  {
    name: 'a 10 kB string, the filter size allowed',
    text: `a = "${'x'.repeat(10_000)}"`,
    limits: roomy,
    position: 4,
    says: 'a value longer than 1024 bytes',
    limit: 'literalBytesMax',
  },
  {
    name: 'a 300-byte field',
    text: `${'f'.repeat(300)} = 1`,
    position: 0,
    says: 'a field longer than 256 bytes',
    limit: 'fieldBytesMax',
  },
  {
    name: 'multi-byte characters past the size',
    text: `a = "${'é'.repeat(3000)}"`,
    position: 2050,
    says: 'longer than 4096 bytes',
    limit: 'filterBytesMax',
  },
  {
    name: '65 conditions',
    text: Array.from({ length: 65 }, (_, i) => `f${i} = 1`).join(' OR '),
    position: 10 * 10 + 54 * 11,
    says: 'more than 64 conditions',
    limit: 'conditionsMax',
  },
  {
    name: '257 IN values',
    text: `a IN [${Array.from({ length: 257 }, () => '1').join(',')}]`,
    position: 6 + 256 * 2,
    says: 'more than 256 values',
    limit: 'inValuesMax',
  },
  {
    name: 'an unclosed "("',
    text: '(a = 1',
    position: 6,
    says: 'expected ")" at position 6, found the end of the filter (the "(" at position 0 is not closed)',
  },
  {
    name: 'an unopened ")"',
    text: 'a = 1)',
    position: 5,
    says: 'expected AND, OR or the end of the filter at position 5, found ")" (no "(" is open)',
  },
  {
    name: 'nested unclosed',
    text: '(a = 1 OR (b = 2)',
    position: 17,
    says: 'the "(" at position 0 is not closed',
  },
  { name: 'empty parentheses', text: '()', position: 1, says: 'expected a condition' },
  { name: 'a NUL character', text: 'a = 1\u0000', position: 5, says: 'NUL' },
  { name: 'a NUL in a string', text: 'a = "x\u0000"', position: 6, says: 'NUL' },
  { name: 'a NUL in a word', text: 'a\u0000 = 1', position: 1, says: 'NUL' },
  {
    name: 'TO with a number and a word',
    text: 'year 1960 TO soon',
    position: 13,
    says: 'expected a number after "TO" at position 13, found "soon" (the low end "1960" is a number)',
  },
  {
    name: 'TO with a word and a number',
    text: 'year then TO 1970',
    position: 13,
    says: 'not a number',
  },
  {
    name: 'TO without a high end',
    text: 'year 1960 TO',
    position: 12,
    says: 'expected a value after "TO"',
  },
  {
    name: 'a range without TO',
    text: 'year 1960 1970',
    position: 10,
    says: 'expected TO after "1960"',
  },
  {
    name: 'IN without brackets',
    text: 'genre IN horror',
    position: 9,
    says: 'expected "[" after "IN"',
  },
  {
    name: 'IN with parentheses',
    text: 'genre IN (a, b)',
    position: 9,
    says: 'expected "[" after "IN"',
  },
  {
    name: 'an unclosed IN list',
    text: 'genre IN [a, b',
    position: 14,
    says: 'expected "," or "]" in the IN list',
  },
  {
    name: 'an IN list of only a comma',
    text: 'genre IN [,]',
    position: 10,
    says: 'expected a value after "["',
  },
  {
    name: 'an IN list with two commas',
    text: 'genre IN [a,,b]',
    position: 12,
    says: 'expected a value after ","',
  },
  { name: 'an IN list missing a comma', text: 'genre IN [a b]', position: 12, says: '"," or "]"' },
  {
    name: 'the empty filter',
    text: '',
    position: 0,
    says: 'expected a condition (a field, "(" or NOT) at position 0, found the end of the filter',
  },
  { name: 'only spaces', text: '   ', position: 3, says: 'found the end of the filter' },
  {
    name: 'trailing garbage',
    text: 'a = 1 b',
    position: 6,
    says: 'expected AND, OR or the end of the filter at position 6, found "b"',
  },
  { name: 'a trailing AND', text: 'a = 1 AND', position: 9, says: 'expected a condition' },
  { name: 'a trailing NOT', text: 'NOT', position: 3, says: 'expected a condition' },
  { name: 'OR OR', text: 'a = 1 OR OR b = 2', position: 9, says: 'found the keyword OR' },
  {
    name: 'lower-case and',
    text: 'a = 1 and b = 2',
    position: 6,
    says: '(keywords are upper case)',
  },
  {
    name: 'an unknown operator',
    text: 'title LIKE dune',
    position: 6,
    says: 'found "LIKE", which is not an operator',
  },
  {
    name: 'CONTAINS, which we do not support',
    text: 'title CONTAINS dune',
    position: 6,
    says: 'which tailbase does not support',
  },
  { name: 'STARTS WITH', text: 'title STARTS WITH d', position: 6, says: 'does not support' },
  {
    name: 'a keyword as a value',
    text: 'a = AND',
    position: 4,
    says: 'found the keyword AND (quote a keyword to use it as a value)',
  },
  {
    name: 'a keyword as a field',
    text: 'IN = 1',
    position: 0,
    says: 'found the keyword IN (quote',
  },
  { name: 'no field', text: '= 1', position: 0, says: 'expected a condition' },
  {
    name: 'no value',
    text: 'a =',
    position: 3,
    says: 'expected a value after "=" at position 3, found the end of the filter',
  },
  { name: 'no operator', text: 'a', position: 1, says: 'expected an operator' },
  { name: 'a doubled operator', text: 'a == 1', position: 3, says: 'expected a value after "="' },
  { name: 'a lone !', text: 'a ! 1', position: 2, says: 'expected "=" after "!"' },
  {
    name: 'a character outside the syntax',
    text: 'a = @home',
    position: 4,
    says: 'unexpected character "@"',
  },
  {
    name: 'IS followed by nothing known',
    text: 'a IS nothing',
    position: 5,
    says: 'expected NULL, EMPTY or NOT after "IS"',
  },
  { name: 'IS null in lower case', text: 'a IS null', position: 5, says: 'NULL, EMPTY or NOT' },
  {
    name: 'IS NOT followed by EXISTS',
    text: 'a IS NOT EXISTS',
    position: 9,
    says: 'expected NULL or EMPTY after "IS NOT"',
  },
  {
    name: 'NOT followed by =',
    text: 'a NOT = 1',
    position: 6,
    says: 'expected IN or EXISTS after "NOT"',
  },
  {
    name: 'an unterminated string',
    text: "a = 'dune",
    position: 4,
    says: "expected a closing ' for the string that starts at position 4",
  },
  { name: 'an escape we do not know', text: 'a = "\\q"', position: 5, says: 'expected an escape' },
  { name: 'a backslash at the end', text: 'a = "\\', position: 5, says: 'expected an escape' },
  { name: 'an escaped NUL', text: 'a = "\\u{0}"', position: 5, says: 'code point' },
  { name: 'an escaped surrogate', text: 'a = "\\u{D800}"', position: 5, says: 'surrogate' },
  { name: 'an escape past Unicode', text: 'a = "\\u{110000}"', position: 5, says: 'code point' },
  {
    name: 'a number past a double',
    text: 'a > 1e999',
    position: 4,
    says: 'a number within the range of a 64-bit float',
  },
  {
    name: 'an empty field segment',
    text: 'a..b = 1',
    position: 0,
    says: 'the field "a..b" has an empty segment (a path is like "a.b") at position 0',
  },
  { name: 'an empty quoted field', text: '"" = 1', position: 0, says: 'has an empty segment' },
  {
    name: 'a position counted in characters',
    text: '"🐻🐻" = 1 2',
    position: 9,
    says: 'at position 9',
  },
];

describe('the hostile-filter table', () => {
  for (const hostile of HOSTILE) {
    it(`refuses ${hostile.name}`, () => {
      let thrown: unknown;
      try {
        parseFilter(hostile.text, hostile.limits);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(FilterError);
      const error = thrown as FilterError;
      expect(error.code).toBe('invalid_filter');
      expect(error.status).toBe(400);
      expect(error.position).toBe(hostile.position);
      expect(error.message).toContain(`at position ${hostile.position}`);
      expect(error.message).toContain(hostile.says);
      expect(error.toBody().error).toMatchObject({
        code: 'invalid_filter',
        position: hostile.position,
      });
      if (hostile.limit !== undefined) expect(error.details.limit).toBe(hostile.limit);
    });
  }

  it('accepts each limit exactly at its value', () => {
    expect(() => parseFilter(`${'('.repeat(16)}a = 1${')'.repeat(16)}`)).not.toThrow();
    expect(() => parseFilter(`${'NOT '.repeat(16)}a = 1`)).not.toThrow();
    expect(() => parseFilter(Array.from({ length: 64 }, () => 'a = 1').join(' OR '))).not.toThrow();
    expect(() => parseFilter(`a IN [${Array(256).fill('1').join(',')}]`)).not.toThrow();
    expect(() => parseFilter(`a = "${'x'.repeat(1024)}"`)).not.toThrow();
    expect(() => parseFilter(`a = 1 ${' '.repeat(4096 - 6)}`)).not.toThrow();
    // Depth counts open levels, not their sum: many shallow groups are fine.
    expect(() => parseFilter(Array(40).fill('(NOT a = 1)').join(' AND '))).not.toThrow();
  });

  it('turns any text into a tree or a FilterError, nothing else', () => {
    const seed = testSeed('filter parser fuzz');
    const piece = fc.constantFrom(
      'a',
      'b.c',
      '1',
      '-2.5',
      '1e999',
      '"x',
      '"y"',
      "'z'",
      '\\',
      '\u0000',
      '🐻',
      ' ',
      '(',
      ')',
      '[',
      ']',
      ',',
      '=',
      '!=',
      '!',
      '>',
      '>=',
      '<',
      '<=',
      'AND',
      'OR',
      'NOT',
      'IN',
      'TO',
      'EXISTS',
      'IS',
      'NULL',
      'EMPTY',
      'and',
    );
    const text = fc.oneof(
      fc.array(piece, { maxLength: 30 }).map((p) => p.join(' ')),
      fc.array(piece, { maxLength: 30 }).map((p) => p.join('')),
      fc.string(),
    );
    fc.assert(
      fc.property(text, (filter) => {
        try {
          parseFilter(filter);
        } catch (error) {
          expect(error).toBeInstanceOf(FilterError);
          expect((error as TailbaseError).message).toMatch(/at position \d+/);
        }
      }),
      { seed, numRuns: 3000 },
    );
  });
});
