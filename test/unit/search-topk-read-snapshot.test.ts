// Proves a read connection's search sees one commit of the top-k lists whole: a merge the writer
// commits between two statements of a search (segments merged into one, a removed row's entry
// deleted with its last posting) neither brings back a removed row nor gives a row twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database, { type Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import { rowOf } from '../../serve-node/fts-table.js';
import { SEARCH_FILE, SearchStore } from '../../serve-node/search-store.js';
import { RemovedRows } from '../../serve-node/topk-removed.js';
import { prepareStreamStatements, TermStream } from '../../serve-node/topk-stream.js';

const LISTED_DF_MIN = 5;
/** A tier merge never falls due by itself: the test commits the merge where it wants it. */
const MERGE_SEGMENTS_NEVER = 1_000_000;
const WORD = 'apple';
const LIMITS = { queryBytesMax: 1024, queryTermsMax: 32 };
/** Postings a segment holds: more than a block's 64, so a run reads a second block. */
const SEGMENT_DOCS = 150;

const dirs: string[] = [];
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function record(key: string, value: unknown): LogRecord {
  const bytes = value === null ? null : Buffer.from(JSON.stringify(value));
  return { key, value: bytes, timestampMs: 1_700_000_000_000 };
}

/** A writer and a read connection on one store, as the apply and a read thread have them. */
function stores(): {
  replica: Replica;
  reader: SearchStore;
  apply: (records: LogRecord[]) => void;
  dir: string;
} {
  const dir = mkdtempSync(join(tmpdir(), 'search-topk-snapshot-'));
  dirs.push(dir);
  const options = { topkListedDfMin: LISTED_DF_MIN, topkMergeSegmentsMin: MERGE_SEGMENTS_NEVER };
  const replica = new Replica(dir, options);
  closers.push(() => replica.close());
  let next = 0;
  const apply = (records: LogRecord[]) => {
    const batches = encodeBatch(records, { baseOffset: next });
    replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: next, batches }]);
    next += records.length;
  };
  // One frequency and length: rows come in offset order, a segment's after the one before.
  const docs = (from: number) =>
    Array.from({ length: SEGMENT_DOCS }, (_, i) => record(`d${from + i}`, { body: `${WORD} x` }));
  apply(docs(0));
  apply(docs(SEGMENT_DOCS));
  const reader = new SearchStore(join(dir, SEARCH_FILE), { ...options, reader: true });
  closers.push(() => reader.close());
  return { replica, reader, apply, dir };
}

/**
 * Runs `read` with `before` called ahead of every statement `get` of it: a hook between two
 * statements of one search (every statement of better-sqlite3 shares one prototype, whose `get`
 * is wrapped while `read` runs).
 */
function withHook<T>(before: (statement: Statement) => void, read: () => T): T {
  const scratch = new Database(':memory:');
  const proto = Object.getPrototypeOf(scratch.prepare('SELECT 1')) as { get: Statement['get'] };
  scratch.close();
  const get = proto.get;
  proto.get = function (this: Statement, ...params: unknown[]) {
    before(this);
    return get.apply(this, params);
  };
  try {
    return read();
  } finally {
    proto.get = get;
  }
}

/** Runs `search` with `commit` run once, just before its first statement whose SQL holds `sql`. */
function withCommitBefore<T>(sql: string, commit: () => void, search: () => T): T {
  let armed = true;
  const found = withHook((statement) => {
    if (armed && statement.source.includes(sql)) {
      armed = false;
      commit();
    }
  }, search);
  expect(armed, `no statement of the search holds ${sql}`).toBe(false);
  return found;
}

/** A removed row's look-up (topk-removed.ts). */
const REMOVED_LOOKUP = 'FROM topk_removed WHERE table_id = ? AND row = ?';

/** Every whole list of several segments merged into one, in one commit of the writer. */
function mergeWhole(replica: Replica): void {
  expect(replica.topkMergeStep(Infinity, 0)).toBeGreaterThan(0);
}

function keysOf(reader: SearchStore, depth: number): string[] {
  const found = reader.search('docs', [0], parseQuery(WORD, LIMITS), depth, 0);
  return found.matches.map((match) => match.key);
}

describe('a read connection search', () => {
  it('skips a row whose removal a merge commits mid-search, its entry gone with its posting', () => {
    const { replica, reader, apply } = stores();
    apply([record('d3', null)]);
    const keys = withCommitBefore(
      REMOVED_LOOKUP,
      () => mergeWhole(replica),
      () => keysOf(reader, 10),
    );
    expect(keys).toEqual(['d0', 'd1', 'd2', 'd4', 'd5', 'd6', 'd7', 'd8', 'd9', 'd10']);
  });

  it('gives each row once when a merge commits between two blocks of a run', () => {
    const { replica, reader } = stores();
    const depth = SEGMENT_DOCS + 50;
    const keys = withCommitBefore(
      'AND (len, tie) > (?, ?) ORDER BY len, tie LIMIT 1',
      () => mergeWhole(replica),
      () => keysOf(reader, depth),
    );
    expect(keys).toEqual(Array.from({ length: depth }, (_, i) => `d${i}`));
  });

  it('looks a removed row up once between commits, however many searches read it', () => {
    const { reader, apply } = stores();
    apply([record('d3', null), record('d7', null)]);
    let lookups = 0;
    const count = (statement: Statement) => {
      if (statement.source.includes(REMOVED_LOOKUP)) lookups += 1;
    };
    expect(withHook(count, () => keysOf(reader, 10))).toContain('d11');
    const first = lookups;
    expect(first).toBeGreaterThan(0);
    expect(withHook(count, () => keysOf(reader, 10))).toContain('d11');
    expect(lookups).toBe(first);
  });

  it('reads the removed rows in one scan, not a look-up a posting, when a list is decoded whole', () => {
    const { apply, dir } = stores();
    apply([record('d3', null), record('d7', null)]);
    const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
    closers.push(() => void db.close());
    const [termId, tableId, df] = db
      .prepare('SELECT id, table_id, df FROM topk_terms WHERE term = ?')
      .raw()
      .get(WORD) as number[];
    const removed = new RemovedRows(db).of(tableId);
    const stream = new TermStream(prepareStreamStatements(db), termId, df, 1, 2, null, removed);
    let lookups = 0;
    const whole = withHook(
      (statement) => {
        if (statement.source.includes(REMOVED_LOOKUP)) lookups += 1;
      },
      () => {
        // A row's frequency asked in block after block, until the stream decodes its whole list.
        for (let offset = 0; stream.wholeList() === null && offset < 2 * SEGMENT_DOCS; offset++) {
          stream.frequencyIn(rowOf(0, offset), 2);
        }
        return stream.wholeList();
      },
    );
    expect(whole?.size).toBe(2 * SEGMENT_DOCS - 2);
    expect(whole?.has(rowOf(0, 3))).toBe(false);
    expect(lookups).toBe(0);
  });
});
