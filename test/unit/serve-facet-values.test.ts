// Facet values held in memory between writes (serve-node/facet-values.ts) never answer
// differently from the field index: whatever is held was read after the last write, and any
// write, to any table, makes it read again; so does a count of entries held to choose a plan.
// Then, on a real replica fed through its apply path, facets counted over held values, by value
// in SQL and by match in SQL give what a brute-force count over the documents gives, whatever
// the search told of its matches, before and after writes that change, add and remove values,
// and through a background re-index (each step writes; the swap moves the collection's table).
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { FilterNode } from '../../shared/filter/ast.js';
import { fieldFacts } from '../../shared/filter/facts.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { countValues, FacetValues } from '../../serve-node/facet-values.js';
import { FieldIndex } from '../../serve-node/field-index.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import type { FoundMatches } from '../../serve-node/search-reads.js';

const FIELDS = { filterable: ['tag', 'n'], sortable: [] };

describe('facet values held in memory', () => {
  let db: Database.Database;
  let index: FieldIndex;
  let values: FacetValues;
  let counted: number;
  const countEntries = (bound: number) => {
    counted++;
    return db
      .prepare('SELECT count(*) FROM (SELECT 1 FROM field_values WHERE table_id = 1 LIMIT ?)')
      .pluck()
      .get(bound) as number;
  };

  beforeEach(() => {
    db = new Database(':memory:');
    index = new FieldIndex(db);
    values = new FacetValues(db);
    counted = 0;
    index.add(1, FIELDS, 10, { tag: ['a', 'b'], n: 1 });
    index.add(1, FIELDS, 11, { tag: 'a', n: 2 });
    index.add(1, FIELDS, 12, { tag: 'c', n: 1 });
  });

  afterEach(() => db.close());

  it('holds what it read until any row is written, in any table', () => {
    const stamp = values.stamp();
    expect(values.held(1, ['tag'], stamp)).toBeUndefined();
    const [tag] = values.load(1, ['tag'], stamp, 4, 100)!;
    expect(tag.entries).toBe(4);
    expect(countValues(tag, new Set([10, 12]))).toEqual([
      { kind: 1, value: 'a', n: 1 },
      { kind: 1, value: 'b', n: 1 },
      { kind: 1, value: 'c', n: 1 },
    ]);
    expect(values.held(1, ['tag'], values.stamp())).toEqual([tag]);
    db.exec('CREATE TABLE elsewhere (x); INSERT INTO elsewhere VALUES (1)');
    expect(values.held(1, ['tag'], values.stamp())).toBeUndefined();
    index.add(1, FIELDS, 13, { tag: 'a' });
    const [again] = values.load(1, ['tag'], values.stamp(), 5, 100)!;
    expect(countValues(again, new Set([10, 11, 13]))).toEqual([
      { kind: 1, value: 'a', n: 3 },
      { kind: 1, value: 'b', n: 1 },
    ]);
  });

  it('holds at most entriesMax entries, letting the least recently used fields go', () => {
    const stamp = values.stamp();
    expect(values.load(1, ['tag', 'n'], stamp, 7, 6)).toBeUndefined();
    expect(values.held(1, ['tag'], stamp)).toBeUndefined();
    values.load(1, ['tag'], stamp, 4, 6);
    const [n] = values.load(1, ['n'], stamp, 3, 6)!;
    expect(countValues(n, new Set([10, 11, 12]))).toEqual([
      { kind: 0, value: 1, n: 2 },
      { kind: 0, value: 2, n: 1 },
    ]);
    expect(values.held(1, ['tag'], stamp)).toBeUndefined();
    expect(values.held(1, ['n'], stamp)).toEqual([n]);
  });

  it('counts entries again only past what it counted, or after a write', () => {
    const stamp = values.stamp();
    // Counted up to 2 (the power of two at or past the bound): at least 2.
    expect(values.entriesAtLeast(1, ['tag', 'n'], 2, stamp, countEntries)).toBe(2);
    expect(values.entriesAtLeast(1, ['tag', 'n'], 1, stamp, countEntries)).toBe(1);
    expect(counted).toBe(1);
    // Counted up to 4 for a bound of 3: the 4 found answer a bound of 4 without counting.
    expect(values.entriesAtLeast(1, ['tag', 'n'], 3, stamp, countEntries)).toBe(3);
    expect(values.entriesAtLeast(1, ['tag', 'n'], 4, stamp, countEntries)).toBe(4);
    expect(counted).toBe(2);
    // Counted up to 128: all 7, exactly, whatever bound comes next.
    expect(values.entriesAtLeast(1, ['tag', 'n'], 100, stamp, countEntries)).toBe(7);
    expect(values.entriesAtLeast(1, ['tag', 'n'], 1000, stamp, countEntries)).toBe(7);
    expect(counted).toBe(3);
    index.remove(1, FIELDS, 12, { tag: 'c', n: 1 });
    expect(values.entriesAtLeast(1, ['tag', 'n'], 100, values.stamp(), countEntries)).toBe(5);
    expect(counted).toBe(4);
  });
});

describe('facets on a replica, over held values and in SQL', () => {
  const TAGS = ['red', 'green', 'blue', 'teal'];
  const KEYS = 40;
  let dir: string;
  let replica: Replica;
  const live = new Map<string, unknown>();
  const next = [0, 0];
  const query = parseQuery('word', { queryBytesMax: 1024, queryTermsMax: 32 });

  const append = (topic: string, partition: number, records: Array<[string, unknown]>) => {
    const batches = encodeBatch(
      records.map(([key, value]) => ({
        key,
        value: value === null ? null : Buffer.from(JSON.stringify(value)),
        timestampMs: 0,
      })),
      { baseOffset: next[partition] },
    );
    replica.applyMany([{ topic, partition, fromOffset: next[partition], batches }]);
    if (topic !== SETTINGS_TOPIC) next[partition] += records.length;
  };
  /** Writes round `round` of the documents: values move between rounds, some keys go. */
  const write = (round: number) => {
    for (const partition of [0, 1]) {
      const records: Array<[string, unknown]> = [];
      for (let i = partition; i < KEYS; i += 2) {
        const key = `k${i}`;
        const gone = (i + round) % 9 === 0;
        const tags = [TAGS[(i + round) % 4], TAGS[(i * round) % 4]];
        const value = gone ? null : { body: 'a word', tag: tags, n: (i * (round + 1)) % 5 };
        records.push([key, value]);
        if (value === null) live.delete(key);
        else live.set(key, value);
      }
      append('docs', partition, records);
    }
  };
  const expected = (filter: FilterNode | null, field: string) => {
    const counts = new Map<string, number>();
    for (const doc of live.values()) {
      if (filter !== null && !fieldFacts(doc, 'n').numbers.some((n) => n < 3)) continue;
      const facts = fieldFacts(doc, field);
      const ids = new Set([
        ...facts.numbers.map((v) => `number:${v}`),
        ...facts.strings.map((v) => `string:${v}`),
      ]);
      for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts;
  };
  const BELOW_THREE: FilterNode = {
    kind: 'compare',
    field: 'n',
    op: '<',
    value: { text: '3', number: 3 },
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'facet-values-'));
    replica = new Replica(dir);
    append(SETTINGS_TOPIC, 0, [['docs', { filterable: ['tag', 'n'] }]]);
  });

  afterAll(async () => {
    await replica.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const expectCounts = (field: string, heldMax: number) => {
    const counts = replica.search.facets('docs', [0, 1], query, null, [field], undefined, heldMax);
    const got = new Map(
      counts.get(field)!.map(({ value, count }) => [`${typeof value}:${value}`, count]),
    );
    expect(got).toEqual(expected(null, field));
  };

  it.each([0, 1, 2, 3])('counts what the documents hold after round %i of writes', (round) => {
    write(round);
    for (const filter of [null, BELOW_THREE]) {
      const total = [...live.values()].filter(
        (doc) => filter === null || fieldFacts(doc, 'n').numbers.some((n) => n < 3),
      ).length;
      const told: Array<FoundMatches | undefined> = [
        undefined,
        { count: total, exact: true },
        { count: 1, exact: false },
      ];
      // 0 entries held at most: every count in SQL (by value or by match, as the plan says).
      for (const heldMax of [0, 1_000_000]) {
        for (const matches of told) {
          const counts = replica.search.facets(
            'docs',
            [0, 1],
            query,
            filter,
            ['tag', 'n', 'tag'],
            matches,
            heldMax,
          );
          expect([...counts.keys()]).toEqual(['tag', 'n']);
          for (const field of ['tag', 'n']) {
            const got = new Map(
              counts.get(field)!.map(({ value, count }) => [`${typeof value}:${value}`, count]),
            );
            expect(got).toEqual(expected(filter, field));
          }
        }
      }
    }
  });

  it('counts from the new table once a re-index swaps it in, and from the old one until then', () => {
    expectCounts('tag', 1_000_000);
    append(SETTINGS_TOPIC, 0, [['docs', { searchable: ['body'], filterable: ['tag'] }]]);
    let step;
    do {
      // Each step writes the new table: values held of the old one are read again, never stale.
      write(4);
      expectCounts('tag', 1_000_000);
      step = replica.reindexStep(7);
    } while (step !== null && !step.swapped);
    expect(replica.search.settingsOf('docs').filterable).toEqual(['tag']);
    expectCounts('tag', 1_000_000);
    write(5);
    expectCounts('tag', 1_000_000);
  });
});
