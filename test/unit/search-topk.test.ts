// Proves issue 27's top-k lists answer one-word searches exactly as FTS5's own `ORDER BY rank`
// (the same keys in the same order, scores to 1e-9) on a seeded Zipf corpus, while reading far
// fewer postings than the word has matches; that OR and AND of listed words are ranked from the
// lists exactly as FTS5 ranks them; that filtered searches of words, by the lists where the filter
// passes rows enough and by FTS5 where it does not, rank and count as FTS5 does with the same
// filter; that OR, AND, filtered and sorted searches keep FTS5's answers; and that the lists are a
// function of the documents alone: the same after updates, deletes and a re-index as when built
// from scratch or from one batch.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { BackgroundSteps } from '../../serve-node/background-steps.js';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { parseFilter } from '../../shared/filter/parse.js';
import { parseSort } from '../../shared/filter/parse-lists.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { openFtsTable, ROW_PARTITIONS } from '../../serve-node/fts-table.js';
import { FtsTokenizers } from '../../serve-node/fts-tokens.js';
import { Replica } from '../../serve-node/replica.js';
import { SearchReads, type FieldQuery } from '../../serve-node/search-reads.js';
import { SEARCH_FILE } from '../../serve-node/search-store.js';
import { decodeBlock } from '../../serve-node/topk-blocks.js';
import { storedPostings } from '../../serve-node/topk-index.js';
import { seededRandom, testSeed } from '../harness/index.js';

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };
const PARTITIONS = 4;
const LISTED_DF_MIN = 20;
const TOTAL_EXACT_MAX = 300;
const DEPTH = 10;
/** Weights whose sums round (0.1 + 0.1 + 0.1 !== 0.3): scores must add them as FTS5 does. */
const SETTINGS = {
  searchable: ['title', 'body'],
  weights: { title: 0.1, body: 1 },
  filterable: ['n'],
  sortable: ['n'],
};
const VOCABULARY = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x`);

interface Doc {
  key: string;
  value: { title: string; body: string; n: number };
}

const randomOf = (seed: number) => {
  const random = seededRandom(seed);
  return () => random.next();
};

const dirs: string[] = [];
const replicas: Replica[] = [];
let seed: number;

function tempReplica(topkMergeSegmentsMin?: number): { replica: Replica; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'search-topk-'));
  dirs.push(dir);
  const replica = new Replica(dir, { topkListedDfMin: LISTED_DF_MIN, topkMergeSegmentsMin });
  replicas.push(replica);
  return { replica, dir };
}

beforeEach(() => {
  seed = testSeed('search-topk');
});

afterEach(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Documents whose words follow Zipf's law over VOCABULARY, and how the word frequencies fall. */
function zipfCorpus(random: () => number, count: number, version: number): Doc[] {
  const weights = VOCABULARY.map((_, i) => 1 / (i + 1));
  const sum = weights.reduce((a, b) => a + b, 0);
  const word = () => {
    let at = random() * sum;
    for (let i = 0; i < weights.length; i++) {
      at -= weights[i];
      if (at <= 0) return VOCABULARY[i];
    }
    return VOCABULARY[VOCABULARY.length - 1];
  };
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  return Array.from({ length: count }, (_, i) => ({
    key: `doc-${i}`,
    value: {
      title: words(1 + Math.floor(random() * 5)),
      body: words(5 + Math.floor(random() * 40)),
      n: Math.floor(random() * 100) + version,
    },
  }));
}

class Feed {
  private readonly next = new Map<string, number>();
  constructor(
    private readonly replica: Replica,
    /** Whether the lists' merges are taken after each apply (else left to the test). */
    private readonly merges = true,
  ) {}

  apply(topic: string, partition: number, records: LogRecord[]): void {
    const at = this.next.get(`${topic}/${partition}`) ?? 0;
    const batches = encodeBatch(records, { baseOffset: at });
    this.replica.applyMany([{ topic, partition, fromOffset: at, batches }]);
    this.next.set(`${topic}/${partition}`, at + records.length);
    while (this.replica.reindexStep(100) !== null);
    // The lists' merges, as the background steps take them between applied answers.
    while (this.merges && this.replica.topkMergeStep() !== null);
  }

  docs(docs: Array<{ key: string; value: unknown }>, partitionOf: (i: number) => number): void {
    for (let p = 0; p < PARTITIONS; p++) {
      const records = docs.filter((_, i) => partitionOf(i) === p).map((doc) => record(doc));
      for (let at = 0; at < records.length; at += 97) {
        this.apply('docs', p, records.slice(at, at + 97));
      }
    }
  }
}

function record(doc: { key: string; value: unknown }): LogRecord {
  const bytes = doc.value === null ? null : Buffer.from(JSON.stringify(doc.value));
  return { key: doc.key, value: bytes, timestampMs: 1_700_000_000_000 };
}

/** The search store's file, read through a connection of its own. */
function openStore(dir: string): Database.Database {
  return new Database(join(dir, SEARCH_FILE), { readonly: true });
}

function ftsTableOf(db: Database.Database): string {
  const id = db
    .prepare("SELECT table_id FROM collection_tables WHERE collection = 'docs'")
    .pluck()
    .get() as number;
  return `fts_${id}`;
}

interface Ranked {
  key: string;
  score: number;
  partition: number;
  row: number;
}

/**
 * FTS5's own ranking of every match (`rank` as bm25 with the collection's weights), in the
 * search's order: score, then partition, then row.
 */
function ftsRanking(db: Database.Database, q: string): Ranked[] {
  const table = ftsTableOf(db);
  const rows = db
    .prepare(
      `SELECT r.key AS key, -f.rank AS score, f.rowid AS row FROM ${table} f ` +
        `JOIN doc_rows r ON r.table_id = ${table.slice(4)} AND r.row = f.rowid ` +
        `WHERE ${table} MATCH ? AND rank MATCH 'bm25(0.1, 1)' ORDER BY rank`,
    )
    .all(parseQuery(q, limits).match) as Array<Omit<Ranked, 'partition'>>;
  return rows
    .map((row) => ({ ...row, partition: row.row % ROW_PARTITIONS }))
    .sort((a, b) => b.score - a.score || a.partition - b.partition || a.row - b.row);
}

function expectSameTop(actual: Array<{ key: string; score: number }>, expected: Ranked[]) {
  expect(actual.map((hit) => hit.key)).toEqual(expected.map((hit) => hit.key));
  actual.forEach((hit, i) => expect(Math.abs(hit.score - expected[i].score)).toBeLessThan(1e-9));
}

/** Documents of a history with rewrites and deletes, ending as `final`. */
function feedHistory(feed: Feed, random: () => number, docs: number) {
  const first = zipfCorpus(random, docs, 0);
  const partitionOf = (i: number) => i % PARTITIONS;
  // Under the default settings first, so the collection's settings arrive as a re-index.
  feed.docs(first, partitionOf);
  feed.apply(SETTINGS_TOPIC, 0, [{ ...record({ key: 'docs', value: SETTINGS }) }]);
  const rewritten = zipfCorpus(random, docs, 1000);
  const final = first.map((doc, i) => (i % 5 === 0 ? rewritten[i] : doc));
  feed.docs(
    final.filter((_, i) => i % 5 === 0),
    (i) => partitionOf(i * 5),
  );
  const deleted = final
    .map((doc, i) => ({ doc, i }))
    .filter(({ i }) => i % 11 === 0)
    .map(({ doc }) => ({ key: doc.key, value: null }));
  feed.docs(deleted, (i) => partitionOf(i * 11));
  return final.filter((_, i) => i % 11 !== 0);
}

/** Every word's document frequency in `docs`. */
function frequencies(docs: Doc[]): Map<string, number> {
  const df = new Map<string, number>();
  for (const doc of docs) {
    const words = new Set(`${doc.value.title} ${doc.value.body}`.split(' '));
    for (const word of words) df.set(word, (df.get(word) ?? 0) + 1);
  }
  return df;
}

/** The lists of the collection's table (a retired table's rows wait for background deletes). */
function dumpLists(dir: string): { terms: string[]; postings: string[] } {
  const db = openStore(dir);
  try {
    const id = ftsTableOf(db).slice(4);
    const lines = (sql: string) =>
      (db.prepare(sql).raw().all() as unknown[][]).map((row) => row.join(' '));
    return {
      terms: lines(`SELECT term, df FROM topk_terms WHERE table_id = ${id} ORDER BY term`),
      postings: [...storedPostings(db, Number(id))].map(
        ({ term, tf, len, row }) => `${term} ${tf} ${len} ${row % ROW_PARTITIONS} ${row}`,
      ),
    };
  } finally {
    db.close();
  }
}

/**
 * The lists built from FTS5 on open, `replica` closed first: a store without lists of this
 * threshold (an earlier layout).
 */
async function rebuiltLists(replica: Replica, dir: string): Promise<ReturnType<typeof dumpLists>> {
  await replica.close();
  replicas.splice(replicas.indexOf(replica), 1);
  const writable = new Database(join(dir, SEARCH_FILE));
  writable.exec('DELETE FROM topk_settings; DELETE FROM topk_blocks; DELETE FROM topk_terms');
  writable.close();
  replicas.push(new Replica(dir, { topkListedDfMin: LISTED_DF_MIN }));
  return dumpLists(dir);
}

/**
 * The store's removed rows (topk_removed) against the postings its segments hold: each entry
 * counts exactly the postings of its row left in blocks, at least one, and the rows that are
 * no document's any more (not in doc_rows) are the rows of those entries. Answers the entries.
 */
function expectRemovedRowsCounted(dir: string): number {
  const db = openStore(dir);
  try {
    const held = new Map<string, number>();
    const blocks = db
      .prepare(
        'SELECT t.table_id, b.postings FROM topk_blocks b JOIN topk_terms t ON t.id = b.term_id',
      )
      .raw()
      .all() as Array<[number, Buffer]>;
    const live = new Set(
      (db.prepare('SELECT table_id, row FROM doc_rows').raw().all() as number[][]).map((r) =>
        r.join(' '),
      ),
    );
    for (const [table, bytes] of blocks) {
      for (const { row } of decodeBlock(bytes)) {
        const key = `${table} ${row}`;
        if (!live.has(key)) held.set(key, (held.get(key) ?? 0) + 1);
      }
    }
    const entries = db
      .prepare('SELECT table_id, row, postings FROM topk_removed')
      .raw()
      .all() as number[][];
    const counted = new Map(entries.map(([table, row, postings]) => [`${table} ${row}`, postings]));
    expect(counted, `seed ${seed}`).toEqual(held);
    return entries.length;
  } finally {
    db.close();
  }
}

/** Each listed term's segments, most first. */
function segmentsOfTerms(dir: string): number[] {
  const db = openStore(dir);
  try {
    return db
      .prepare('SELECT count(*) AS n FROM topk_segments GROUP BY term_id ORDER BY n DESC')
      .pluck()
      .all() as number[];
  } finally {
    db.close();
  }
}

/** Lines that differ: a short message rather than a diff of every posting. */
function expectSameLines(actual: string[], expected: string[], what: string) {
  const [actualSet, expectedSet] = [new Set(actual), new Set(expected)];
  const missing = expected.filter((line) => !actualSet.has(line)).slice(0, 5);
  const extra = actual.filter((line) => !expectedSet.has(line)).slice(0, 5);
  expect({ what, missing, extra, length: actual.length }).toEqual({
    what,
    missing: [],
    extra: [],
    length: expected.length,
  });
}

describe('top-k lists', () => {
  it('rank one word exactly as FTS5 does, reading far fewer postings than its matches', () => {
    const { replica, dir } = tempReplica();
    const docs = feedHistory(new Feed(replica), randomOf(seed), 2000);
    const df = frequencies(docs);
    const db = openStore(dir);
    try {
      const all = Array.from({ length: PARTITIONS }, (_, p) => p);
      let listedSearched = 0;
      for (const [word, n] of [...df].sort((a, b) => b[1] - a[1])) {
        const expected = ftsRanking(db, word);
        expect(expected.length, `${word} (seed ${seed})`).toBe(n);
        const found = replica.search.search(
          'docs',
          all,
          parseQuery(word, limits),
          DEPTH,
          TOTAL_EXACT_MAX,
        );
        expectSameTop(found.matches, expected.slice(0, DEPTH));
        expect(found.total).toBe(Math.min(n, TOTAL_EXACT_MAX));
        // Upper case: the same term, whether FTS5 or the ASCII shortcut lowers it.
        const upper = replica.search.search(
          'docs',
          all,
          parseQuery(word.toUpperCase(), limits),
          DEPTH,
          TOTAL_EXACT_MAX,
        );
        expect(upper.matches).toEqual(found.matches);
        expect(found.totalExact).toBe(n < TOTAL_EXACT_MAX);
        if (n >= LISTED_DF_MIN) {
          listedSearched += 1;
          expect(found.examined, `${word} has a list`).toBeDefined();
          // About a chunk per run plus the depth, whatever the matches.
          if (n >= 1000) expect(found.examined!).toBeLessThan(n / 4);
        } else {
          expect(found.examined, `${word} has no list`).toBeUndefined();
        }
        // Some partitions only: the same order, the others' rows skipped.
        const some = replica.search.search(
          'docs',
          [1, 3],
          parseQuery(word, limits),
          DEPTH,
          TOTAL_EXACT_MAX,
        );
        expectSameTop(
          some.matches,
          expected.filter((hit) => hit.partition % 2 === 1).slice(0, DEPTH),
        );
      }
      expect(listedSearched).toBeGreaterThan(20);
    } finally {
      db.close();
    }
  });

  it('rank OR and AND of words, one listed at least, exactly as FTS5 does', () => {
    const { replica, dir } = tempReplica();
    const random = randomOf(seed);
    const feed = new Feed(replica);
    const docs = feedHistory(feed, random, 2000);
    // Words in a few rows whatever the seed (the corpus's rarest may all reach the threshold).
    const rare = Array.from({ length: 6 }, (_, i) => ({
      key: `rare-${i}`,
      value: { title: `rare${i % 3}q`, body: `seldom${i % 2}q`, n: i },
    }));
    feed.docs(rare, (i) => i % PARTITIONS);
    docs.push(...rare);
    const df = frequencies(docs);
    const listed = [...df].filter(([, n]) => n >= LISTED_DF_MIN).map(([word]) => word);
    const unlisted = [...df].filter(([, n]) => n < LISTED_DF_MIN).map(([word]) => word);
    const common = [...df]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([word]) => word);
    const pick = (words: string[]) => words[Math.floor(random() * words.length)];
    const db = openStore(dir);
    try {
      const queries: string[][] = [];
      for (let i = 0; i < 60; i++) {
        // Half of the most frequent words, whose ANDs have matches enough for the lists.
        const from = i % 2 === 0 ? listed : common;
        const words = [pick(from), pick(from)];
        if (i % 3 === 0) words.push(pick(listed));
        if (i % 10 === 0) words.push(words[0]);
        queries.push(words);
      }
      // The three most frequent words are each in most rows: their ANDs have matches enough.
      for (let i = 0; i < 6; i++) queries.push([common[i % 3], common[(i + 1) % 3]]);
      for (let i = 0; i < 10; i++) queries.push([pick(listed), pick(unlisted)]);
      for (let i = 0; i < 3; i++) queries.push([pick(unlisted), pick(unlisted)]);
      queries.push([pick(listed), 'nowhere']);
      let andsByLists = 0;
      for (const words of queries) {
        for (const q of [words.join(' OR '), words.join(' ')]) {
          const expected = ftsRanking(db, q);
          const search = (partitions: number[]) =>
            replica.search.search(
              'docs',
              partitions,
              parseQuery(q, limits),
              DEPTH,
              TOTAL_EXACT_MAX,
            );
          const found = search([0, 1, 2, 3]);
          expectSameTop(found.matches, expected.slice(0, DEPTH));
          expect(found.total, q).toBe(Math.min(expected.length, TOTAL_EXACT_MAX));
          expect(found.totalExact, q).toBe(expected.length < TOTAL_EXACT_MAX);
          const anyListed = words.some((word) => df.get(word)! >= LISTED_DF_MIN);
          // An AND the lists may leave to FTS5 (its matches few beside its postings).
          if (!anyListed || q.includes(' OR ')) {
            expect(found.examined !== undefined, `${q} (seed ${seed})`).toBe(anyListed);
          }
          if (found.examined !== undefined && !q.includes(' OR ')) andsByLists += 1;
          const some = search([1, 3]);
          const expectedSome = expected.filter((hit) => hit.partition % 2 === 1);
          expectSameTop(some.matches, expectedSome.slice(0, DEPTH));
          expect(some.total, q).toBe(Math.min(expectedSome.length, TOTAL_EXACT_MAX));
        }
      }
      expect(andsByLists).toBeGreaterThanOrEqual(6);
    } finally {
      db.close();
    }
  });

  it('rank filtered searches of words as FTS5 does with the filter, whichever plan answers', () => {
    const { replica, dir } = tempReplica();
    const random = randomOf(seed);
    const docs = feedHistory(new Feed(replica), random, 2000);
    const byKey = new Map(docs.map((doc) => [doc.key, doc]));
    const df = frequencies(docs);
    const listed = [...df].filter(([, n]) => n >= LISTED_DF_MIN).map(([word]) => word);
    const common = [...df]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([word]) => word);
    const pick = (words: string[]) => words[Math.floor(random() * words.length)];
    // From every document to none (n is 0..99 in the first version, 1000..1099 rewritten).
    const filters: Array<[string, (n: number) => boolean]> = [
      ['n >= 0', () => true],
      ['n > 50', (n) => n > 50],
      ['n < 20 OR n > 1090', (n) => n < 20 || n > 1090],
      ['NOT n < 90', (n) => !(n < 90)],
      ['n = 7', (n) => n === 7],
      ['n 1000 TO 1004', (n) => n >= 1000 && n <= 1004],
      ['n > 10 AND n < 13', (n) => n > 10 && n < 13],
      ['n = -1', () => false],
    ];
    const db = openStore(dir);
    try {
      const queries: string[] = [];
      for (let i = 0; i < 12; i++) queries.push(pick(common), pick(listed));
      for (let i = 0; i < 6; i++) {
        queries.push(`${pick(common)} OR ${pick(common)}`, `${pick(listed)} OR ${pick(common)}`);
        queries.push(`${common[i % 3]} ${common[(i + 1) % 3]}`);
      }
      const plans = { lists: 0, fts5: 0 };
      for (const q of queries) {
        const expected = ftsRanking(db, q);
        for (const [filter, holds] of filters) {
          const passing = expected.filter((hit) => holds(byKey.get(hit.key)!.value.n));
          // Facets over the same matches, the filter probed a match or its rows gathered.
          const facets = replica.search.facets(
            'docs',
            [0, 1, 2, 3],
            parseQuery(q, limits),
            parseFilter(filter),
            ['n'],
          );
          const counted = new Map<number, number>();
          for (const hit of passing) {
            const n = byKey.get(hit.key)!.value.n;
            counted.set(n, (counted.get(n) ?? 0) + 1);
          }
          const faceted = facets.get('n')!.map(({ value, count }) => [value, count]);
          expect(new Map(faceted as Array<[number, number]>), `${q} ${filter}`).toEqual(counted);
          for (const partitions of [
            [0, 1, 2, 3],
            [1, 3],
          ]) {
            const found = replica.search.search(
              'docs',
              partitions,
              parseQuery(q, limits),
              DEPTH,
              TOTAL_EXACT_MAX,
              { filter: parseFilter(filter), sort: [] },
            );
            const asked = passing.filter((hit) => partitions.includes(hit.partition));
            const what = `${q} filtered by ${filter} in ${partitions} (seed ${seed})`;
            expectSameTop(found.matches, asked.slice(0, DEPTH));
            expect(found.total, what).toBe(Math.min(asked.length, TOTAL_EXACT_MAX));
            expect(found.totalExact, what).toBe(asked.length < TOTAL_EXACT_MAX);
            plans[found.examined === undefined ? 'fts5' : 'lists'] += 1;
          }
        }
      }
      // Both plans were taken: lists for the filters passing many rows, FTS5 for the others.
      expect(plans.lists, JSON.stringify(plans)).toBeGreaterThan(100);
      expect(plans.fts5, JSON.stringify(plans)).toBeGreaterThan(100);
    } finally {
      db.close();
    }
  });

  it('leave OR, AND, filtered and sorted searches with FTS5 answers', () => {
    const { replica, dir } = tempReplica();
    const random = randomOf(seed);
    const docs = feedHistory(new Feed(replica), random, 1200);
    const byKey = new Map(docs.map((doc) => [doc.key, doc]));
    const pick = () => VOCABULARY[Math.floor(random() ** 3 * VOCABULARY.length)];
    const db = openStore(dir);
    try {
      for (let i = 0; i < 40; i++) {
        const [a, b] = [pick(), pick()];
        for (const q of [`${a} OR ${b}`, `${a} ${b}`, a]) {
          const expected = ftsRanking(db, q);
          const search = (fields?: FieldQuery) =>
            replica.search.search('docs', [0, 1, 2, 3], parseQuery(q, limits), DEPTH, 1e6, fields);
          const found = search();
          expectSameTop(found.matches, expected.slice(0, DEPTH));
          expect(found.total, q).toBe(expected.length);
          const filtered = search({ filter: parseFilter('n > 50'), sort: [] });
          expectSameTop(
            filtered.matches,
            expected.filter((hit) => byKey.get(hit.key)!.value.n > 50).slice(0, DEPTH),
          );
          const sorted = search({ filter: null, sort: parseSort('n:desc') });
          const n = (hit: Ranked) => byKey.get(hit.key)!.value.n;
          const bySort = [...expected].sort(
            (x, y) => n(y) - n(x) || y.score - x.score || (x.key < y.key ? -1 : 1),
          );
          expectSameTop(sorted.matches, bySort.slice(0, DEPTH));
        }
      }
    } finally {
      db.close();
    }
  });

  it('are the same after a history of writes as built from scratch or from one batch', async () => {
    const { replica, dir } = tempReplica();
    const docs = feedHistory(new Feed(replica), randomOf(seed), 1500);
    const lived = dumpLists(dir);
    expect(lived.postings.length).toBeGreaterThan(1000);
    const rebuilt = await rebuiltLists(replica, dir);
    expectSameLines(rebuilt.terms, lived.terms, 'terms rebuilt');
    expectSameLines(rebuilt.postings, lived.postings, 'postings rebuilt');
    // The final documents written at once, under the final settings, in other batches.
    const other = tempReplica();
    const feed = new Feed(other.replica);
    feed.apply(SETTINGS_TOPIC, 0, [{ ...record({ key: 'docs', value: SETTINGS }) }]);
    const partitionOf = (i: number) => Number(docs[i].key.slice(4)) % PARTITIONS;
    feed.docs(docs, partitionOf);
    // Offsets differ from the history's, so rows do: compare what rows do not name.
    const withoutRows = (postings: string[]) =>
      postings.map((line) => line.split(' ').slice(0, 4).join(' ')).sort();
    const batched = dumpLists(other.dir);
    expectSameLines(batched.terms, lived.terms, 'terms batched');
    expectSameLines(withoutRows(batched.postings), withoutRows(lived.postings), 'postings batched');
  });

  it('are the same when one batch writes, rewrites and deletes a key as when built from FTS5', async () => {
    const { replica, dir } = tempReplica();
    const random = randomOf(seed);
    const feed = new Feed(replica);
    feed.apply(SETTINGS_TOPIC, 0, [{ ...record({ key: 'docs', value: SETTINGS }) }]);
    feed.docs(zipfCorpus(random, 600, 0), (i) => i % PARTITIONS);
    // One batch a partition: keys written twice (the first version's postings added and removed
    // in one transaction), deleted after a rewrite, and written again after a delete.
    const again = zipfCorpus(random, 600, 1);
    for (let p = 0; p < PARTITIONS; p++) {
      const keys = again.filter((_, i) => i % PARTITIONS === p).slice(0, 60);
      const records = keys.flatMap((doc, i) => {
        const twice = [record(doc), record({ ...doc, value: { ...doc.value, n: -1 } })];
        if (i % 3 === 0) return [...twice, record({ key: doc.key, value: null })];
        if (i % 3 === 1) return [record({ key: doc.key, value: null }), ...twice];
        return twice;
      });
      feed.apply('docs', p, records);
    }
    const lived = dumpLists(dir);
    const rebuilt = await rebuiltLists(replica, dir);
    expect(lived.postings.length).toBeGreaterThan(1000);
    expectSameLines(rebuilt.terms, lived.terms, 'terms rebuilt');
    expectSameLines(rebuilt.postings, lived.postings, 'postings rebuilt');
  });

  it('are the same whether segments merge at twos or never, with each removed row counted exactly', async () => {
    // The same history into stores whose terms' segments merge as soon as two are of a tier,
    // and never: a removed row's postings stay in unmerged segments and go in merged ones.
    // Documents of new keys after the history: lists grown past their sizes at the deletes, so
    // merges at twos reach the segments holding the removed rows.
    const feedBoth = (replica: Replica) => {
      const random = randomOf(seed);
      const feed = new Feed(replica);
      const final = feedHistory(feed, random, 1500);
      const more = zipfCorpus(random, 1500, 2).map((doc) => ({ ...doc, key: `more-${doc.key}` }));
      feed.docs(more, (i) => i % PARTITIONS);
      return [...final, ...more];
    };
    const merging = tempReplica(2);
    const never = tempReplica(1_000_000);
    const docs = feedBoth(merging.replica);
    feedBoth(never.replica);
    const [merged, unmerged] = [dumpLists(merging.dir), dumpLists(never.dir)];
    expect(merged.postings.length).toBeGreaterThan(1000);
    expectSameLines(merged.terms, unmerged.terms, 'terms merged');
    expectSameLines(merged.postings, unmerged.postings, 'postings merged');
    const removedUnmerged = expectRemovedRowsCounted(never.dir);
    const removedMerged = expectRemovedRowsCounted(merging.dir);
    // Deletes and rewrites left removed rows; merges dropped most of their postings.
    expect(removedUnmerged, `seed ${seed}`).toBeGreaterThan(100);
    expect(removedMerged, `seed ${seed}`).toBeLessThan(removedUnmerged);
    // Merging at twos: a segment a tier at most, a tier a doubling of postings (at most 1,500).
    expect(segmentsOfTerms(merging.dir)[0], `seed ${seed}`).toBeLessThanOrEqual(11);
    expect(segmentsOfTerms(never.dir)[0], `seed ${seed}`).toBeGreaterThan(11);
    // And searches rank as FTS5 does through every segment, skipping the removed rows.
    const common = [...frequencies(docs)].sort((a, b) => b[1] - a[1]).slice(0, 3);
    for (const { dir } of [merging, never]) {
      const db = openStore(dir);
      try {
        const table = openFtsTable(
          db,
          db
            .prepare(
              'SELECT t.id, t.settings FROM fts_tables t JOIN collection_tables c ' +
                "ON c.table_id = t.id WHERE c.collection = 'docs'",
            )
            .get() as { id: number; settings: string },
        );
        const reads = new SearchReads(db, () => table);
        const all = Array.from({ length: PARTITIONS }, (_, p) => p);
        for (const [word] of common) {
          const found = reads.search('docs', all, parseQuery(word, limits), DEPTH, 0);
          expectSameTop(found.matches, ftsRanking(db, word).slice(0, DEPTH));
        }
        const two = `${common[0][0]} ${common[2][0]}`;
        const found = reads.search('docs', all, parseQuery(two, limits), DEPTH, TOTAL_EXACT_MAX);
        expectSameTop(found.matches, ftsRanking(db, two).slice(0, DEPTH));
      } finally {
        db.close();
      }
    }
    const rebuilt = await rebuiltLists(merging.replica, merging.dir);
    expectSameLines(rebuilt.postings, merged.postings, 'postings rebuilt');
    expect(expectRemovedRowsCounted(merging.dir)).toBe(0);
  });

  it('have their segments merged by the background steps into one a term, the postings unchanged', async () => {
    const { replica, dir } = tempReplica(2);
    feedHistory(new Feed(replica, false), randomOf(seed), 1500);
    const unmerged = dumpLists(dir);
    expect(segmentsOfTerms(dir)[0], `seed ${seed}`).toBeGreaterThan(11);
    const logger = createLogger('test', 'silent');
    const errors = vi.spyOn(logger, 'error');
    const steps = new BackgroundSteps({
      replica: () => replica,
      stepDocsMax: 50,
      stepMsMax: 5,
      retryMsMax: 5_000,
      merges: { quietMs: 0, writtenPercent: 0, stepMsMax: 5 },
      paused: () => null,
      onSwapped: () => undefined,
      logger,
    });
    try {
      steps.kick();
      // Full tiers first, then (writes paused, any share written) each list whole.
      await vi.waitFor(() => expect(segmentsOfTerms(dir)[0]).toBe(1), {
        timeout: 20_000,
        interval: 50,
      });
      expect(errors).not.toHaveBeenCalled();
    } finally {
      await steps.stop();
    }
    const merged = dumpLists(dir);
    expectSameLines(merged.terms, unmerged.terms, 'terms merged');
    expectSameLines(merged.postings, unmerged.postings, 'postings merged');
    expectRemovedRowsCounted(dir);
  });

  it('have their due segments merged by the background steps while a re-index runs', async () => {
    const { replica, dir } = tempReplica(2);
    const feed = new Feed(replica, false);
    feed.docs(zipfCorpus(randomOf(seed), 1500, 0), (i) => i % PARTITIONS);
    // Written in 16 transactions, none merged: a common term holds a segment of each.
    expect(segmentsOfTerms(dir)[0], `seed ${seed}`).toBeGreaterThan(11);
    // The settings record alone: its re-index is the background steps', a few rows a step, and
    // each step adds a segment to each listed term of the new table it writes.
    const settings = record({ key: 'docs', value: SETTINGS });
    const batches = encodeBatch([settings], { baseOffset: 0 });
    replica.applyMany([{ topic: SETTINGS_TOPIC, partition: 0, fromOffset: 0, batches }]);
    expect(replica.search.buildOf('docs')).toBeDefined();
    const logger = createLogger('test', 'silent');
    const errors = vi.spyOn(logger, 'error');
    let reindexed = false;
    const steps: BackgroundSteps = new BackgroundSteps({
      replica: () => replica,
      stepDocsMax: 10,
      stepMsMax: 5,
      retryMsMax: 5_000,
      // No FTS5 merge and no whole list merge: only the tiers' merges.
      merges: { quietMs: 60_000, writtenPercent: 1_000_000, stepMsMax: 5 },
      // The loop ends as soon as the re-index has swapped, before any step after it.
      paused: () => {
        if (replica.search.buildOf('docs') === undefined) {
          reindexed = true;
          void steps.stop();
        }
        return null;
      },
      onSwapped: () => undefined,
      logger,
    });
    steps.kick();
    await vi.waitFor(() => expect(reindexed).toBe(true), { timeout: 60_000, interval: 50 });
    await steps.stop();
    expect(errors).not.toHaveBeenCalled();
    // Merging at twos between the re-index's steps: a segment a tier at most (a tier a doubling
    // of postings, at most 1,500), and one its last step added.
    expect(segmentsOfTerms(dir)[0], `seed ${seed}`).toBeLessThanOrEqual(12);
  });

  it('rewrite a list of one segment once deletes leave writtenPercent of its postings dead', async () => {
    let { replica, dir } = tempReplica();
    const feed = new Feed(replica, false);
    const docs = Array.from({ length: 90 }, (_, i) => ({
      key: `k${i}`,
      value: { title: `t${i}`, body: `apple w${i % 7}`, n: i },
    }));
    feed.docs(docs, () => 0);
    expect(segmentsOfTerms(dir), 'one transaction, one segment').toEqual([1]);
    const removeKeys = (from: number, to: number) =>
      feed.docs(
        docs.slice(from, to).map(({ key }) => ({ key, value: null })),
        () => 0,
      );
    // 8 dead of 90: below 10 percent, the list is looked at and waits.
    removeKeys(0, 8);
    expect(replica.topkMergeStep(Infinity, 10)).toBe(1);
    expect(expectRemovedRowsCounted(dir)).toBe(8);
    // 9 dead of 90: 'apple' (the one listed term) is rewritten without them.
    removeKeys(8, 9);
    expect(replica.topkMergeStep(Infinity, 10)).toBe(1);
    expect(expectRemovedRowsCounted(dir)).toBe(0);
    const merged = dumpLists(dir);
    expect(merged.postings.filter((line) => line.startsWith('apple ')).length).toBe(81);
    // Found again on opening: 9 dead of 81 postings.
    removeKeys(9, 18);
    await replica.close();
    replicas.splice(replicas.indexOf(replica), 1);
    replica = new Replica(dir, { topkListedDfMin: LISTED_DF_MIN });
    replicas.push(replica);
    expect(expectRemovedRowsCounted(dir)).toBe(9);
    expect(replica.topkMergeStep(Infinity, 10)).toBe(1);
    expect(expectRemovedRowsCounted(dir)).toBe(0);
    expect(segmentsOfTerms(dir)).toEqual([1]);
    const rebuilt = await rebuiltLists(replica, dir);
    expectSameLines(rebuilt.postings, dumpLists(dir).postings, 'postings rebuilt');
  });

  it('are written by a whole merge in the very blocks a list built at once has', async () => {
    const { replica, dir } = tempReplica(2);
    feedHistory(new Feed(replica), randomOf(seed), 1500);
    while (replica.topkMergeStep(Infinity, 0) !== null);
    expect(segmentsOfTerms(dir)[0], `seed ${seed}`).toBe(1);
    const blocks = () => {
      const db = openStore(dir);
      try {
        const id = ftsTableOf(db).slice(4);
        return (
          db
            .prepare(
              'SELECT t.term, b.tf, b.len, b.tie, hex(b.postings) FROM topk_blocks b ' +
                `JOIN topk_terms t ON t.id = b.term_id WHERE t.table_id = ${id} ` +
                'ORDER BY t.term, b.tf, b.len, b.tie',
            )
            .raw()
            .all() as unknown[][]
        ).map((row) => row.join(' '));
      } finally {
        db.close();
      }
    };
    const merged = blocks();
    await rebuiltLists(replica, dir);
    expect(merged.length).toBeGreaterThan(100);
    expectSameLines(merged, blocks(), 'blocks rebuilt');
  });

  it('drop the list of a term falling below listed_df_min, counting off its removed rows', async () => {
    const { replica, dir } = tempReplica(1_000_000);
    const feed = new Feed(replica);
    feed.apply(SETTINGS_TOPIC, 0, [{ ...record({ key: 'docs', value: SETTINGS }) }]);
    const doc = (i: number, body: string) => ({
      key: `k${i}`,
      value: { title: `t${i}`, body, n: i },
    });
    const held = Array.from({ length: LISTED_DF_MIN + 10 }, (_, i) =>
      doc(i, `fading steady w${i}`),
    );
    const filler = Array.from({ length: LISTED_DF_MIN }, (_, i) => doc(100 + i, 'steady'));
    feed.docs([...held, ...filler], () => 0);
    // Five rows removed while 'fading' stays listed: each an entry counting its two postings.
    feed.docs(
      held.slice(0, 5).map(({ key }) => ({ key, value: null })),
      () => 0,
    );
    expect(expectRemovedRowsCounted(dir)).toBe(5);
    // Then 'fading' falls below the threshold: its list goes, and with it a posting of each.
    feed.docs(
      held.slice(5, 20).map(({ key }) => ({ key, value: null })),
      () => 0,
    );
    const lived = dumpLists(dir);
    expect(lived.terms.map((line) => line.split(' ')[0])).toEqual(['steady']);
    expect(expectRemovedRowsCounted(dir)).toBe(20);
    const rebuilt = await rebuiltLists(replica, dir);
    expectSameLines(rebuilt.terms, lived.terms, 'terms rebuilt');
    expectSameLines(rebuilt.postings, lived.postings, 'postings rebuilt');
  });

  it('ask FTS5 nothing of a word no list holds, and prepare nothing again for a new table object', () => {
    const { replica, dir } = tempReplica();
    const docs = feedHistory(new Feed(replica), randomOf(seed), 400);
    const byFrequency = [...frequencies(docs)].sort((a, b) => b[1] - a[1]);
    const unlisted = byFrequency.find(([, n]) => n < LISTED_DF_MIN)![0];
    const mixedText = `${byFrequency[0][0]} OR ${unlisted}`;
    const mixed = parseQuery(mixedText, limits);
    // A reading connection of its own, given a new table object a search, as a read thread
    // is after every commit of the writer (search-store.ts followWriter).
    const db = openStore(dir);
    try {
      const row = db
        .prepare(
          'SELECT t.id, t.settings FROM fts_tables t JOIN collection_tables c ' +
            "ON c.table_id = t.id WHERE c.collection = 'docs'",
        )
        .get() as { id: number; settings: string };
      let table = openFtsTable(db, row);
      const reads = new SearchReads(db, () => table);
      const temporary = () =>
        (
          db
            .prepare("SELECT name FROM sqlite_temp_master WHERE type = 'table'")
            .pluck()
            .all() as string[]
        ).filter((name) => name.startsWith(`${table.name}_`));
      const query = parseQuery(unlisted, limits);
      const all = Array.from({ length: PARTITIONS }, (_, p) => p);
      const search = (fields?: FieldQuery, asked = query) =>
        reads.search('docs', all, asked, DEPTH, TOTAL_EXACT_MAX, fields);
      const fts5 = ftsRanking(db, unlisted);
      expectSameTop(search().matches, fts5.slice(0, DEPTH));
      expect(temporary(), `seed ${seed}`).toEqual([]);
      const filtered = { filter: parseFilter('n >= 0'), sort: [] };
      expectSameTop(search(filtered).matches, fts5.slice(0, DEPTH));
      expect(temporary(), `seed ${seed}`).toEqual([`${table.name}_terms`]);
      // A listed word beside it: the unlisted one's postings read from FTS5.
      const mixedFound = search(undefined, mixed);
      expect(mixedFound.examined, `seed ${seed}`).toBeDefined();
      expectSameTop(mixedFound.matches, ftsRanking(db, mixedText).slice(0, DEPTH));
      let prepared = 0;
      const prepare = db.prepare.bind(db);
      db.prepare = ((sql: string) => {
        prepared += 1;
        return prepare(sql);
      }) as typeof db.prepare;
      for (let i = 0; i < 3; i++) {
        table = { ...table };
        search(filtered);
        search();
        search(undefined, mixed);
      }
      expect(prepared, `seed ${seed}`).toBe(0);
    } finally {
      db.close();
    }
  });

  it('take the terms FTS5 makes: an ASCII word lowered, others as the tokenizer makes them', () => {
    const db = new Database(':memory:');
    try {
      const tokenizers = new FtsTokenizers(db);
      const words = ['Hello', 'ABC123', 'x9', 'Café', 'naïve', 'foo-bar', 'Running'];
      const terms = (tokenizer: string) =>
        tokenizers
          .tokenize(tokenizer, words)
          .map((text) => [...text.counts.keys()].sort().join(' '));
      expect(terms('unicode61 remove_diacritics 2')).toEqual([
        'hello',
        'abc123',
        'x9',
        'cafe',
        'naive',
        'bar foo',
        'running',
      ]);
      expect(terms('porter unicode61 remove_diacritics 2').at(-1)).toBe('run');
    } finally {
      db.close();
    }
  });
});
