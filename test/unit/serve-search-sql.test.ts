// The SQL text of the search store's statements (serve-node/search-sql.ts): what their shape
// writes into the text and what it binds. Their results are proved elsewhere, against the
// reference semantics (serve-field-index.test.ts) and one FTS5 index (search-ranking.test.ts).
import { describe, expect, it } from 'vitest';
import type { FtsTable } from '../../serve-node/fts-table.js';
import {
  countQuery,
  facetEntriesQuery,
  partitionsParam,
  scanQuery,
  searchQuery,
  type MatchShape,
} from '../../serve-node/search-sql.js';

const table = { id: 1, name: 'fts_1', layout: { weights: [1] } } as unknown as FtsTable;
const shape: MatchShape = { table, match: '("word")', partitions: '[0,1]', filter: null };
const scan = { tableId: 1, partitions: '[0,1]', filter: null, sort: [], limit: 7 };

describe('search store SQL', () => {
  it('writes each LIMIT into the text: a bound LIMIT made SQLite prepare the statement again', () => {
    for (const { sql, params } of [
      searchQuery(shape, [], 10),
      searchQuery(shape, [{ field: 'n', direction: 'asc' }], 10),
    ]) {
      expect(sql).toMatch(/LIMIT 10\b/);
      expect(params).not.toContain(10);
    }
    expect(countQuery(shape, 10_000).sql).toMatch(/LIMIT 10000\)$/);
    expect(facetEntriesQuery(1, ['a', 'b'], 42)).toMatchObject({ params: ['a', 'b'] });
    expect(facetEntriesQuery(1, ['a', 'b'], 42).sql).toContain('LIMIT 42)');
    expect(scanQuery(scan).sql).toMatch(/LIMIT 7$/);
    expect(scanQuery(scan).params).not.toContain(7);
  });

  it('refuses a LIMIT that is not a whole number, rather than write it into SQL', () => {
    expect(() => searchQuery(shape, [], 1.5)).toThrow(/whole number/);
    expect(() => countQuery(shape, -1)).toThrow(/whole number/);
    expect(() => scanQuery({ ...scan, limit: Number.NaN })).toThrow(/whole number/);
  });

  it('leaves the partitions condition out when the read covers every partition held', () => {
    expect(partitionsParam([0, 1, 2], [0, 1, 2])).toBeNull();
    expect(partitionsParam([0, 1, 2], [2, 3, 1, 0])).toBeNull();
    expect(partitionsParam([], [1])).toBeNull();
    expect(partitionsParam([0, 1, 2], [0, 2])).toBe('[0,2]');
    const all = { ...shape, partitions: null };
    expect(searchQuery(all, [], 10).sql).not.toContain('json_each');
    expect(countQuery(all, 10).sql).not.toContain('json_each');
    expect(scanQuery({ ...scan, partitions: null }).sql).not.toContain('json_each');
    expect(searchQuery(shape, [], 10)).toMatchObject({ params: ['("word")', '[0,1]'] });
    expect(scanQuery(scan).sql).toContain('json_each');
  });
});
