/**
 * An oracle that is not the same code (issue 24). Rule (e)'s replay comparison (replay.ts) holds a
 * serve-node to a replica rebuilt by the same implementation, so a bug both share passes it. Here
 * the answers of a search that do not depend on scoring (which keys match a query and a filter,
 * the values those keys hold, the total, and the facet counts) are computed by brute force from
 * the final documents: the last record of each key in the log read back, whose value is a pure
 * function of its write id and session (history.ts's writeValue). The model knows only the
 * documents and the queries' meaning, written out below as predicates; it shares no code with the
 * serve-node's FTS5 queries, its filter compiler or shared/filter/evaluate.ts.
 *
 * The queries: every word the values share, `s<session>`, an AND, an OR and an exclusion, each
 * with the facet counts of `s`; and `chaos` (every document) under filters on `s` and `w` of each
 * shape (=, !=, IN, NOT, >=, <, TO, AND, OR), which the runner makes filterable before the end.
 */
import type { LogEntry } from './check.js';
import { request, VALUE_WORDS, writeValue } from './history.js';

/** The fields the model's filters and facets name: filterable before the end (run.ts). */
export const MODEL_FILTERABLE = ['s', 'w'];
/** Hits per page, and pages at most (the gateway's searchLimitMax, searchOffsetMax / limit + 1). */
export const MODEL_PAGE_HITS = 100;
export const MODEL_PAGES_MAX = 10;
const REQUEST_TIMEOUT_MS = 10_000;

/** One final document, as the model sees it. */
export interface ModelDocument {
  key: string;
  writeId: number;
  /** The session that wrote it: `s` in the value. */
  s: number;
  w: number;
  /** The words of `t`. */
  words: Set<string>;
}

/** A filter: its text for the API, and what it means, decided here on the document. */
export interface ModelFilter {
  text: string;
  holds: (doc: ModelDocument) => boolean;
}

/** A document matches a group when it has all of its words and none of its `not`. */
export interface ModelGroup {
  all: string[];
  not?: string[];
}

export interface ModelQuery {
  collection: string;
  /** A document matches when it matches any group (the API's `OR` between them). */
  groups: ModelGroup[];
  filter?: ModelFilter;
}

/** What a search answered (or must answer), scoring aside. */
export interface ModelAnswer {
  total: number;
  /** key → the write its value names, over every page read. */
  hits: Map<string, number>;
  /** Whether `hits` is every match (the pages reached the total). */
  complete: boolean;
  /** Facet `s`: value → count. */
  facets: Map<string, number>;
}

export interface ModelSearch {
  collection: string;
  q: string;
  filter: string | null;
  live: ModelAnswer | null;
  model: ModelAnswer;
  error?: string;
}

/** The FTS query text of a model query. */
export function queryText(query: ModelQuery): string {
  return query.groups
    .map((group) => [...group.all, ...(group.not ?? []).map((word) => `-${word}`)].join(' '))
    .join(' OR ');
}

/** The final document of every key of `collection` that the log ends with a value for. */
export function finalDocuments(
  log: readonly LogEntry[],
  collection: string,
  sessionOf: (writeId: number) => number | undefined,
): ModelDocument[] {
  const last = new Map<string, LogEntry>();
  for (const entry of [...log].sort((x, y) => x.offset - y.offset)) {
    if (entry.collection === collection) last.set(entry.key, entry);
  }
  const docs: ModelDocument[] = [];
  for (const entry of last.values()) {
    const session = entry.writeId === null ? undefined : sessionOf(entry.writeId);
    if (entry.writeId === null || session === undefined) continue;
    const value = writeValue(entry.writeId, session) as { w: number; s: number; t: string };
    const words = new Set(value.t.toLowerCase().split(/[^a-z0-9]+/));
    docs.push({ key: entry.key, writeId: entry.writeId, s: value.s, w: value.w, words });
  }
  return docs;
}

/** The model's answer: every matching document, counted by brute force. */
export function modelAnswer(query: ModelQuery, docs: readonly ModelDocument[]): ModelAnswer {
  const hits = new Map<string, number>();
  const facets = new Map<string, number>();
  for (const doc of docs) {
    const matches = query.groups.some(
      (group) =>
        group.all.every((word) => doc.words.has(word)) &&
        !(group.not ?? []).some((word) => doc.words.has(word)),
    );
    if (!matches) continue;
    if (query.filter !== undefined && !query.filter.holds(doc)) continue;
    hits.set(doc.key, doc.writeId);
    facets.set(String(doc.s), (facets.get(String(doc.s)) ?? 0) + 1);
  }
  return { total: hits.size, hits, complete: true, facets };
}

/** The queries for one collection: words, boolean forms, and filters of every shape. */
export function modelQueries(
  collection: string,
  docs: readonly ModelDocument[],
  sessions: number,
): ModelQuery[] {
  const [a, b, c, d, e, f, g] = VALUE_WORDS;
  const one = (...groups: ModelGroup[]): ModelQuery => ({ collection, groups });
  const queries: ModelQuery[] = [
    ...['chaos', ...VALUE_WORDS].map((word) => one({ all: [word] })),
    one({ all: [a, b] }),
    one({ all: [c, d] }, { all: [c, e] }),
    one({ all: [e], not: [f] }),
    one({ all: [a], not: [b, c] }, { all: [f] }),
    ...Array.from({ length: sessions }, (_, s) => one({ all: [`s${s}`] })),
  ];
  const ws = docs.map((doc) => doc.w).sort((x, y) => x - y);
  const median = ws[Math.floor(ws.length / 2)] ?? 0;
  const quarter = ws[Math.floor(ws.length / 4)] ?? 0;
  const filters: ModelFilter[] = [
    { text: 's = 1', holds: (doc) => doc.s === 1 },
    { text: 's != 1', holds: (doc) => doc.s !== 1 },
    { text: 's IN [0, 2]', holds: (doc) => doc.s === 0 || doc.s === 2 },
    { text: 'NOT s IN [0, 2]', holds: (doc) => doc.s !== 0 && doc.s !== 2 },
    { text: `w >= ${median}`, holds: (doc) => doc.w >= median },
    { text: `w < ${median}`, holds: (doc) => doc.w < median },
    { text: `w ${quarter} TO ${median}`, holds: (doc) => doc.w >= quarter && doc.w <= median },
    {
      text: `s = 0 AND w >= ${quarter}`,
      holds: (doc) => doc.s === 0 && doc.w >= quarter,
    },
    { text: `s = 3 OR w < ${quarter}`, holds: (doc) => doc.s === 3 || doc.w < quarter },
  ];
  for (const filter of filters) queries.push({ ...one({ all: ['chaos'] }), filter });
  queries.push({ ...one({ all: [a] }, { all: [g] }), filter: filters[4] });
  return queries;
}

interface RawHit {
  key: string;
  value: { w?: unknown };
}

/** The gateway's answer to a model query, page after page, scoring aside. */
export async function askGateway(url: string, query: ModelQuery): Promise<ModelAnswer> {
  const hits = new Map<string, number>();
  let total = 0;
  let facets = new Map<string, number>();
  for (let page = 0; page < MODEL_PAGES_MAX; page++) {
    const params = new URLSearchParams({
      q: queryText(query),
      limit: String(MODEL_PAGE_HITS),
      offset: String(page * MODEL_PAGE_HITS),
      facets: 's',
    });
    if (query.filter !== undefined) params.set('filter', query.filter.text);
    const route = `/v1/collections/${query.collection}/search?${params}`;
    const answer = await request(`${url}${route}`, 'GET', undefined, {}, REQUEST_TIMEOUT_MS);
    if (answer.status !== 200) {
      throw new Error(`${route} answered ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    if (answer.body.totalExact === false) throw new Error(`${route}: the total is not exact`);
    total = answer.body.total;
    if (page === 0) {
      const values = (answer.body.facets?.s?.values ?? []) as { value: unknown; count: number }[];
      facets = new Map(values.map(({ value, count }) => [String(value), count]));
      if ((answer.body.facets?.s?.omitted ?? 0) > 0) throw new Error(`${route}: facets omitted`);
    }
    const pageHits = answer.body.hits as RawHit[];
    for (const hit of pageHits) {
      const w = hit.value?.w;
      hits.set(hit.key, typeof w === 'number' ? w : -1);
    }
    if (pageHits.length < MODEL_PAGE_HITS || hits.size >= total) break;
  }
  return { total, hits, complete: hits.size >= total, facets };
}

/** Every model query of `collections` asked of the gateway, beside the model's answer. */
export async function searchAgainstModel(
  url: string,
  collections: readonly string[],
  log: readonly LogEntry[],
  sessionOf: (writeId: number) => number | undefined,
  sessions: number,
): Promise<ModelSearch[]> {
  const results: ModelSearch[] = [];
  for (const collection of collections) {
    const docs = finalDocuments(log, collection, sessionOf);
    for (const query of modelQueries(collection, docs, sessions)) {
      const result: ModelSearch = {
        collection,
        q: queryText(query),
        filter: query.filter?.text ?? null,
        live: null,
        model: modelAnswer(query, docs),
      };
      try {
        result.live = await askGateway(url, query);
      } catch (error) {
        result.error = (error as Error).message;
      }
      results.push(result);
    }
  }
  return results;
}

/** What differs between a live answer and the model's; empty when they agree. */
export function modelDifferences(search: ModelSearch): string[] {
  const { live, model } = search;
  if (live === null) return [`not compared: ${search.error ?? 'no answer'}`];
  const differences: string[] = [];
  if (live.total !== model.total) {
    differences.push(`total ${live.total}, the model counts ${model.total}`);
  }
  for (const [key, writeId] of live.hits) {
    const expected = model.hits.get(key);
    if (expected === undefined) differences.push(`hit ${key}=${writeId} does not match`);
    else if (expected !== writeId) differences.push(`hit ${key}=${writeId}, the model ${expected}`);
  }
  if (live.complete) {
    for (const [key, writeId] of model.hits) {
      if (!live.hits.has(key)) differences.push(`${key}=${writeId} matches but was not found`);
    }
  }
  const values = new Set([...live.facets.keys(), ...model.facets.keys()]);
  for (const value of values) {
    const [got, want] = [live.facets.get(value) ?? 0, model.facets.get(value) ?? 0];
    if (got !== want) differences.push(`facet s=${value}: ${got}, the model counts ${want}`);
  }
  return differences;
}
