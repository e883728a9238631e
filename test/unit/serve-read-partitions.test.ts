// A read of a serve-node names the partitions it covers. Over every partition the store holds a
// checkpoint of, the SQL leaves the partitions condition out (a row exists only for such a
// partition); over a subset it keeps it. Either way a search, its facets and a filtered scan
// answer exactly the documents of the partitions asked for, as a brute-force count over the
// written documents says, on a real replica fed through its apply path.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { FilterNode } from '../../shared/filter/ast.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';

const PARTITIONS = [0, 1, 2];
const DOCS_PER_PARTITION = 12;
const query = parseQuery('word', { queryBytesMax: 1024, queryTermsMax: 32 });
const BELOW_SIX: FilterNode = {
  kind: 'compare',
  field: 'n',
  op: '<',
  value: { text: '6', number: 6 },
};

let dir: string;
let replica: Replica;
const docs: Array<{ key: string; partition: number; n: number }> = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'read-partitions-'));
  replica = new Replica(dir);
  const settings = { filterable: ['n'], sortable: ['n'] };
  const settingsBatch = encodeBatch(
    [{ key: 'docs', value: Buffer.from(JSON.stringify(settings)), timestampMs: 0 }],
    { baseOffset: 0 },
  );
  replica.applyMany([
    { topic: SETTINGS_TOPIC, partition: 0, fromOffset: 0, batches: settingsBatch },
  ]);
  for (const partition of PARTITIONS) {
    const records = Array.from({ length: DOCS_PER_PARTITION }, (_, i) => {
      const doc = { key: `p${partition}-${String(i).padStart(2, '0')}`, partition, n: i };
      docs.push(doc);
      const value = { body: 'a word', n: doc.n };
      return { key: doc.key, value: Buffer.from(JSON.stringify(value)), timestampMs: 0 };
    });
    const batches = encodeBatch(records, { baseOffset: 0 });
    replica.applyMany([{ topic: 'docs', partition, fromOffset: 0, batches }]);
  }
});

afterAll(async () => {
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
});

const keysIn = (asked: readonly number[], filter: FilterNode | null = null) =>
  docs
    .filter((doc) => asked.includes(doc.partition) && (filter === null || doc.n < 6))
    .map((doc) => doc.key)
    .sort();

describe('the partitions condition of a read', () => {
  const subsets = [[0], [1, 2], [0, 2], PARTITIONS, [...PARTITIONS, 3]];
  it.each(subsets)('a search, its total and its facets over partitions %j', (...asked) => {
    for (const filter of [null, BELOW_SIX]) {
      const found = replica.search.search('docs', asked, query, 100, 10_000, {
        filter,
        sort: [],
      });
      expect(found.matches.map((match) => match.key).sort()).toEqual(keysIn(asked, filter));
      expect(found.total).toBe(keysIn(asked, filter).length);
      const counted = replica.search.facets('docs', asked, query, filter, ['n']);
      const expected = new Map<number, number>();
      for (const doc of docs) {
        if (!asked.includes(doc.partition) || (filter !== null && doc.n >= 6)) continue;
        expected.set(doc.n, (expected.get(doc.n) ?? 0) + 1);
      }
      const got = new Map(counted.get('n')!.map(({ value, count }) => [value, count]));
      expect(got).toEqual(expected);
    }
  });

  it.each(subsets)('a filtered and sorted scan over partitions %j', (...asked) => {
    const keys = replica.search.scanKeys('docs', {
      partitions: asked,
      filter: BELOW_SIX,
      sort: [{ field: 'n', direction: 'asc' }],
      limit: 1000,
    });
    expect(keys.map((found) => found.key).sort()).toEqual(keysIn(asked, BELOW_SIX));
  });

  it('keeps the condition once a partition not asked for gets its first rows', () => {
    const batches = (key: string) =>
      encodeBatch([{ key, value: Buffer.from('{"body":"a word","n":1}'), timestampMs: 0 }], {
        baseOffset: 0,
      });
    replica.applyMany([{ topic: 'later', partition: 0, fromOffset: 0, batches: batches('a') }]);
    const keys = () =>
      replica.search.search('later', [0], query, 10, 10_000).matches.map((match) => match.key);
    // Only partition 0 is held: a read of [0] covers it all, and its answer is kept in memory.
    expect(keys()).toEqual(['a']);
    replica.applyMany([{ topic: 'later', partition: 1, fromOffset: 0, batches: batches('b') }]);
    expect(keys()).toEqual(['a']);
    expect(
      replica.search
        .search('later', [0, 1], query, 10, 10_000)
        .matches.map((m) => m.key)
        .sort(),
    ).toEqual(['a', 'b']);
  });
});
