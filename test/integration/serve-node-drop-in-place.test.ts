// Proves a collection's drop removes it from each serve-node in place, without a replay: the
// drop answers once reads answer nothing of it, its documents deleted after (status `dropping`,
// then `lastDrop`, after the answer); reads of
// another collection answer all of its documents throughout and right after, no serve-node
// rebuilds, and each node then answers exactly as a node rebuilt from the log without the topic
// (documents, scores, facets, applied offsets), its retired rows deleted; a drop that a restart
// interrupts after its first step is finished at start (then the collection created again under
// the name is tailed from its start), with the same result, and one interrupted between its first
// two steps takes the second again (no table of it left, the name created again tailed by the
// first listing); searches on read threads racing the drop answer, none from a dropped table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { encodeBatch } from '../../shared/batch-codec.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { createLogger } from '../../shared/logger.js';
import { Replica } from '../../serve-node/replica.js';
import { SEARCH_FILE } from '../../serve-node/search-store.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { serveContents, sleep, spawnNode, type ContentsQuery } from '../harness/index.js';
import {
  call,
  serveNodeOn,
  startCluster,
  startLog,
  tempDir,
  type ClusterFixture,
} from './gateway-harness.js';

const WAIT_MS_MAX = 30_000;
const silent = createLogger('test', 'silent');
const POLL_MS = 50;
const BIG_DOCS = 3_000;
const KEPT_DOCS = 300;
const WORDS = 'river stone cloud maple ember quartz harbor lantern meadow falcon'.split(' ');
const COLORS = ['red', 'green', 'blue'];
const docOf = (tag: string, i: number) => ({
  title: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${tag}`,
  color: COLORS[i % COLORS.length],
  n: i,
});
const QUERIES: ContentsQuery[] = [
  { collection: 'kept', q: 'river', facets: 'color' },
  { collection: 'kept', q: 'maple stone', filter: 'color = red' },
  { collection: 'big', q: 'river' },
];
/** The shared tables whose rows of a retired table are deleted in background steps. */
const SHARED_TABLES = ['doc_rows', 'field_values', 'field_flags', 'sort_values', 'topk_terms'];

let cluster: ClusterFixture;

beforeAll(async () => {
  cluster = await startCluster({
    partitions: 2,
    // Small steps, so the drop of the big collection takes many, with reads between them.
    serve: { dropStepDocsMax: 7, topicRefreshMs: 100 },
  });
});
afterAll(() => cluster.stop());

async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < WAIT_MS_MAX; waited += POLL_MS) {
    if (await done()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

/** A node of its own on `logUrl`, hosting `partitions`, replaying the log into empty stores. */
async function rebuiltNode(logUrl: string, partitions: number[]): Promise<RunningServeNode> {
  const dir = await tempDir('rebuilt');
  const node = await serveNodeOn(logUrl, dir, partitions);
  // Its stores go with it: each run of these tests left one directory a node behind.
  return {
    ...node,
    stop: async () => {
      await node.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Both nodes caught up to the same offsets of everything they tail. */
async function sameApplied(a: RunningServeNode, b: RunningServeNode): Promise<void> {
  const applied = async (node: RunningServeNode) =>
    JSON.stringify(
      (await node.client.status()).partitions
        .map(({ topic, partition, applied }) => `${topic}/${partition}:${applied}`)
        .sort(),
    );
  await until('both nodes applied the same', async () => (await applied(a)) === (await applied(b)));
}

/** Rows the shared tables hold of tables no collection has: none once retired rows are gone. */
function leftoverRows(node: RunningServeNode): number {
  const db = new Database(join(node.node.storesDir(), SEARCH_FILE), { readonly: true });
  try {
    return SHARED_TABLES.reduce(
      (sum, table) =>
        sum +
        (db
          .prepare(
            `SELECT count(*) FROM ${table} WHERE table_id NOT IN (SELECT id FROM fts_tables)`,
          )
          .pluck()
          .get() as number),
      0,
    );
  } finally {
    db.close();
  }
}

/**
 * Stops the node and leaves its stores as a kill right after a drop's first transaction does: the
 * mark, and LMDB's checkpoints gone while the search store still holds the collection.
 */
async function stopAfterFirstDropStep(serve: RunningServeNode, collection: string): Promise<void> {
  const stores = serve.node.storesDir();
  await serve.stop();
  const replica = new Replica(stores);
  replica.docs.markDropping(collection);
  await replica.close();
}

/**
 * Starts a node on the stores in `dir` and one rebuilt from the log, waits until the first has
 * finished its drop and both have applied the same, runs `check`, and stops both.
 */
async function afterRestart(
  logUrl: string,
  dir: string,
  check: (restarted: RunningServeNode, rebuilt: RunningServeNode) => Promise<void>,
): Promise<void> {
  const restarted = await serveNodeOn(logUrl, dir);
  const rebuilt = await rebuiltNode(logUrl, [0]);
  try {
    await until(
      'the drop finished',
      async () => (await restarted.client.status()).lastDrop !== undefined,
    );
    await sameApplied(restarted, rebuilt);
    await check(restarted, rebuilt);
  } finally {
    await rebuilt.stop();
    await restarted.stop();
  }
}

describe('dropping a collection in place', () => {
  it('reads of another collection answer all of it throughout; each node equals one rebuilt without the topic', async () => {
    const { url } = cluster;
    for (const [collection, settings] of [
      ['kept', { searchable: ['title'], filterable: ['color'] }],
      ['big', { searchable: ['title'], filterable: ['color'], sortable: ['n'] }],
    ] as const) {
      expect(
        (await call(url, 'PUT', `/v1/collections/${collection}/settings`, settings)).status,
      ).toBe(200);
    }
    const bulk = async (collection: string, count: number) => {
      const items = Array.from({ length: count }, (_, i) => ({
        key: `${collection}-${i}`,
        value: docOf(collection, i),
      }));
      const answer = await call(
        url,
        'POST',
        `/v1/collections/${collection}/docs?wait=applied`,
        items,
      );
      expect(answer.status).toBe(200);
    };
    await bulk('big', BIG_DOCS);
    await bulk('kept', KEPT_DOCS);
    // Updates and deletes, so a document's offset is not its first write's.
    for (const i of [3, 4]) {
      await call(url, 'PUT', `/v1/collections/kept/docs/kept-${i}`, { title: 'harbor again' });
    }
    const last = await call(url, 'DELETE', '/v1/collections/kept/docs/kept-5?wait=applied');
    expect(last.status).toBe(200);
    const keptDocs = KEPT_DOCS - 1;

    const readKept = async () =>
      (await call(url, 'GET', '/v1/collections/kept/docs?consistency=eventual&limit=1000')).body
        .items.length as number;
    expect(await readKept()).toBe(keptDocs);
    let dropping = true;
    const during: number[] = [];
    const reader = (async () => {
      while (dropping) during.push(await readKept());
    })();
    // Eventual reads of the collection being dropped, on each node: once its checkpoints are gone
    // (applied 0), the documents its later steps have yet to delete must not be answered.
    const bigReads: Array<{ applied: number; found: number }> = [];
    const bigReader = (async () => {
      for (let i = 0; dropping && i < BIG_DOCS; i++) {
        await sleep(POLL_MS);
        for (const serve of cluster.serves) {
          const scanned = await serve.client.scan('big', { limit: 10 });
          const got = await serve.client.get('big', `big-${i}`);
          for (const { applied, found } of [
            { applied: scanned.applied, found: scanned.items.length },
            { applied: got.applied, found: got.doc === null ? 0 : 1 },
          ]) {
            bigReads.push({ applied: Object.values(applied).reduce((a, b) => a + b, 0), found });
          }
        }
      }
    })();
    const drop = await call(url, 'DELETE', '/v1/collections/big');
    const answeredAtMs = Date.now();
    expect(drop.status).toBe(200);
    // Right after the answer too: nothing is being replayed.
    expect(await readKept()).toBe(keptDocs);
    // The answer comes once reads answer nothing of it; its documents go after, in the background.
    await until('each node done with the drop', async () => {
      const statuses = await Promise.all(cluster.serves.map((serve) => serve.client.status()));
      return statuses.every((status) => (status.dropping ?? []).length === 0);
    });
    dropping = false;
    await reader;
    await bigReader;
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((count) => count === keptDocs)).toBe(true);
    const afterMark = bigReads.filter((read) => read.applied === 0);
    expect(afterMark.length).toBeGreaterThan(0);
    expect(afterMark.filter((read) => read.found > 0)).toEqual([]);

    for (const serve of cluster.serves) {
      const status = await serve.client.status();
      expect(status.lastRebuild).toBeUndefined();
      expect(status.lastDrop).toMatchObject({ collection: 'big' });
      expect(status.lastDrop!.atMs).toBeGreaterThanOrEqual(answeredAtMs);
      expect(status.dropping).toEqual([]);
      // A read of the dropped collection finds no table to answer from, and no error.
      expect(await serve.client.search('big', { q: 'river' })).toMatchObject({
        hits: [],
        total: 0,
      });
    }

    for (const [i, serve] of cluster.serves.entries()) {
      const rebuilt = await rebuiltNode(cluster.log.url, [...serve.node.hosted]);
      try {
        await sameApplied(serve, rebuilt);
        const collections = ['kept', 'big'];
        expect(await serveContents(serve.client, collections, QUERIES), `node ${i}`).toEqual(
          await serveContents(rebuilt.client, collections, QUERIES),
        );
      } finally {
        await rebuilt.stop();
      }
      await until('the retired rows deleted', async () => leftoverRows(serve) === 0);
    }

    // Declared again under the name, it starts empty.
    await bulk('big', 1);
    const again = await call(url, 'GET', '/v1/collections/big/docs?consistency=strong');
    expect(again.body.items.map((item: { key: string }) => item.key)).toEqual(['big-0']);
  });

  it('a drop a restart interrupted after its first step is finished at start', async () => {
    const log = await startLog(1);
    const dir = await tempDir('interrupted');
    const batchOf = (tag: string, count: number) =>
      encodeBatch(
        Array.from({ length: count }, (_, i) => ({
          key: `${tag}${i}`,
          value: Buffer.from(JSON.stringify(docOf(tag, i))),
          timestampMs: 1_800_000_000_000,
        })),
      );
    const settings = { searchable: ['title'], filterable: ['color'] };
    try {
      await log.client.append(
        SETTINGS_TOPIC,
        0,
        encodeBatch(
          ['big', 'kept'].map((key) => ({
            key,
            value: Buffer.from(JSON.stringify(settings)),
            timestampMs: 1_800_000_000_000,
          })),
        ),
      );
      await log.client.append('big', 0, batchOf('big', 500));
      await log.client.append('kept', 0, batchOf('kept', 50));
      const serve = await serveNodeOn(log.url, dir);
      const waitFor = { waitFor: { 0: 49 }, waitMs: WAIT_MS_MAX };
      await serve.client.scan('kept', waitFor);
      expect(
        (await serve.client.scan('big', { waitFor: { 0: 499 }, waitMs: WAIT_MS_MAX, limit: 1000 }))
          .items,
      ).toHaveLength(500);
      await stopAfterFirstDropStep(serve, 'big');
      // Dropped in the log and created again meanwhile: the log alone cannot tell the node.
      await log.client.deleteTopic('big');
      await log.client.append('big', 0, batchOf('again', 20));
      await afterRestart(log.url, dir, async (restarted, rebuilt) => {
        const status = await restarted.client.status();
        expect(status.lastDrop).toMatchObject({ collection: 'big' });
        expect(status.lastRebuild).toBeUndefined();
        const again = await restarted.client.scan('big', {
          waitFor: { 0: 19 },
          waitMs: WAIT_MS_MAX,
        });
        expect(again.items.map((item) => item.key).sort()).toEqual(
          Array.from({ length: 20 }, (_, i) => `again${i}`).sort(),
        );
        const collections = ['kept', 'big'];
        expect(await serveContents(restarted.client, collections, QUERIES)).toEqual(
          await serveContents(rebuilt.client, collections, QUERIES),
        );
      });
    } finally {
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a drop a restart interrupted between its first two steps, the name not created again, leaves no table', async () => {
    const log = await startLog(1);
    const dir = await tempDir('interrupted-gone');
    const batch = encodeBatch(
      Array.from({ length: 50 }, (_, i) => ({
        key: `gone${i}`,
        value: Buffer.from(JSON.stringify(docOf('gone', i))),
        timestampMs: 1_800_000_000_000,
      })),
    );
    try {
      await log.client.append('gone', 0, batch);
      await log.client.append('kept', 0, batch);
      const serve = await serveNodeOn(log.url, dir);
      const waitFor = { waitFor: { 0: 49 }, waitMs: WAIT_MS_MAX };
      await serve.client.scan('kept', waitFor);
      expect((await serve.client.search('gone', { q: 'river', ...waitFor })).total).toBeGreaterThan(
        0,
      );
      await stopAfterFirstDropStep(serve, 'gone');
      await log.client.deleteTopic('gone');
      await afterRestart(log.url, dir, async (restarted, rebuilt) => {
        const queries = ['gone', 'kept'].map((collection) => ({ collection, q: 'river' }));
        expect(await serveContents(restarted.client, ['kept', 'gone'], queries)).toEqual(
          await serveContents(rebuilt.client, ['kept', 'gone'], queries),
        );
        expect(await restarted.client.search('gone', { q: 'river' })).toMatchObject({
          hits: [],
          total: 0,
        });
      });
    } finally {
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a drop a restart interrupted between its first two steps, the name created again, is tailed by the first listing', async () => {
    const log = await startLog(1);
    const dir = await tempDir('interrupted-again');
    const batchOf = (tag: string) =>
      encodeBatch(
        Array.from({ length: 20 }, (_, i) => ({
          key: `${tag}${i}`,
          value: Buffer.from(JSON.stringify(docOf(tag, i))),
          timestampMs: 1_800_000_000_000,
        })),
      );
    try {
      await log.client.append('again', 0, batchOf('old'));
      const serve = await serveNodeOn(log.url, dir);
      await serve.client.scan('again', { waitFor: { 0: 19 }, waitMs: WAIT_MS_MAX });
      await stopAfterFirstDropStep(serve, 'again');
      await log.client.deleteTopic('again');
      await log.client.append('again', 0, batchOf('new'));
      // No later listing within the test, and no read of the collection (a read lists again).
      const restarted = await startServeNode({
        dataDir: dir,
        port: 0,
        logUrls: [log.url],
        partitions: [0],
        logger: silent,
        limits: { topicRefreshMs: 10 * WAIT_MS_MAX },
      });
      try {
        await until(
          'the drop finished',
          async () => (await restarted.client.status()).lastDrop !== undefined,
        );
        const tailed = (await restarted.client.status()).partitions.map((tp) => tp.topic);
        expect(tailed).toContain('again');
      } finally {
        await restarted.stop();
      }
    } finally {
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('searches on read threads racing the drop answer, none from a dropped table', async () => {
    const log = await startLog(1);
    const dir = await tempDir('race');
    const args = ['--data', dir, '--port', '0', '--log', log.url, '--read-threads', '2'];
    const serve = await spawnNode('serve-node', [...args, '--drop-step-docs-max', '50']);
    const batch = encodeBatch(
      Array.from({ length: BIG_DOCS }, (_, i) => ({
        key: `big${i}`,
        value: Buffer.from(JSON.stringify(docOf('big', i))),
        timestampMs: 1_800_000_000_000,
      })),
    );
    try {
      await log.client.append('big', 0, batch);
      const client = new HttpServeClient(serve.url);
      const waitFor = { 0: BIG_DOCS - 1 };
      await client.search('big', { q: 'river', waitFor, waitMs: WAIT_MS_MAX });
      let dropping = true;
      const failures: string[] = [];
      let searches = 0;
      const searcher = async () => {
        while (dropping) {
          searches += 1;
          await client.search('big', { q: 'river maple', limit: 5 }).catch((error: Error) => {
            failures.push(error.message);
          });
        }
      };
      const searchers = [searcher(), searcher(), searcher()];
      await log.client.deleteTopic('big');
      await client.dropCollection('big');
      dropping = false;
      await Promise.all(searchers);
      expect(failures).toEqual([]);
      expect(searches).toBeGreaterThan(0);
      expect(await client.search('big', { q: 'river' })).toMatchObject({ hits: [], total: 0 });
      client.close();
    } finally {
      await serve.stop();
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
