// Proves fieldFacts finds what a key-joining walk of the document finds, matches() follows the
// semantics in shared/filter/ast.ts (examples and algebraic properties over random documents and
// filters), and sort keys order numbers, strings and nulls as documented.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_DEPTH_MAX } from '../../serve-node/collection-settings.js';
import type { CompareOp, FieldFacts, FilterNode } from '../../shared/filter/ast.js';
import { matches } from '../../shared/filter/evaluate.js';
import {
  FACTS_DEPTH_MAX,
  type SortValue,
  compareCodePoints,
  compareSortValues,
  fieldFacts,
  sortValue,
} from '../../shared/filter/facts.js';
import { parseFilter } from '../../shared/filter/parse.js';
import { printFilter } from '../../shared/filter/print.js';
import { testSeed } from '../harness/random.js';

const seed = testSeed('filter semantics');
const check = <Ts>(property: fc.IProperty<Ts>, numRuns = 300) =>
  fc.assert(property, { seed, numRuns });

describe('fieldFacts', () => {
  it('follows dotted paths, flattens arrays at any level, keeps repeats', () => {
    const doc = {
      title: 'Dune',
      year: 1965,
      tags: ['sf', ['classic', ['sf']]],
      authors: [{ name: 'Frank' }, { name: ['Brian', 7] }, 'loose'],
      'a.b': 1,
      a: { b: 2 },
    };
    expect(fieldFacts(doc, 'tags').strings).toEqual(['sf', 'classic', 'sf']);
    expect(fieldFacts(doc, 'authors.name')).toMatchObject({
      strings: ['Frank', 'Brian'],
      numbers: [7],
    });
    expect(fieldFacts(doc, 'a.b').numbers.sort()).toEqual([1, 2]);
    expect(fieldFacts(doc, 'title.x').exists).toBe(false);
    expect(fieldFacts(doc, 'missing')).toEqual({
      exists: false,
      isNull: false,
      isEmpty: false,
      strings: [],
      numbers: [],
      booleans: [],
    });
  });

  it('tells null, empty and present apart', () => {
    const facts = (value: unknown) => fieldFacts({ f: value }, 'f');
    expect(facts(null)).toMatchObject({ exists: true, isNull: true, isEmpty: false });
    for (const empty of ['', [], {}, [[]], [1, []], ['', 'x']]) {
      expect(facts(empty).isEmpty, JSON.stringify(empty)).toBe(true);
    }
    for (const full of [0, false, 'x', [0], { a: null }, [null]]) {
      expect(facts(full), JSON.stringify(full)).toMatchObject({ exists: true, isEmpty: false });
    }
    expect(facts([1, null]).isNull).toBe(true);
    expect(facts([true, 'true']).booleans).toEqual([true]);
    expect(fieldFacts({ constructor: 1 }, 'toString').exists).toBe(false);
    expect(fieldFacts(JSON.parse('{"__proto__": {"x": 3}}'), '__proto__.x').numbers).toEqual([3]);
  });

  it('does not look below the serve-node indexing depth, so 100,000 nested arrays are safe', () => {
    expect(FACTS_DEPTH_MAX).toBe(DOCUMENT_DEPTH_MAX);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(fieldFacts({ f: deep }, 'f')).toMatchObject({ exists: true, strings: [] });
    // As the serve-node's walk: a string under 32 containers (the document one of them) is seen,
    // one level deeper it is not.
    let nested: unknown = 'x';
    for (let i = 0; i < FACTS_DEPTH_MAX - 1; i++) nested = [nested];
    expect(fieldFacts({ f: nested }, 'f').strings).toEqual(['x']);
    expect(fieldFacts({ f: [nested] }, 'f').strings).toEqual([]);
  });

  it('finds what a walk joining keys with "." finds at each path', () => {
    check(
      fc.property(docArbitrary, (doc) => {
        const byPath = walkJoiningKeys(doc);
        for (const path of [...byPath.keys(), 'a', 'a.b', 'c.d', 'nope']) {
          expect(normalized(fieldFacts(doc, path)), path).toEqual(
            normalized(factsOf(byPath.get(path) ?? [])),
          );
        }
      }),
    );
  });
});

describe('matches', () => {
  const yes = (filter: string, doc: unknown) =>
    expect(matches(parseFilter(filter), doc), `${filter} on ${JSON.stringify(doc)}`).toBe(true);
  const no = (filter: string, doc: unknown) =>
    expect(matches(parseFilter(filter), doc), `${filter} on ${JSON.stringify(doc)}`).toBe(false);

  it('compares a literal as text, and as a number when it is one', () => {
    yes('year = 1965', { year: 1965 });
    yes('year = 1965', { year: '1965' });
    yes('year = 1965.0', { year: 1965 });
    no('year = 1965.0', { year: '1965' });
    yes('inStock = true', { inStock: true });
    yes('inStock = true', { inStock: 'true' });
    no('inStock = TRUE', { inStock: true });
    no('inStock = 1', { inStock: true });
    yes('year > 1900', { year: 1965 });
    no('year > 1900', { year: '1965' });
    no('name > m', { name: 5 });
    yes('name > m', { name: 'z' });
    no('flag > a', { flag: true });
    yes('year 1960 TO 1970', { year: 1960 });
    yes('year 1960 TO 1970', { year: 1970 });
    no('year 1960 TO 1970', { year: '1965' });
    yes('name a TO c', { name: 'b' });
    no('name c TO a', { name: 'b' });
    yes('genre IN [horror, 3]', { genre: 3 });
    yes('genre IN [horror, 3]', { genre: ['x', 'horror'] });
    no('genre IN []', { genre: 'x' });
  });

  it('orders strings by code point, not by UTF-16 unit or locale', () => {
    yes('s > "\\u{FFFD}"', { s: '😀' });
    no('s < "\\u{FFFD}"', { s: '😀' });
    yes('s > Z', { s: 'a' });
    yes('s < a', { s: 'Z' });
    yes('s > e', { s: 'é' });
  });

  it('holds a condition when any value at the path satisfies it', () => {
    yes('tags = sf', { tags: ['fantasy', ['sf']] });
    yes('authors.name = Frank', { authors: [{ name: 'Brian' }, { name: 'Frank' }] });
    // One value within both ends: a range is not two comparisons on a multi-valued field.
    no('x 5 TO 6', { x: [0, 10] });
    yes('x >= 5 AND x <= 6', { x: [0, 10] });
  });

  it('answers complements over every document, those without the field included', () => {
    yes('genre != horror', {});
    yes('genre != horror', { genre: null });
    no('genre != horror', { genre: ['sf', 'horror'] });
    yes('genre NOT IN [horror]', { other: 1 });
    yes('NOT year > 1900', { year: 'soon' });
    yes('cover NOT EXISTS', {});
    no('cover NOT EXISTS', { cover: null });
    yes('cover EXISTS', { cover: [] });
    yes('cover IS NULL', { cover: [1, null] });
    no('cover IS NULL', {});
    yes('cover IS NOT NULL', {});
    yes('cover IS EMPTY', { cover: {} });
    yes('cover IS NOT EMPTY', { cover: 0 });
  });

  it('holds NOT as the complement, != as NOT =, and De Morgan, on random documents', () => {
    check(
      fc.property(filterArbitrary, filterArbitrary, docArbitrary, (x, y, doc) => {
        expect(matches({ kind: 'not', child: x }, doc)).toBe(!matches(x, doc));
        const [nx, ny] = [
          parseFilter(`NOT (${printFilter(x)})`),
          parseFilter(`NOT (${printFilter(y)})`),
        ];
        const both = parseFilter(`(${printFilter(x)}) AND (${printFilter(y)})`);
        const either = parseFilter(`(${printFilter(x)}) OR (${printFilter(y)})`);
        expect(matches(parseFilter(`NOT (${printFilter(both)})`), doc)).toBe(
          matches({ kind: 'or', children: [nx, ny] }, doc),
        );
        expect(matches(parseFilter(`NOT (${printFilter(either)})`), doc)).toBe(
          matches({ kind: 'and', children: [nx, ny] }, doc),
        );
      }),
      500,
    );
    check(
      fc.property(fieldArbitrary, valueTextArbitrary, docArbitrary, (field, value, doc) => {
        const quoted = JSON.stringify(value);
        expect(matches(parseFilter(`${field} != ${quoted}`), doc)).toBe(
          matches(parseFilter(`NOT ${field} = ${quoted}`), doc),
        );
        expect(matches(parseFilter(`${field} NOT IN [${quoted}, x]`), doc)).toBe(
          matches(parseFilter(`${field} != ${quoted} AND ${field} != x`), doc),
        );
        expect(matches(parseFilter(`${field} IN [${quoted}, x]`), doc)).toBe(
          matches(parseFilter(`${field} = ${quoted} OR ${field} = x`), doc),
        );
      }),
      500,
    );
  });

  it('holds a TO b as >= a AND <= b where the field holds at most one value', () => {
    const single = fc.oneof(scalarArbitrary, fc.constant(undefined));
    const bounds = fc.oneof(
      fc.tuple(numberTextArbitrary, numberTextArbitrary),
      fc.tuple(fc.constantFrom('', 'a', 'x', 'y', 'é'), fc.constantFrom('', 'b', 'x', 'z', '😀')),
    );
    check(
      fc.property(single, bounds, (value, [low, high]) => {
        const doc = value === undefined ? {} : { f: value };
        const [a, b] = [JSON.stringify(low), JSON.stringify(high)];
        expect(matches(parseFilter(`f ${a} TO ${b}`), doc)).toBe(
          matches(parseFilter(`f >= ${a} AND f <= ${b}`), doc),
        );
      }),
      1000,
    );
  });
});

describe('sort keys', () => {
  it('is the value when the path holds exactly one number or string', () => {
    expect(sortValue({ year: 1965 }, 'year')).toBe(1965);
    expect(sortValue({ year: ['1965'] }, 'year')).toBe('1965');
    expect(sortValue({ year: [1965, null, []] }, 'year')).toBe(1965);
    for (const none of [
      {},
      { year: null },
      { year: [1, 2] },
      { year: [1, 'a'] },
      { year: true },
      { year: [3, false] },
      { year: {} },
    ]) {
      expect(sortValue(none, 'year'), JSON.stringify(none)).toBe(null);
    }
  });

  it('sorts numbers before strings and null last, in both directions', () => {
    const values: SortValue[] = [null, 'b', 10, 'a', -1, '😀', '\uFFFD', 2.5, null];
    const sorted = (direction: 'asc' | 'desc') =>
      [...values].sort((a, b) => compareSortValues(a, b, direction));
    expect(sorted('asc')).toEqual([-1, 2.5, 10, 'a', 'b', '\uFFFD', '😀', null, null]);
    expect(sorted('desc')).toEqual([10, 2.5, -1, '😀', '\uFFFD', 'b', 'a', null, null]);
  });

  it('compares strings as their UTF-8 bytes compare', () => {
    check(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(Math.sign(compareCodePoints(a, b))).toBe(
          Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))),
        );
      }),
      2000,
    );
  });

  it('is a total order: antisymmetric and transitive', () => {
    const value = fc.oneof(
      fc.constant(null),
      fc.double({ noNaN: true }),
      fc.string({ maxLength: 3 }),
    );
    check(
      fc.property(
        value,
        value,
        value,
        fc.constantFrom('asc' as const, 'desc' as const),
        (a, b, c, direction) => {
          const compare = (x: SortValue, y: SortValue) => compareSortValues(x, y, direction);
          expect(compare(a, b)).toBe(-compare(b, a) || 0);
          if (compare(a, b) <= 0 && compare(b, c) <= 0)
            expect(compare(a, c)).toBeLessThanOrEqual(0);
        },
      ),
      2000,
    );
  });
});

// Documents over a few fields whose values meet every rule: numbers and their text, booleans and
// theirs, null, empty values, arrays (nested), objects and keys holding dots.
const scalarArbitrary = fc.constantFrom<unknown>(
  0,
  1,
  2,
  -1,
  2.5,
  1965,
  '1',
  '2',
  '1965',
  'x',
  'y',
  '',
  'é',
  '😀',
  true,
  false,
  'true',
  null,
);
const valueArbitrary: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    scalarArbitrary,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('b', 'd', 'a.b'), tie('value'), { maxKeys: 2 }),
  ),
})).value;
const docArbitrary = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'a.b', 'c.d'), valueArbitrary, {
  maxKeys: 4,
});
const fieldArbitrary = fc.constantFrom('a', 'b', 'a.b', 'c.d', 'a.d');
const numberTextArbitrary = fc.constantFrom('0', '1', '2', '-1', '2.5', '1965', '1e3', '1.0');
const valueTextArbitrary = fc.oneof(
  numberTextArbitrary,
  fc.constantFrom('x', 'y', '', 'true', 'false', 'é', '😀'),
);
const literal = (text: string) => ({ text, number: /^-?[0-9]/.test(text) ? Number(text) : null });
const leafFilter: fc.Arbitrary<FilterNode> = fc.oneof(
  fc.record({
    kind: fc.constant('compare' as const),
    field: fieldArbitrary,
    op: fc.constantFrom<CompareOp>('=', '>', '>=', '<', '<='),
    value: valueTextArbitrary.map(literal),
  }),
  fc
    .tuple(fieldArbitrary, numberTextArbitrary, numberTextArbitrary)
    .map(([field, low, high]): FilterNode => ({
      kind: 'range',
      field,
      low: literal(low),
      high: literal(high),
    })),
  fc.record({
    kind: fc.constant('in' as const),
    field: fieldArbitrary,
    values: fc.array(valueTextArbitrary.map(literal), { maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constantFrom('exists' as const, 'isNull' as const, 'isEmpty' as const),
    field: fieldArbitrary,
  }),
);
const filterArbitrary: fc.Arbitrary<FilterNode> = fc.letrec<{ node: FilterNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    leafFilter,
    fc.record({ kind: fc.constant('not' as const), child: tie('node') }),
    fc.record({
      kind: fc.constantFrom('and' as const, 'or' as const),
      children: fc.array(tie('node'), { minLength: 2, maxLength: 3 }),
    }),
  ),
})).node;

/** Every value of the document under each joined key path, arrays flattened: the oracle. */
function walkJoiningKeys(doc: Record<string, unknown>): Map<string, unknown[]> {
  const byPath = new Map<string, unknown[]>();
  const visit = (value: unknown, path: string) => {
    if (path !== '') byPath.set(path, [...(byPath.get(path) ?? []), value]);
    if (Array.isArray(value)) for (const item of value) visit(item, path);
    else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value))
        visit(item, path === '' ? key : `${path}.${key}`);
    }
  };
  visit(doc, '');
  return byPath;
}

function factsOf(values: unknown[]): FieldFacts {
  const isEmpty = (v: unknown) =>
    v === '' || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
  return {
    exists: values.length > 0,
    isNull: values.includes(null),
    isEmpty: values.some(isEmpty),
    strings: values.filter((v): v is string => typeof v === 'string'),
    numbers: values.filter((v): v is number => typeof v === 'number'),
    booleans: values.filter((v): v is boolean => typeof v === 'boolean'),
  };
}

const normalized = (facts: FieldFacts) => ({
  ...facts,
  strings: [...facts.strings].sort(),
  numbers: [...facts.numbers].sort(),
  booleans: [...facts.booleans].sort(),
});
