// Filters, sorting and facets through the public API, run against both deployments (the embedded
// process and a cluster whose two serve-nodes each host half the partitions, so every answer is
// merged): results are compared with a brute-force evaluation (shared/filter/evaluate.ts) over the
// documents written; a write is seen by a filtered read that carries its token; bad filters are
// 400s that name the problem and change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareCodePoints } from '../../shared/code-points.js';
import { parseFilter } from '../../shared/filter/index.js';
import { matches } from '../../shared/filter/evaluate.js';
import { compareSortValues, fieldFacts, sortValue } from '../../shared/filter/facts.js';
import type { ApiTarget } from './api-suite.js';
import { call } from './gateway-harness.js';

const GENRES = ['sf', 'fantasy', 'crime', 'poetry'];
const SETTINGS = {
  searchable: ['title'],
  filterable: ['genre', 'year', 'tags', 'inStock', 'price'],
  sortable: ['year', 'title', 'price'],
};

interface Book {
  title: string;
  genre?: string;
  year?: number | string;
  tags?: string[];
  inStock?: boolean;
  price?: number | null;
}

/** Sixty books with every kind of value the semantics distinguish, from a fixed pattern. */
function books(): Map<string, Book> {
  const all = new Map<string, Book>();
  for (let i = 0; i < 60; i++) {
    const book: Book = { title: `book ${String(i).padStart(2, '0')}` };
    if (i % 7 !== 0) book.genre = GENRES[i % GENRES.length];
    if (i % 5 !== 0) book.year = i % 11 === 0 ? String(1950 + i) : 1950 + ((i * 13) % 70);
    book.tags = i % 3 === 0 ? [] : ['a', `t${i % 4}`];
    book.inStock = i % 2 === 0;
    book.price = i % 9 === 0 ? null : (i * 7) % 40;
    all.set(`b${String(i).padStart(3, '0')}`, book);
  }
  return all;
}

const FILTERS = [
  'genre = sf',
  'genre != sf',
  'year > 1990',
  'year 1960 TO 1980 AND inStock = true',
  'genre IN [sf, crime] OR price < 5',
  'NOT (tags = a) AND year EXISTS',
  'price IS NULL OR tags IS EMPTY',
  'year NOT EXISTS',
  'tags = "t1" AND genre != poetry',
  'genre = fantasy AND (price >= 10 OR inStock = false)',
];

export function describeFilters(name: string, start: () => Promise<ApiTarget>): void {
  let target: ApiTarget;
  let url: string;
  const collection = `books-${Date.now().toString(36)}`;
  const written = books();
  let token = '';

  const get = async (path: string, headers: Record<string, string> = {}) =>
    call(url, 'GET', `/v1/collections/${collection}${path}`, undefined, headers);
  const expected = (filter: string) =>
    [...written]
      .filter(([, book]) => matches(parseFilter(filter), book))
      .map(([key]) => key)
      .sort(compareCodePoints);

  beforeAll(async () => {
    target = await start();
    url = target.url;
    const settings = await call(url, 'PUT', `/v1/collections/${collection}/settings`, SETTINGS);
    expect(settings.status).toBe(200);
    const bulk = await call(
      url,
      'POST',
      `/v1/collections/${collection}/docs`,
      [...written].map(([key, value]) => ({ key, value })),
      { 'tailbase-token': settings.token! },
    );
    expect(bulk.status).toBe(200);
    token = bulk.token!;
  });

  afterAll(async () => {
    await target?.stop();
  });

  describe(name, () => {
    it('a filtered search finds exactly what a brute-force evaluation does', async () => {
      for (const filter of FILTERS) {
        const answer = await get(`/search?q=book&limit=100&filter=${encodeURIComponent(filter)}`, {
          'tailbase-token': token,
        });
        expect(answer.status, filter).toBe(200);
        const keys = (answer.body.hits as Array<{ key: string }>).map((hit) => hit.key);
        expect(keys.sort(compareCodePoints), filter).toEqual(expected(filter));
        expect(answer.body.total, filter).toBe(expected(filter).length);
      }
    });

    it('a sorted search is in sort order, numbers before strings, missing last; ties by key', async () => {
      const answer = await get(
        `/search?q=book&limit=100&sort=${encodeURIComponent('year:desc,title:asc')}`,
        {
          'tailbase-token': token,
        },
      );
      expect(answer.status).toBe(200);
      const keys = (answer.body.hits as Array<{ key: string }>).map((hit) => hit.key);
      const order = [...written.keys()].sort((a, b) => {
        const x = written.get(a)!;
        const y = written.get(b)!;
        return (
          compareSortValues(sortValue(x, 'year'), sortValue(y, 'year'), 'desc') ||
          compareSortValues(sortValue(x, 'title'), sortValue(y, 'title'), 'asc') ||
          compareCodePoints(a, b)
        );
      });
      expect(keys).toEqual(order);
    });

    it('facets count every match of the query and filter, merged exactly, with min and max', async () => {
      const filter = 'inStock = true';
      const answer = await get(
        `/search?q=book&limit=1&facets=genre,year,tags&filter=${encodeURIComponent(filter)}`,
        { 'tailbase-token': token },
      );
      expect(answer.status).toBe(200);
      const matching = expected(filter).map((key) => written.get(key)!);
      for (const field of ['genre', 'year', 'tags']) {
        const counts = new Map<string, number>();
        const numbers: number[] = [];
        for (const book of matching) {
          const facts = fieldFacts(book, field);
          numbers.push(...facts.numbers);
          const ids = new Set([
            ...facts.numbers.map((v) => `number:${v}`),
            ...facts.strings.map((v) => `string:${v}`),
          ]);
          for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        const facet = answer.body.facets[field];
        const got = new Map(
          (facet.values as Array<{ value: unknown; count: number }>).map((v) => [
            `${typeof v.value}:${v.value}`,
            v.count,
          ]),
        );
        expect(got, field).toEqual(counts);
        expect(facet.omitted).toBe(0);
        const sortedCounts = (facet.values as Array<{ count: number }>).map((v) => v.count);
        expect(sortedCounts).toEqual([...sortedCounts].sort((a, b) => b - a));
        if (numbers.length > 0) {
          expect(facet.min).toBe(Math.min(...numbers));
          expect(facet.max).toBe(Math.max(...numbers));
        }
      }
    });

    it('a filtered scan pages through exactly the matching keys in key order', async () => {
      for (const filter of FILTERS.slice(0, 4)) {
        const keys: string[] = [];
        let cursor: string | null = null;
        do {
          const page = await get(
            `/docs?limit=7&filter=${encodeURIComponent(filter)}` +
              (cursor ? `&cursor=${cursor}` : ''),
            { 'tailbase-token': token },
          );
          expect(page.status, filter).toBe(200);
          keys.push(...(page.body.items as Array<{ key: string }>).map((item) => item.key));
          cursor = page.body.cursor;
        } while (cursor !== null);
        expect(keys, filter).toEqual(expected(filter));
      }
    });

    it('a sorted scan pages in sort order and its cursor resumes exactly', async () => {
      const keys: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await get(
          `/docs?limit=6&sort=${encodeURIComponent('price:asc')}&filter=${encodeURIComponent('genre EXISTS')}` +
            (cursor ? `&cursor=${cursor}` : ''),
          { 'tailbase-token': token },
        );
        expect(page.status).toBe(200);
        keys.push(...(page.body.items as Array<{ key: string }>).map((item) => item.key));
        cursor = page.body.cursor;
      } while (cursor !== null);
      const order = expected('genre EXISTS').sort(
        (a, b) =>
          compareSortValues(
            sortValue(written.get(a), 'price'),
            sortValue(written.get(b), 'price'),
            'asc',
          ) || compareCodePoints(a, b),
      );
      expect(keys).toEqual(order);
    });

    it('reads its own writes through filters, sorts and facets', async () => {
      let session = token;
      for (let i = 0; i < 5; i++) {
        const genre = `new-${i}-${Date.now().toString(36)}`;
        const put = await call(
          url,
          'PUT',
          `/v1/collections/${collection}/docs/ryw-${i}`,
          { title: `book ryw ${i}`, genre, year: 3000 + i },
          { 'tailbase-token': session },
        );
        expect(put.status).toBe(200);
        session = put.token!;
        const filter = encodeURIComponent(`genre = "${genre}"`);
        const search = await get(`/search?q=book&filter=${filter}&facets=genre`, {
          'tailbase-token': session,
        });
        expect(search.body.hits.map((h: { key: string }) => h.key)).toEqual([`ryw-${i}`]);
        expect(search.body.facets.genre.values).toEqual([{ value: genre, count: 1 }]);
        const scan = await get(`/docs?filter=${filter}`, { 'tailbase-token': session });
        expect(scan.body.items.map((item: { key: string }) => item.key)).toEqual([`ryw-${i}`]);
        const newest = await get(`/search?q=book&limit=1&sort=year:desc`, {
          'tailbase-token': session,
        });
        expect(newest.body.hits[0].key).toBe(`ryw-${i}`);
      }
    });

    it('bad filters, sorts and facets are 400s that name the problem and change nothing', async () => {
      const before = await call(url, 'GET', '/v1/status');
      const cases: Array<[string, string, string]> = [
        ['/search?q=book&filter=' + encodeURIComponent('genre ='), 'invalid_filter', 'position'],
        [
          '/search?q=book&filter=' + encodeURIComponent('(genre = sf'),
          'invalid_filter',
          'position',
        ],
        ['/search?q=book&filter=' + encodeURIComponent('('.repeat(10_000)), 'invalid_filter', ''],
        ['/search?q=book&filter=' + encodeURIComponent(`genre = "${'x'.repeat(10_000)}"`), '', ''],
        [
          '/search?q=book&filter=' + encodeURIComponent('genre = "a\u0000b" AND'),
          'invalid_filter',
          '',
        ],
        ['/search?q=book&filter=' + encodeURIComponent('year 1 TO b'), 'invalid_filter', ''],
        [
          '/search?q=book&filter=' + encodeURIComponent('secret = 1'),
          'field_not_filterable',
          'secret',
        ],
        ['/search?q=book&facets=secret', 'field_not_filterable', 'secret'],
        ['/search?q=book&sort=genre:asc', 'field_not_sortable', 'genre'],
        ['/search?q=book&sort=year:up', 'invalid_sort', ''],
        ['/docs?filter=' + encodeURIComponent('secret EXISTS'), 'field_not_filterable', 'secret'],
        ['/docs?sort=genre:desc', 'field_not_sortable', 'genre'],
        ['/docs?sort=year:asc&cursor=AmI', 'invalid_cursor', ''],
      ];
      for (const [path, code, mentions] of cases) {
        const answer = await get(path, { 'tailbase-token': token });
        expect(answer.status, path.slice(0, 80)).toBe(400);
        if (code) expect(answer.body.error.code, path.slice(0, 80)).toBe(code);
        expect(answer.body.error.message, path.slice(0, 80)).toContain(mentions);
      }
      const after = await call(url, 'GET', '/v1/status');
      expect(after.body.partitions).toEqual(before.body.partitions);
    });

    it('the change feed passes only the events its filter accepts, and every delete', async () => {
      await call(url, 'DELETE', `/v1/collections/${collection}/docs/b001`, undefined, {
        'tailbase-token': token,
      });
      const response = await fetch(
        `${url}/v1/changes?collection=${collection}&filter=${encodeURIComponent('genre = sf')}&limit=100`,
        { signal: AbortSignal.timeout(20_000) },
      );
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      const events: Array<{ key: string; value: Book | null }> = [];
      const decoder = new TextDecoder();
      let text = '';
      const wanted = expected('genre = sf').length + 1;
      while (events.length < wanted) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        const lines = text.split('\n');
        text = lines.pop()!;
        events.push(...lines.filter(Boolean).map((line) => JSON.parse(line)));
      }
      await reader.cancel();
      const writes = events.filter((e) => e.value !== null).map((e) => e.key);
      expect(writes.sort(compareCodePoints)).toEqual(expected('genre = sf'));
      expect(events.filter((e) => e.value === null).map((e) => e.key)).toEqual(['b001']);
    });
  });
}
