// Proves issue 4's ranking rule on one serve-node: whatever partitions its documents are spread
// over, a search ranks them exactly as one FTS5 index holding the same documents (scores equal),
// also after a settings change, which re-indexes every partition of the collection at once.
import { DEFAULT_LIMITS as SERVE_LIMITS } from '../../serve-node/config.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';

const TOTAL_EXACT_MAX = SERVE_LIMITS.searchTotalExactMax;

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };
const PARTITIONS = 4;
const WORDS = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'glacier', 'harbor'];

let dir: string;
let replica: Replica;
/** `topic/partition` → the next offset the log would give. */
const next = new Map<string, number>();

function record(key: string, value: unknown): LogRecord {
  const bytes = value === null ? null : Buffer.from(JSON.stringify(value));
  return { key, value: bytes, timestampMs: 1_700_000_000_000 };
}

/** Records of the `docs` collection (or of another topic) into a partition, as the log would. */
function apply(partition: number, records: LogRecord[], topic = 'docs'): void {
  const at = next.get(`${topic}/${partition}`) ?? 0;
  const batches = encodeBatch(records, { baseOffset: at });
  replica.applyMany([{ topic, partition, fromOffset: at, batches }]);
  next.set(`${topic}/${partition}`, at + records.length);
  // A settings record re-indexes in steps, as the serve-node's background steps take them.
  while (replica.reindexStep(100) !== null);
}

/** A deterministic corpus: texts of 3..12 words with skewed term frequencies. */
function corpus(count: number): Array<{ key: string; text: string }> {
  let seed = 7;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: count }, (_, i) => {
    const words = Array.from({ length: 3 + Math.floor(random() * 10) }, () => {
      return WORDS[Math.floor(random() ** 2 * WORDS.length)];
    });
    return { key: `doc-${i}`, text: words.join(' ') };
  });
}

/** The reference: one FTS5 table, default tokenizer, one column holding every string field. */
function singleIndexRanking(docs: Array<{ key: string; text: string }>, q: string) {
  const db = new Database(':memory:');
  try {
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(c0, tokenize = 'unicode61 remove_diacritics 2')`);
    const insert = db.prepare('INSERT INTO t (rowid, c0) VALUES (?, ?)');
    docs.forEach((doc, i) => insert.run(i, doc.text));
    const rows = db
      .prepare('SELECT rowid AS row, -bm25(t) AS score FROM t WHERE t MATCH ?')
      .all(parseQuery(q, limits).match) as Array<{ row: number; score: number }>;
    return rows.map(({ row, score }) => ({ key: docs[row].key, score }));
  } finally {
    db.close();
  }
}

function nodeRanking(q: string, partitions: number[]) {
  const { matches } = replica.search.search(
    'docs',
    partitions,
    parseQuery(q, limits),
    1000,
    TOTAL_EXACT_MAX,
  );
  return matches.map(({ key, score }) => ({ key, score }));
}

/** Scores equal to the last bits of a double; the order of equal scores is not compared. */
function expectSameRanking(actual: Array<{ key: string; score: number }>, expected: typeof actual) {
  const byScoreThenKey = (a: { key: string; score: number }, b: typeof a) =>
    b.score - a.score || (a.key < b.key ? -1 : 1);
  expect(actual.length).toBe(expected.length);
  const sorted = [...actual].sort(byScoreThenKey);
  [...expected].sort(byScoreThenKey).forEach((want, i) => {
    expect(sorted[i].key).toBe(want.key);
    expect(sorted[i].score).toBeCloseTo(want.score, 12);
  });
  for (let i = 1; i < actual.length; i++) {
    expect(actual[i].score).toBeLessThanOrEqual(actual[i - 1].score);
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'search-ranking-'));
  replica = new Replica(dir);
  next.clear();
});

afterEach(async () => {
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('search ranking on one serve-node', () => {
  it('equals one FTS5 index holding the same documents, after updates and deletes', () => {
    const docs = corpus(400);
    const partitionOf = (i: number) => i % PARTITIONS;
    // First versions everywhere, then every third document rewritten and every seventh deleted.
    docs.forEach((doc, i) => apply(partitionOf(i), [record(doc.key, { t: 'stale' })]));
    docs.forEach((doc, i) => {
      if (i % 3 === 0) apply(partitionOf(i), [record(doc.key, { t: doc.text })]);
    });
    docs.forEach((doc, i) => {
      if (i % 3 !== 0) apply(partitionOf(i), [record(doc.key, { t: doc.text })]);
      if (i % 7 === 0) apply(partitionOf(i), [record(doc.key, null)]);
    });
    const live = docs.filter((_, i) => i % 7 !== 0);
    const all = Array.from({ length: PARTITIONS }, (_, p) => p);
    for (const q of ['amber', 'glacier', 'harbor OR fjord', 'cobalt dune', '"ember ember"']) {
      expectSameRanking(nodeRanking(q, all), singleIndexRanking(live, q));
    }
  });

  it('a search over some partitions holds only their documents, scored with the node-wide statistics', () => {
    const docs = corpus(120);
    docs.forEach((doc, i) => apply(i % PARTITIONS, [record(doc.key, { t: doc.text })]));
    const everything = nodeRanking('amber OR dune', [0, 1, 2, 3]);
    const some = nodeRanking('amber OR dune', [1, 3]);
    const inOneOrThree = (key: string) => Number(key.slice(4)) % 2 === 1;
    expect(some.length).toBeGreaterThan(0);
    expect(some).toEqual(everything.filter((hit) => inOneOrThree(hit.key)));
    const total = replica.search.search(
      'docs',
      [1, 3],
      parseQuery('amber OR dune', limits),
      5,
      TOTAL_EXACT_MAX,
    );
    expect(total.total).toBe(some.length);
    expect(total.matches.length).toBe(5);
  });

  it('counts the total exactly up to searchTotalExactMax and says when it is a lower bound past it', () => {
    const docs = corpus(120);
    docs.forEach((doc, i) => apply(i % PARTITIONS, [record(doc.key, { t: doc.text })]));
    const query = parseQuery('amber OR dune', limits);
    const all = Array.from({ length: PARTITIONS }, (_, p) => p);
    const exact = replica.search.search('docs', all, query, 5, TOTAL_EXACT_MAX);
    expect(exact.totalExact).toBe(true);
    expect(exact.total).toBeGreaterThan(10);
    const bounded = replica.search.search('docs', all, query, 5, 10);
    expect(bounded).toMatchObject({ total: 10, totalExact: false });
    expect(bounded.matches).toEqual(exact.matches);
    const atBound = replica.search.search('docs', all, query, 5, exact.total + 1);
    expect(atBound).toMatchObject({ total: exact.total, totalExact: true });
  });

  it('a settings change re-indexes every partition of the collection at once', () => {
    for (let p = 0; p < PARTITIONS; p++) {
      apply(p, [record(`k${p}`, { title: 'running', body: `note ${p}` })]);
    }
    const keys = (q: string) => nodeRanking(q, [0, 1, 2, 3]).map((hit) => hit.key);
    expect(keys('runs')).toEqual([]);
    const porter = { tokenizer: 'porter unicode61 remove_diacritics 2' };
    apply(0, [record('docs', porter)], SETTINGS_TOPIC);
    expect(keys('runs').sort()).toEqual(['k0', 'k1', 'k2', 'k3']);
    const docs = [0, 1, 2, 3].map((p) => ({ key: `k${p}`, text: `running\nnote ${p}` }));
    expectSameRanking(nodeRanking('note', [0, 1, 2, 3]), singleIndexRanking(docs, 'note'));
  });
});
