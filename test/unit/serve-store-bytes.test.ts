// Proves a serve-node's bytes per collection add up to its stores: each collection's LMDB share
// sums to the documents database's pages, and its SQLite bytes (its FTS5 tables, and the shared
// tables by its documents) to every B-tree page dbstat counts; a larger collection has more of
// each, and a collection with no document left keeps only its own (empty) FTS5 tables.
import { afterEach, describe, expect, it } from 'vitest';
import { Replica } from '../../serve-node/replica.js';
import { ReplicaFeed, replicaSqlite } from '../harness/replica-feed.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';

let dir: TempDir | undefined;
let replica: Replica | undefined;
afterEach(async () => {
  await replica?.close();
  dir?.cleanup();
});

const words = ['harbor', 'lantern', 'meadow', 'quartz', 'river', 'stone', 'maple', 'ember'];
const text = (i: number, length: number) =>
  Array.from({ length }, (_, j) => `${words[(i * 7 + j) % words.length]}${j % 50}`).join(' ');

describe("a serve-node's bytes per collection", () => {
  it('add up to the stores, larger for the larger collection', () => {
    dir = tempDir('store-bytes');
    replica = new Replica(dir.path);
    const feed = new ReplicaFeed(() => replica!);
    feed.settings('wide', { filterable: ['n'] });
    for (let batch = 0; batch < 10; batch++) {
      feed.apply(
        'wide',
        batch % 4,
        Array.from({ length: 100 }, (_, i) => [`w${batch}-${i}`, { n: i, body: text(i, 150) }]),
      );
    }
    feed.apply('narrow', 0, [['only', { body: text(1, 20) }]]);
    feed.apply('gone', 1, [['g1', { body: text(2, 20) }]]);
    feed.apply('gone', 1, [['g1', null]]);

    const lmdb = replica.docs.collectionBytes();
    const sqlite = replica.search.collectionBytes();
    expect(lmdb.get('wide')).toBeGreaterThan(1000 * 150 * 5);
    expect(lmdb.get('wide')).toBeGreaterThan(100 * lmdb.get('narrow')!);
    // LMDB holds no key of a collection without documents.
    expect([...lmdb.keys()].sort()).toEqual(['narrow', 'wide']);
    expect(sqlite.get('wide')).toBeGreaterThan(10 * sqlite.get('narrow')!);

    const docsStats = (
      replica.docs as unknown as { docs: { getStats(): Record<string, number> } }
    ).docs.getStats();
    const docsBytes =
      (docsStats.treeBranchPageCount + docsStats.treeLeafPageCount + docsStats.overflowPages) *
      docsStats.pageSize;
    const lmdbSum = [...lmdb.values()].reduce((a, b) => a + b, 0);
    expect(Math.abs(lmdbSum - docsBytes)).toBeLessThanOrEqual(lmdb.size);

    const db = replicaSqlite(replica);
    const btreeBytes = db
      .prepare('SELECT sum(pgsize) FROM dbstat WHERE aggregate = TRUE')
      .pluck()
      .get() as number;
    const sqliteSum = [...sqlite.values()].reduce((a, b) => a + b, 0);
    // Each collection's rounding, at most half a byte each, is all that may differ.
    expect(Math.abs(sqliteSum - btreeBytes)).toBeLessThanOrEqual(sqlite.size);
    // A collection whose documents are all deleted keeps its FTS5 tables' pages and no share.
    const goneId = db
      .prepare("SELECT table_id FROM collection_tables WHERE collection = 'gone'")
      .pluck()
      .get() as number;
    const goneTables = db
      .prepare(
        'SELECT sum(pgsize) FROM dbstat WHERE aggregate = TRUE AND (name = ? OR name GLOB ?)',
      )
      .pluck()
      .get(`fts_${goneId}`, `fts_${goneId}_*`) as number;
    expect(sqlite.get('gone')).toBe(goneTables);
  });
});
