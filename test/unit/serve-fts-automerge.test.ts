// Proves FTS5's automerge setting of the search tables (ServeNodeLimits.ftsAutomergeSegments,
// serve-node/fts-table.ts): the writer sets it on every table it makes and on tables that hold
// another value when it opens them; a read thread's connection never writes it; a value FTS5
// would not merge by is refused at open; and the segments it leaves change no answer (hits,
// exact scores, totals, filters, facets equal to a table merged by FTS5's default of 4). Real
// replicas (LMDB and SQLite in temp dirs), fed through their apply path.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import { SEARCH_FILE, SearchStore } from '../../serve-node/search-store.js';
import { ftsSegments, ftsTableOf } from '../harness/replica-feed.js';
import { answers, limits, load, PARTITIONS } from '../harness/segment-corpus.js';

const LISTS = { topkListedDfMin: DEFAULT_LIMITS.searchTopkListedDfMin };

const dirs: string[] = [];
const replicas: Replica[] = [];
afterEach(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function openReplica(automergeSegments: number, dir = mkdtempSync(join(tmpdir(), 'automerge-'))) {
  if (!dirs.includes(dir)) dirs.push(dir);
  const replica = new Replica(dir, { ...LISTS, automergeSegments });
  replicas.push(replica);
  return replica;
}

/** The table's `automerge` as FTS5 stored it, read by a connection of its own; null: unset. */
function storedAutomerge(dir: string, table: string): number | null {
  const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
  try {
    const value = db.prepare(`SELECT v FROM ${table}_config WHERE k = 'automerge'`).pluck().get();
    return (value as number | undefined) ?? null;
  } finally {
    db.close();
  }
}

describe("FTS5's automerge of the search tables", () => {
  it('is set on the tables the writer makes, and leaves the answers of the default', () => {
    const eight = openReplica(8);
    const four = openReplica(4);
    load(eight, 2_000, 10);
    load(four, 2_000, 10);
    expect(storedAutomerge(eight.dir, ftsTableOf(eight, 'docs'))).toBe(8);
    expect(storedAutomerge(four.dir, ftsTableOf(four, 'docs'))).toBe(4);
    // Merged apart: the segments differ, the answers do not.
    expect(ftsSegments(eight, 'docs')).toBeGreaterThan(ftsSegments(four, 'docs'));
    expect(answers(eight)).toEqual(answers(four));
  });

  it("is set on an existing table by the writer that opens it, never by a reader's connection", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'automerge-'));
    const first = openReplica(4, dir);
    load(first, 50, 10);
    const table = ftsTableOf(first, 'docs');
    await first.close();
    replicas.splice(replicas.indexOf(first), 1);

    const reader = new SearchStore(join(dir, SEARCH_FILE), { ...LISTS, reader: true });
    reader.search('docs', PARTITIONS, parseQuery('apple', limits), 10, 10_000);
    reader.close();
    expect(storedAutomerge(dir, table)).toBe(4);

    openReplica(6, dir);
    expect(storedAutomerge(dir, table)).toBe(6);
  });

  it('is refused at open where FTS5 would not merge by it', () => {
    for (const automergeSegments of [1, 16, 2.5]) {
      const dir = mkdtempSync(join(tmpdir(), 'automerge-'));
      dirs.push(dir);
      expect(
        () => new SearchStore(join(dir, SEARCH_FILE), { ...LISTS, automergeSegments }),
      ).toThrow(/automerge is an integer from 2 to 15/);
    }
  });
});
