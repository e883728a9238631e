// Proves a serve-node never opens a search store of an older layout (FTS5 tables per partition,
// before one table per collection): it starts new stores, says why in its status, replays the log
// and serves every document and search hit again; and that layout 4 (before table_builds) is
// upgraded in place, without a replay, as are layouts 6 (top-k postings naming their term by text),
// 7 (a B-tree entry a posting), 8 (every term's document frequency, not only the listed
// terms'), 9 (LMDB documents in one key space a collection: read as space 0) and 10 (a list
// in one set of blocks, not in segments)
// (test/integration/serve-node-partitions.test.ts
// covers stores holding partitions the node no longer hosts).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { SEARCH_FILE } from '../../serve-node/search-store.js';
import { logAndServeNodes } from '../harness/index.js';

const nodes = logAndServeNodes('store-layout');
const layoutFour = logAndServeNodes('store-layout-4');
const layoutSix = logAndServeNodes('store-layout-6');
const layoutSeven = logAndServeNodes('store-layout-7');
const layoutEight = logAndServeNodes('store-layout-8');
const layoutNine = logAndServeNodes('store-layout-9');
const layoutTen = logAndServeNodes('store-layout-10');
/** Every term listed, so the upgraded lists show each word's document frequency. */
const everyTermListed = { limits: { ...DEFAULT_LIMITS, searchTopkListedDfMin: 1 } };

const storeDirs = () => nodes.storeDirs();

/** The layout-0 schema, as the serve-node of stop 8 wrote it. */
function writeLayoutZero(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
  const db = new Database(file);
  db.exec(`
    CREATE TABLE checkpoints (partition INTEGER PRIMARY KEY, applied INTEGER NOT NULL);
    CREATE TABLE fts_tables (id INTEGER PRIMARY KEY, partition INTEGER NOT NULL,
      collection TEXT NOT NULL, settings TEXT NOT NULL, UNIQUE (partition, collection));
    INSERT INTO checkpoints VALUES (0, 2), (1, 2);
  `);
  db.close();
}

/** A store of four documents written by this layout, its serve-node stopped. */
async function stoppedStore(fixture: typeof layoutFour): Promise<{ first: string; file: string }> {
  const log = await fixture.startLog({ partitions: 2 });
  const waitFor = await fixture.appendFourWords(log);
  const serve = await fixture.startServe(everyTermListed);
  await serve.scan('c', { waitFor, waitMs: 10_000 });
  await fixture.serveNode!.stop();
  const [first] = fixture.storeDirs();
  return { first, file: path.join(first, SEARCH_FILE) };
}

/** The store opened again by a serve-node, which upgraded it in place to layout 11. */
async function reopenedInPlace(
  fixture: typeof layoutFour,
  first: string,
  file: string,
  options: Parameters<typeof fixture.startServe>[0] = everyTermListed,
): Promise<Database.Database> {
  const serve = await fixture.startServe(options);
  expect((await serve.status()).lastRebuild).toBeUndefined();
  expect(fixture.storeDirs()).toEqual([first]);
  expect((await serve.search('c', { q: 'word2' })).hits.map((hit) => hit.key)).toEqual(['c']);
  const upgraded = new Database(file, { readonly: true });
  expect(upgraded.pragma('user_version', { simple: true })).toBe(11);
  return upgraded;
}

/**
 * The lists of layout 11, built from the FTS5 table: its terms (not the stale one the old lists
 * held), segments of blocks of postings, and no table of an earlier layout's.
 */
function expectListsRebuilt(db: Database.Database): void {
  const terms = db.prepare('SELECT term, df FROM topk_terms ORDER BY term').raw().all();
  expect(terms).toContainEqual(['word2', 1]);
  expect(terms).not.toContainEqual(['stale', 9]);
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE name GLOB 'topk_*'").pluck();
  expect(tables.all()).not.toContain('topk_postings');
  const columns = db.prepare("SELECT name FROM pragma_table_info('topk_blocks')").pluck();
  expect(columns.all()).toEqual(['term_id', 'segment', 'tf', 'len', 'tie', 'postings']);
  const segments = db.prepare('SELECT count(*) FROM topk_segments').pluck().get();
  expect(segments).toBe(terms.length);
}

/** Layout 8 to 10's blocks: a term's list in one set, rewritten where a posting lands. */
const LAYOUT_TEN_BLOCKS = `
  DROP TABLE topk_blocks; DROP TABLE topk_segments; DROP TABLE topk_removed;
  CREATE TABLE topk_blocks (
    term_id INTEGER NOT NULL, tf REAL NOT NULL, len INTEGER NOT NULL, tie INTEGER NOT NULL,
    postings BLOB NOT NULL, PRIMARY KEY (term_id, tf, len, tie)) WITHOUT ROWID;
`;

describe('serve-node search store layout', () => {
  it('opens a layout-4 store (no table_builds, no top-k lists) in place and upgrades it to layout 11', async () => {
    const { first, file } = await stoppedStore(layoutFour);
    const old = new Database(file);
    old.exec(
      'DROP TABLE table_builds; DROP TABLE topk_settings; DROP TABLE topk_terms; ' +
        'DROP TABLE topk_blocks; DROP TABLE topk_segments; DROP TABLE topk_removed; ' +
        'PRAGMA user_version = 4;',
    );
    old.close();

    const upgraded = await reopenedInPlace(layoutFour, first, file);
    expect(upgraded.prepare('SELECT count(*) FROM table_builds').pluck().get()).toBe(0);
    // The lists' document frequencies, built from the FTS5 table on opening.
    const df = upgraded.prepare("SELECT df FROM topk_terms WHERE term = 'word2'").pluck();
    expect(df.all()).toEqual([1]);
    upgraded.close();
  });

  it('opens a layout-6 store (the term text in every posting) in place and lists its terms by id', async () => {
    const { first, file } = await stoppedStore(layoutSix);
    const old = new Database(file);
    // Layout 6's lists, holding a term FTS5 does not: kept, the upgrade would show it.
    old.exec(`
      DROP TABLE topk_blocks; DROP TABLE topk_segments; DROP TABLE topk_removed;
      DROP TABLE topk_terms;
      CREATE TABLE topk_terms (table_id INTEGER NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
        PRIMARY KEY (table_id, term)) WITHOUT ROWID;
      CREATE TABLE topk_postings (table_id INTEGER NOT NULL, term TEXT NOT NULL, tf REAL NOT NULL,
        len INTEGER NOT NULL, partition INTEGER NOT NULL, row INTEGER NOT NULL,
        PRIMARY KEY (table_id, term, tf, len, partition, row)) WITHOUT ROWID;
      INSERT INTO topk_terms VALUES (1, 'stale', 9);
      INSERT INTO topk_postings VALUES (1, 'stale', 1, 1, 0, 0);
      PRAGMA user_version = 6;
    `);
    old.close();

    const upgraded = await reopenedInPlace(layoutSix, first, file);
    expectListsRebuilt(upgraded);
    upgraded.close();
  });

  it('opens a layout-7 store (a B-tree entry a posting) in place and packs its lists in blocks', async () => {
    const { first, file } = await stoppedStore(layoutSeven);
    const old = new Database(file);
    // Layout 7's lists, holding a term FTS5 does not: kept, the upgrade would show it.
    old.exec(`
      DROP TABLE topk_blocks; DROP TABLE topk_segments; DROP TABLE topk_removed;
      DELETE FROM topk_terms;
      CREATE TABLE topk_postings (term_id INTEGER NOT NULL, tf REAL NOT NULL, len INTEGER NOT NULL,
        partition INTEGER NOT NULL, row INTEGER NOT NULL,
        PRIMARY KEY (term_id, tf, len, partition, row)) WITHOUT ROWID;
      INSERT INTO topk_terms (id, table_id, term, df) VALUES (1, 1, 'stale', 9);
      INSERT INTO topk_postings VALUES (1, 1, 1, 0, 0);
      PRAGMA user_version = 7;
    `);
    old.close();

    const upgraded = await reopenedInPlace(layoutSeven, first, file);
    expectListsRebuilt(upgraded);
    upgraded.close();
  });

  it('opens a layout-8 store (every term in topk_terms) in place and keeps the listed terms only', async () => {
    const { first, file } = await stoppedStore(layoutEight);
    const old = new Database(file);
    // Layout 8 held every term: at the default threshold, none of the four words is listed.
    old.exec(`
      UPDATE topk_settings SET listed_df_min = ${DEFAULT_LIMITS.searchTopkListedDfMin};
      ${LAYOUT_TEN_BLOCKS} DELETE FROM topk_terms;
      INSERT INTO topk_terms (table_id, term, df)
        SELECT t.id, 'word' || n.value, 1 FROM fts_tables t, json_each('[0, 1, 2, 3]') AS n;
      PRAGMA user_version = 8;
    `);
    expect(old.prepare('SELECT count(*) FROM topk_terms').pluck().get()).toBe(4);
    old.close();

    const upgraded = await reopenedInPlace(layoutEight, first, file, {});
    expect(upgraded.prepare('SELECT count(*) FROM topk_terms').pluck().get()).toBe(0);
    upgraded.close();
  });

  it('opens a layout-9 store (LMDB documents in one key space a collection) in place, as space 0', async () => {
    const { first, file } = await stoppedStore(layoutNine);
    const old = new Database(file);
    old.exec('PRAGMA user_version = 9;');
    old.close();

    const upgraded = await reopenedInPlace(layoutNine, first, file);
    upgraded.close();
    const scan = await layoutNine.serveNode!.client.scan('c', { limit: 10 });
    expect(scan.items.map((item) => item.key)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('opens a layout-10 store (a list in one set of blocks) in place and builds it in segments', async () => {
    const { first, file } = await stoppedStore(layoutTen);
    const old = new Database(file);
    // Layout 10's lists, holding a term FTS5 does not: kept, the upgrade would show it.
    old.exec(`
      ${LAYOUT_TEN_BLOCKS} DELETE FROM topk_terms;
      INSERT INTO topk_terms (id, table_id, term, df) VALUES (1, 1, 'stale', 9);
      INSERT INTO topk_blocks VALUES (1, 1, 1, 0, x'010000');
      PRAGMA user_version = 10;
    `);
    old.close();

    const upgraded = await reopenedInPlace(layoutTen, first, file);
    expectListsRebuilt(upgraded);
    upgraded.close();
  });

  it('replays the log into new stores when it finds an older layout', async () => {
    const log = await nodes.startLog({ partitions: 2 });
    const waitFor = await nodes.appendFourWords(log);
    let serve = await nodes.startServe();
    await serve.scan('c', { waitFor, waitMs: 10_000 });
    await nodes.serveNode!.stop();
    const [first] = storeDirs();
    writeLayoutZero(path.join(first, SEARCH_FILE));

    serve = await nodes.startServe();
    expect((await serve.status()).lastRebuild?.reason).toMatch(/search store has layout 0/);
    expect(storeDirs()).toHaveLength(1);
    expect(storeDirs()[0]).not.toBe(first);
    const scan = await serve.scan('c', { waitFor, waitMs: 10_000 });
    expect(scan.items.map((item) => item.key)).toEqual(['a', 'b', 'c', 'd']);
    expect((await serve.search('c', { q: 'word2' })).hits.map((hit) => hit.key)).toEqual(['c']);
  });
});
