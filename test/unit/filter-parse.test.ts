// Proves the filter, sort and facets parsers read Meilisearch's syntax into the trees of
// shared/filter/ast.ts, and that printFilter's text parses back to the tree it printed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompareOp, FilterLiteral, FilterNode } from '../../shared/filter/ast.js';
import { FIELD_PATH_BYTES_MAX } from '../../shared/collection-settings.js';
import { FilterError } from '../../shared/filter/filter-error.js';
import { FILTER_LIMITS_DEFAULT, resolveLimits } from '../../shared/filter/limits.js';
import { filterFields, parseFacets, parseFilter, parseSort } from '../../shared/filter/parse.js';
import { printFilter } from '../../shared/filter/print.js';
import { testSeed } from '../harness/random.js';

// Generated trees may nest and branch past the default limits; the limits have their own tests.
const roomy = { depthMax: 1000, conditionsMax: 1000, filterBytesMax: 1_000_000 };
const lit = (text: string, number: number | null = null): FilterLiteral => ({ text, number });
const num = (text: string): FilterLiteral => ({ text, number: Number(text) });
const cmp = (field: string, op: CompareOp, value: FilterLiteral): FilterNode => ({
  kind: 'compare',
  field,
  op,
  value,
});
const not = (child: FilterNode): FilterNode => ({ kind: 'not', child });
const and = (...children: FilterNode[]): FilterNode => ({ kind: 'and', children });
const or = (...children: FilterNode[]): FilterNode => ({ kind: 'or', children });

const VALID: [string, FilterNode][] = [
  ['year = 1965', cmp('year', '=', num('1965'))],
  ['year=1965', cmp('year', '=', num('1965'))],
  ['genre != horror', not(cmp('genre', '=', lit('horror')))],
  ['price > 9.5', cmp('price', '>', num('9.5'))],
  ['price >= -3', cmp('price', '>=', num('-3'))],
  ['price < 1e3', cmp('price', '<', num('1e3'))],
  ['price <= 0', cmp('price', '<=', num('0'))],
  // Quoting changes nothing but what the text may hold: '1e+3' is still a number.
  ["price <= '1e+3'", cmp('price', '<=', num('1e+3'))],
  // Not JSON numbers: leading zeros, a trailing dot, hex.
  ['code = 007', cmp('code', '=', lit('007'))],
  ['code = 1.', cmp('code', '=', lit('1.'))],
  ['code = 0x10', cmp('code', '=', lit('0x10'))],
  ['inStock = true', cmp('inStock', '=', lit('true'))],
  ['year 1960 TO 1970', { kind: 'range', field: 'year', low: num('1960'), high: num('1970') }],
  ['name a TO m', { kind: 'range', field: 'name', low: lit('a'), high: lit('m') }],
  [
    'genre IN [horror, "science fiction", 3]',
    {
      kind: 'in',
      field: 'genre',
      values: [lit('horror'), lit('science fiction'), num('3')],
    },
  ],
  ['genre IN []', { kind: 'in', field: 'genre', values: [] }],
  ['genre IN[a,]', { kind: 'in', field: 'genre', values: [lit('a')] }],
  ['genre NOT IN [a, b]', not({ kind: 'in', field: 'genre', values: [lit('a'), lit('b')] })],
  ['cover EXISTS', { kind: 'exists', field: 'cover' }],
  ['cover NOT EXISTS', not({ kind: 'exists', field: 'cover' })],
  ['cover IS NULL', { kind: 'isNull', field: 'cover' }],
  ['cover IS NOT NULL', not({ kind: 'isNull', field: 'cover' })],
  ['cover IS EMPTY', { kind: 'isEmpty', field: 'cover' }],
  ['cover IS  NOT\tEMPTY', not({ kind: 'isEmpty', field: 'cover' })],
  ['author.name = "Frank Herbert"', cmp('author.name', '=', lit('Frank Herbert'))],
  ["'dog race' = 'Bernese Mountain'", cmp('dog race', '=', lit('Bernese Mountain'))],
  ['"AND" = "OR"', cmp('AND', '=', lit('OR'))],
  ['t = "say \\"hi\\" \\\\ \\n\\t\\r \\u{1F43B}"', cmp('t', '=', lit('say "hi" \\ \n\t\r 🐻'))],
  ["t = 'it\\'s'", cmp('t', '=', lit("it's"))],
  ['t = ""', cmp('t', '=', lit(''))],
  ['été = café', cmp('été', '=', lit('café'))],
  [
    'a = 1 AND b = 2 OR c = 3',
    or(and(cmp('a', '=', num('1')), cmp('b', '=', num('2'))), cmp('c', '=', num('3'))),
  ],
  [
    'a = 1 OR b = 2 AND c = 3',
    or(cmp('a', '=', num('1')), and(cmp('b', '=', num('2')), cmp('c', '=', num('3')))),
  ],
  [
    '(a = 1 OR b = 2) AND c = 3',
    and(or(cmp('a', '=', num('1')), cmp('b', '=', num('2'))), cmp('c', '=', num('3'))),
  ],
  [
    'a = 1 AND (b = 2 AND c = 3)',
    and(cmp('a', '=', num('1')), and(cmp('b', '=', num('2')), cmp('c', '=', num('3')))),
  ],
  ['((a = 1))', cmp('a', '=', num('1'))],
  ['NOT a = 1', not(cmp('a', '=', num('1')))],
  ['NOT NOT a = 1', not(not(cmp('a', '=', num('1'))))],
  ['NOT a = 1 AND b = 2', and(not(cmp('a', '=', num('1'))), cmp('b', '=', num('2')))],
  ['NOT (a = 1 OR b EXISTS)', not(or(cmp('a', '=', num('1')), { kind: 'exists', field: 'b' }))],
  [' \n a = x \r\n', cmp('a', '=', lit('x'))],
  // Lower-case keywords are words (as in Meilisearch): here the low end of a range.
  ['a and TO or', { kind: 'range', field: 'a', low: lit('and'), high: lit('or') }],
];

describe('parseFilter', () => {
  it('reads each filter of the table into its tree', () => {
    for (const [text, tree] of VALID) {
      expect(parseFilter(text), text).toEqual(tree);
    }
  });

  it('refuses a word outside letters, digits, _ - . (quote it), as Meilisearch does', () => {
    // 🐻 is not alphabetic: Meilisearch refuses it bare too.
    expect(() => parseFilter('channel = 🐻')).toThrow(FilterError);
    expect(parseFilter('channel = "🐻"')).toEqual(cmp('channel', '=', lit('🐻')));
  });

  it('lists every field a filter names, once, in order', () => {
    const tree = parseFilter('b = 1 AND (a EXISTS OR NOT c.d IN [1]) AND b < 3 OR e 1 TO 2');
    expect(filterFields(tree)).toEqual(['b', 'a', 'c.d', 'e']);
  });

  it('round-trips any tree through printFilter and parseFilter', () => {
    const seed = testSeed('filter print round-trip');
    fc.assert(
      fc.property(treeArbitrary, (tree) => {
        expect(parseFilter(printFilter(tree), roomy)).toEqual(tree);
      }),
      { seed, numRuns: 500 },
    );
  });
});

describe('parseSort and parseFacets', () => {
  it('reads sort clauses, the direction required, the field before the last ":"', () => {
    expect(parseSort('year:desc')).toEqual([{ field: 'year', direction: 'desc' }]);
    expect(parseSort('year:desc, title:asc')).toEqual([
      { field: 'year', direction: 'desc' },
      { field: 'title', direction: 'asc' },
    ]);
    expect(parseSort('a:b:asc')).toEqual([{ field: 'a:b', direction: 'asc' }]);
  });

  it('refuses sorts without a direction, with another one, empty or repeated', () => {
    const cases: [string, number][] = [
      ['year', 4],
      ['year:DESC', 5],
      ['year:up', 5],
      ['', 0],
      ['a:asc,,b:asc', 6],
      ['a:asc,', 6],
      ['a:asc, a:desc', 7],
      ['a..b:asc', 0],
      [':asc', 0],
    ];
    for (const [text, position] of cases) {
      const error = caught(() => parseSort(text));
      expect(error.code, text).toBe('invalid_sort');
      expect(error.position, text).toBe(position);
      expect(error.message, text).toContain(`at position ${position}`);
    }
    const error = caught(() => parseSort('a:asc,b:asc,c:asc', { sortClausesMax: 2 }));
    expect([error.position, error.details.limit, error.details.max]).toEqual([
      12,
      'sortClausesMax',
      2,
    ]);
  });

  it('reads facets, refusing empty, repeated or too many fields', () => {
    expect(parseFacets('genre, author.name')).toEqual(['genre', 'author.name']);
    for (const [text, position] of [
      ['', 0],
      ['a,a', 2],
      ['a,,b', 2],
      ['a.', 0],
    ] as const) {
      const error = caught(() => parseFacets(text));
      expect([error.code, error.position], text).toEqual(['invalid_facets', position]);
    }
    const many = Array.from({ length: 17 }, (_, i) => `f${i}`).join(',');
    expect(caught(() => parseFacets(many)).details).toMatchObject({
      limit: 'facetFieldsMax',
      max: 16,
    });
    expect(caught(() => parseFacets('x'.repeat(257))).details.limit).toBe('fieldBytesMax');
  });
});

describe('resolveLimits', () => {
  it('applies overrides to the defaults and refuses a limit that is not a positive integer', () => {
    expect(resolveLimits({ depthMax: 3 })).toEqual({ ...FILTER_LIMITS_DEFAULT, depthMax: 3 });
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => resolveLimits({ inValuesMax: bad }), String(bad)).toThrow(/inValuesMax/);
    }
    expect(FILTER_LIMITS_DEFAULT.fieldBytesMax).toBe(FIELD_PATH_BYTES_MAX);
  });
});

function caught(run: () => unknown): FilterError {
  try {
    run();
  } catch (error) {
    if (error instanceof FilterError) return error;
    throw error;
  }
  throw new Error('expected a FilterError');
}

// Trees the parser can produce: and/or of two or more, literals whose number is their text's.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const textArbitrary = fc.oneof(
  fc.constantFrom(
    'a',
    'b.c',
    'AND',
    'x y',
    '"',
    "'",
    '\\',
    '',
    'é',
    '🐻',
    '\n',
    '1',
    '-2.5',
    '1e+3',
  ),
  fc.string({ unit: 'grapheme', maxLength: 8 }).filter((s) => !s.includes('\0')),
);
const literalArbitrary = fc
  .oneof(
    textArbitrary,
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.integer().map(String),
  )
  .map((text) => ({
    text,
    number: JSON_NUMBER.test(text) && Number.isFinite(Number(text)) ? Number(text) : null,
  }));
const numberLiteral = fc.integer({ min: -1000, max: 1000 }).map((n) => num(String(n)));
const fieldArbitrary = fc
  .array(fc.constantFrom('a', 'b', 'price', 'x y', 'NOT', 'é', '🐻', '1'), {
    minLength: 1,
    maxLength: 3,
  })
  .map((segments) => segments.join('.'));
const leafArbitrary: fc.Arbitrary<FilterNode> = fc.oneof(
  fc.record({
    kind: fc.constant('compare' as const),
    field: fieldArbitrary,
    op: fc.constantFrom<CompareOp>('=', '>', '>=', '<', '<='),
    value: literalArbitrary,
  }),
  fc.record({
    kind: fc.constant('range' as const),
    field: fieldArbitrary,
    low: numberLiteral,
    high: numberLiteral,
  }),
  fc.record({
    kind: fc.constant('range' as const),
    field: fieldArbitrary,
    low: fc.constantFrom(lit('a'), lit('m z')),
    high: fc.constantFrom(lit('b'), lit('')),
  }),
  fc.record({
    kind: fc.constant('in' as const),
    field: fieldArbitrary,
    values: fc.array(literalArbitrary, { maxLength: 4 }),
  }),
  fc.record({
    kind: fc.constantFrom('exists' as const, 'isNull' as const, 'isEmpty' as const),
    field: fieldArbitrary,
  }),
);
const treeArbitrary: fc.Arbitrary<FilterNode> = fc
  .letrec<{ node: FilterNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leafArbitrary,
      fc.record({ kind: fc.constant('not' as const), child: tie('node') }),
      fc.record({
        kind: fc.constantFrom('and' as const, 'or' as const),
        children: fc.array(tie('node'), { minLength: 2, maxLength: 3 }),
      }),
    ),
  }))
  .node.filter((tree) => printFilter(tree).length < 3000);
