// Proves the serve-node's field indexes against the filter language's reference semantics: for
// random documents (numbers, strings, booleans, nulls, arrays, nested objects, missing fields,
// updates and deletes across partitions) and random filter trees, the SQL over the B-trees
// (serve-node/filter-sql.ts), its rows gathered or each row probed, finds exactly the documents
// shared/filter/evaluate.ts accepts, and so does a filtered search the top-k lists answer; a
// sorted scan is in compareSortValues order then key, and resumes exactly from any position;
// facets count what a brute-force count over the matches gives. The replica is real (LMDB and
// SQLite in a temp dir), fed through its apply path.
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { compareCodePoints } from '../../shared/code-points.js';
import type { FilterLiteral, FilterNode, SortClause } from '../../shared/filter/ast.js';
import { matches } from '../../shared/filter/evaluate.js';
import { compareSortValues, fieldFacts, sortValue } from '../../shared/filter/facts.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { filterCondition } from '../../serve-node/filter-sql.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import { SEARCH_FILE } from '../../serve-node/search-store.js';

const FIELDS = ['n', 's', 'tags', 'deep.x', 'flag'];
const PARTITIONS = [0, 1, 2];
const LITERAL_TEXTS = [
  '0',
  '1',
  '2',
  '2.5',
  '-1',
  'a',
  'b',
  'ab',
  'B',
  'é',
  '😀',
  'true',
  'false',
  '',
];

const literal = (text: string): FilterLiteral => {
  const number = text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : null;
  return { text, number };
};

const scalarArb = fc.oneof(
  fc.integer({ min: -2, max: 3 }),
  fc.constantFrom(2.5, -0.5),
  fc.constantFrom('a', 'b', 'ab', 'B', 'é', '😀', '1', 'true', ''),
  fc.boolean(),
  fc.constant(null),
);
const valueArb = fc.oneof(
  { weight: 4, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(scalarArb, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constant({}) },
);
const docArb = fc.record(
  {
    n: valueArb,
    s: valueArb,
    tags: fc.array(scalarArb, { maxLength: 3 }),
    deep: fc.oneof(
      fc.record({ x: valueArb }, { requiredKeys: [] }),
      fc.array(fc.record({ x: scalarArb }), { maxLength: 2 }),
    ),
    flag: fc.boolean(),
  },
  { requiredKeys: [] },
);

const literalArb = fc.constantFrom(...LITERAL_TEXTS).map(literal);
const fieldArb = fc.constantFrom(...FIELDS);
const leafArb: fc.Arbitrary<FilterNode> = fc.oneof(
  fc.record({
    kind: fc.constant('compare' as const),
    field: fieldArb,
    op: fc.constantFrom('=', '>', '>=', '<', '<=' as const),
    value: literalArb,
  }),
  fc
    .tuple(fieldArb, fc.boolean(), literalArb, literalArb)
    .map(([field, numeric, a, b]): FilterNode => {
      const pool = LITERAL_TEXTS.map(literal).filter((l) => (l.number !== null) === numeric);
      const low = pool.includes(a) ? a : pool[0];
      const high = pool.includes(b) ? b : pool[pool.length - 1];
      return { kind: 'range', field, low, high };
    }),
  fc.record({
    kind: fc.constant('in' as const),
    field: fieldArb,
    values: fc.array(literalArb, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constantFrom('exists', 'isNull', 'isEmpty' as const), field: fieldArb }),
);
const filterArb: fc.Arbitrary<FilterNode> = fc.letrec<{ node: FilterNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: leafArb },
    fc.record({
      kind: fc.constantFrom('and', 'or' as const),
      children: fc.array(tie('node'), { minLength: 1, maxLength: 3 }),
    }),
    fc.record({ kind: fc.constant('not' as const), child: tie('node') }),
  ),
})).node;
const sortArb = fc.array(
  fc.record({ field: fieldArb, direction: fc.constantFrom('asc', 'desc' as const) }),
  { minLength: 1, maxLength: 2 },
);

let dir: string;
let replica: Replica;
/** key → the document the replica holds last. */
const live = new Map<string, { doc: unknown; partition: number }>();

function append(topic: string, partition: number, from: number, records: Array<[string, unknown]>) {
  const batch = encodeBatch(
    records.map(([key, value]) => ({
      key,
      value: value === null ? null : Buffer.from(JSON.stringify(value)),
      timestampMs: 1_700_000_000_000,
    })),
    { baseOffset: from },
  );
  replica.applyMany([{ topic, partition, fromOffset: from, batches: batch }]);
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'field-index-'));
  // Every word listed, so filtered searches of a few rows are the lists' to answer.
  replica = new Replica(dir, { topkListedDfMin: 1 });
  const settings = { searchable: ['body'], filterable: FIELDS, sortable: FIELDS };
  append(SETTINGS_TOPIC, 0, 0, [['docs', settings]]);
  // Three rounds of writes: later rounds update and delete earlier keys, so removal from the
  // indexes (recomputed from the version indexed) is exercised too.
  const rounds = fc.sample(
    fc.array(fc.tuple(fc.integer({ min: 0, max: 59 }), fc.option(docArb, { freq: 6 })), {
      minLength: 60,
      maxLength: 60,
    }),
    { numRuns: 3, seed: 16 },
  );
  const next = PARTITIONS.map(() => 0);
  for (const round of rounds) {
    const byPartition = PARTITIONS.map(() => [] as Array<[string, unknown]>);
    for (const [id, doc] of round) {
      const key = `k${String(id).padStart(2, '0')}`;
      const partition = id % PARTITIONS.length;
      // Every document holds the word the searches look for.
      const value = doc === null ? null : { ...doc, body: 'common word' };
      byPartition[partition].push([key, value]);
      if (value === null) live.delete(key);
      else live.set(key, { doc: value, partition });
    }
    byPartition.forEach((records, partition) => {
      if (records.length === 0) return;
      append('docs', partition, next[partition], records);
      next[partition] += records.length;
    });
  }
});

afterAll(async () => {
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
});

const byKey = (a: string, b: string) => compareCodePoints(a, b);
const expectedKeys = (filter: FilterNode) =>
  [...live]
    .filter(([, { doc }]) => matches(filter, doc))
    .map(([key]) => key)
    .sort(byKey);

const scanAll = (filter: FilterNode | null, sort: SortClause[], pageSize: number) => {
  const keys: string[] = [];
  let after: { key: string; sort: Array<number | string | null> } | undefined;
  for (;;) {
    const page = replica.search.scanKeys('docs', {
      partitions: PARTITIONS,
      filter,
      sort,
      after,
      limit: pageSize,
    });
    keys.push(...page.map((found) => found.key));
    if (page.length < pageSize) return keys;
    const last = page.at(-1)!;
    after = { key: last.key, sort: last.sort };
  }
};

const query = parseQuery('common', { queryBytesMax: 1024, queryTermsMax: 32 });

describe('field indexes against the reference semantics', () => {
  it('holds the documents the test wrote', () => {
    expect(live.size).toBeGreaterThan(20);
    expect(scanAll(null, [{ field: 'n', direction: 'asc' }], 1000).sort(byKey)).toEqual(
      [...live.keys()].sort(byKey),
    );
  });

  it('a filtered scan finds exactly the documents the evaluator accepts', () => {
    fc.assert(
      fc.property(filterArb, (filter) => {
        expect(scanAll(filter, [], 1000)).toEqual(expectedKeys(filter));
      }),
      { numRuns: 300, seed: 1601 },
    );
  });

  it('a filtered search matches and counts exactly those documents', () => {
    fc.assert(
      fc.property(filterArb, (filter) => {
        const found = replica.search.search('docs', PARTITIONS, query, 1000, 10_000, {
          filter,
          sort: [],
        });
        expect(found.matches.map((m) => m.key).sort(byKey)).toEqual(expectedKeys(filter));
        expect(found.total).toBe(expectedKeys(filter).length);
      }),
      { numRuns: 200, seed: 1602 },
    );
  });

  it('a filter probed a row at a time passes exactly those documents', () => {
    const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
    try {
      const tableId = db
        .prepare("SELECT table_id FROM collection_tables WHERE collection = 'docs'")
        .pluck()
        .get() as number;
      fc.assert(
        fc.property(filterArb, (filter) => {
          const { sql, params } = filterCondition(filter, tableId, 'r.row', 'probe');
          const keys = db
            .prepare(`SELECT r.key FROM doc_rows r WHERE r.table_id = ? AND ${sql}`)
            .pluck()
            .all(tableId, ...params) as string[];
          expect(keys.sort(byKey)).toEqual(expectedKeys(filter));
        }),
        { numRuns: 300, seed: 1607 },
      );
    } finally {
      db.close();
    }
  });

  it('a filtered search of a few rows answers as FTS5 does, by the lists where they answer', () => {
    let byLists = 0;
    fc.assert(
      fc.property(filterArb, (filter) => {
        const search = (plan: 'auto' | 'fts5') =>
          replica.search.search('docs', PARTITIONS, query, 3, 10_000, { filter, sort: [] }, plan);
        const [found, expected] = [search('auto'), search('fts5')];
        expect(found.matches.map((m) => m.key)).toEqual(expected.matches.map((m) => m.key));
        expect(found.total).toBe(expectedKeys(filter).length);
        if (found.examined !== undefined) byLists += 1;
      }),
      { numRuns: 200, seed: 1608 },
    );
    expect(byLists).toBeGreaterThan(20);
  });

  it('a sorted scan is in sort-value order then key, and resumes exactly from every page', () => {
    fc.assert(
      fc.property(sortArb, fc.integer({ min: 1, max: 7 }), (sort, pageSize) => {
        const expected = [...live.keys()].sort((a, b) => {
          for (const { field, direction } of sort) {
            const order = compareSortValues(
              sortValue(live.get(a)!.doc, field),
              sortValue(live.get(b)!.doc, field),
              direction,
            );
            if (order !== 0) return order;
          }
          return byKey(a, b);
        });
        expect(scanAll(null, sort, pageSize)).toEqual(expected);
      }),
      { numRuns: 100, seed: 1603 },
    );
  });

  it('facets count each value over the matches, as a brute-force count does', () => {
    fc.assert(
      fc.property(filterArb, (filter) => {
        const counts = replica.search.facets('docs', PARTITIONS, query, filter, FIELDS);
        for (const field of FIELDS) {
          const expected = new Map<string, number>();
          for (const key of expectedKeys(filter)) {
            const facts = fieldFacts(live.get(key)!.doc, field);
            const values = new Set<string>([
              ...facts.numbers.map((v) => `number:${v}`),
              ...facts.strings.map((v) => `string:${v}`),
              ...facts.booleans.map((v) => `boolean:${v}`),
            ]);
            for (const id of values) expected.set(id, (expected.get(id) ?? 0) + 1);
          }
          const got = new Map(
            counts.get(field)!.map(({ value, count }) => [`${typeof value}:${value}`, count]),
          );
          expect(got).toEqual(expected);
        }
      }),
      { numRuns: 100, seed: 1604 },
    );
  });

  it('the limits of a search hold with filters: sorted search is in sort order, then score, then key', () => {
    const sort: SortClause[] = [{ field: 's', direction: 'desc' }];
    const found = replica.search.search(
      'docs',
      PARTITIONS,
      query,
      DEFAULT_LIMITS.searchDepthMax,
      10_000,
      {
        filter: null,
        sort,
      },
    );
    const keys = found.matches.map((m) => m.key);
    const expected = [...live.keys()].sort(
      (a, b) =>
        compareSortValues(
          sortValue(live.get(a)!.doc, 's'),
          sortValue(live.get(b)!.doc, 's'),
          'desc',
        ) ||
        // Every document holds the same text once, so scores tie, and keys decide.
        byKey(a, b),
    );
    expect(keys).toEqual(expected);
  });
});
