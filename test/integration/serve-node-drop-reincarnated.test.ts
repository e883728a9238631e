// Proves a collection dropped and created again while the serve-node still deletes the old one's
// documents takes writes and serves its own reads at once: a token read of the new collection
// answers within a small bound with only its documents (an old key 404, scans and searches
// without old documents) while status still lists the old deletion; after a kill -9 amid that
// deletion the old documents still never show, the deletion resumes and ends, the new documents
// stay, LMDB holds only them, and the node equals one rebuilt from the log (invariant 5).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { open } from 'lmdb';
import { encodeBatch } from '../../shared/batch-codec.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { startGateway, type GatewayHandle } from '../../gateway/index.js';
import { DOCS_FILE } from '../../serve-node/doc-store.js';
import {
  freePort,
  serveContents,
  sleep,
  spawnNode,
  type ContentsQuery,
  type SpawnedNode,
} from '../harness/index.js';
import {
  call,
  serveNodeOn,
  silent,
  startLog,
  tempDir,
  type LogFixture,
} from './gateway-harness.js';

/** Enough that deleting them a document a step (--drop-step-docs-max 1) takes seconds. */
const OLD_DOCS = 40_000;
const OLD_BATCH_DOCS = 5_000;
const NEW_DOCS = 20;
/** A token read of the new collection answers within this, however long the old deletion. */
const READ_MS_MAX = 3_000;
const WAIT_MS_MAX = 30_000;
const POLL_MS = 50;
const QUERIES: ContentsQuery[] = [
  { collection: 'big', q: 'river' },
  { collection: 'big', q: 'fresh' },
];

let log: LogFixture;
let dir: string;
let port: number;
let serve: SpawnedNode;
let gateway: GatewayHandle;

const startServe = () =>
  spawnNode('serve-node', [
    '--data',
    dir,
    '--port',
    String(port),
    '--log',
    log.url,
    '--drop-step-docs-max',
    '1',
    '--topic-refresh-ms',
    '100',
  ]);

beforeAll(async () => {
  log = await startLog(1);
  dir = await tempDir('reincarnated');
  port = await freePort();
  serve = await startServe();
  gateway = await startGateway(
    { logUrls: [log.url], serveUrls: [serve.url], topologyRefreshMs: 200 },
    { logger: silent },
  );
});
afterAll(async () => {
  await gateway?.stop();
  await serve?.stop();
  await log?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < WAIT_MS_MAX; waited += POLL_MS) {
    if (await done()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

const serveClient = () => new HttpServeClient(serve.url);

async function dropping(): Promise<string[]> {
  const client = serveClient();
  try {
    return (await client.status()).dropping ?? [];
  } finally {
    client.close();
  }
}

/** Reads of `big` with the token, each timed: only the new documents, the old nowhere. */
async function readsOfNewOnly(token: string, newKeys: string[]): Promise<void> {
  const headers = { 'tailbase-token': token };
  const timed = async (path: string) => {
    const startedMs = performance.now();
    const answer = await call(
      url(),
      'GET',
      `${path}${path.includes('?') ? '&' : '?'}wait_ms=${READ_MS_MAX}`,
      undefined,
      headers,
    );
    return { ...answer, ms: performance.now() - startedMs };
  };
  const fresh = await timed('/v1/collections/big/docs/new-0');
  expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
  expect(fresh.ms).toBeLessThan(READ_MS_MAX);
  expect(fresh.body.value).toEqual({ title: 'fresh start 0' });
  // A key of both incarnations answers the new one's document.
  const shared = await timed('/v1/collections/big/docs/old-1');
  expect(shared.status, JSON.stringify(shared.body)).toBe(200);
  expect(shared.body.value).toEqual({ title: 'fresh again' });
  const old = await timed('/v1/collections/big/docs/old-2');
  expect(old.status, JSON.stringify(old.body)).toBe(404);
  const scan = await timed('/v1/collections/big/docs?limit=1000');
  expect(scan.status, JSON.stringify(scan.body)).toBe(200);
  expect(scan.body.items.map((item: { key: string }) => item.key).sort()).toEqual(newKeys);
  const oldWords = await timed('/v1/collections/big/search?q=river');
  expect(oldWords.status, JSON.stringify(oldWords.body)).toBe(200);
  expect(oldWords.body).toMatchObject({ hits: [], total: 0 });
  const newWords = await timed('/v1/collections/big/search?q=fresh&limit=100');
  expect(newWords.status, JSON.stringify(newWords.body)).toBe(200);
  expect(newWords.body.total).toBe(NEW_DOCS + 1);
  for (const answer of [shared, old, scan, oldWords, newWords]) {
    expect(answer.ms).toBeLessThan(READ_MS_MAX);
  }
}

const url = () => gateway.url;

describe('a collection created again while its old incarnation is being deleted', () => {
  it('is tailed at once, never shows the old documents, and survives a kill -9 amid the deletion', async () => {
    for (let base = 0; base < OLD_DOCS; base += OLD_BATCH_DOCS) {
      const batch = encodeBatch(
        Array.from({ length: OLD_BATCH_DOCS }, (_, i) => ({
          key: `old-${base + i}`,
          value: Buffer.from(JSON.stringify({ title: `river stone ${base + i}` })),
          timestampMs: 1_800_000_000_000,
        })),
      );
      await log.client.append('big', 0, batch);
    }
    const loaded = await call(
      url(),
      'GET',
      `/v1/collections/big/docs/old-${OLD_DOCS - 1}?consistency=strong&wait_ms=${WAIT_MS_MAX}`,
    );
    expect(loaded.status, JSON.stringify(loaded.body)).toBe(200);

    expect((await call(url(), 'DELETE', '/v1/collections/big')).status).toBe(200);
    const items = [
      ...Array.from({ length: NEW_DOCS }, (_, i) => ({
        key: `new-${i}`,
        value: { title: `fresh start ${i}` },
      })),
      { key: 'old-1', value: { title: 'fresh again' } },
    ];
    const written = await call(url(), 'POST', '/v1/collections/big/docs', items);
    expect(written.status).toBe(200);
    const token = written.token!;
    const newKeys = items.map((item) => item.key).sort();
    await readsOfNewOnly(token, newKeys);
    // The reads were answered while the old documents were still being deleted.
    expect(await dropping()).toEqual(['big']);

    await serve.kill();
    serve = await startServe();
    await readsOfNewOnly(token, newKeys);
    expect(await dropping()).toEqual(['big']);
    await until('the resumed deletion ended', async () => (await dropping()).length === 0);
    await readsOfNewOnly(token, newKeys);

    const client = serveClient();
    const rebuiltDir = await tempDir('reincarnated-rebuilt');
    const rebuilt = await serveNodeOn(log.url, rebuiltDir, [0]);
    try {
      expect((await client.status()).lastDrop).toMatchObject({ collection: 'big' });
      const applied = async (node: HttpServeClient | typeof rebuilt.client) =>
        JSON.stringify(
          (await node.status()).partitions.map((p) => `${p.topic}:${p.applied}`).sort(),
        );
      await until(
        'the rebuilt node caught up',
        async () => (await applied(client)) === (await applied(rebuilt.client)),
      );
      expect(await serveContents(client, ['big'], QUERIES)).toEqual(
        await serveContents(rebuilt.client, ['big'], QUERIES),
      );
    } finally {
      client.close();
      await rebuilt.stop();
      await rm(rebuiltDir, { recursive: true, force: true });
    }
    await serve.stop();
    // LMDB holds the new documents only: the old incarnation's are gone, not merely hidden.
    const stores = readdirSync(dir).find((name) => name.startsWith('stores-'))!;
    const env = open({ path: join(dir, stores, DOCS_FILE), readOnly: true });
    try {
      expect(env.openDB({ name: 'docs', keyEncoding: 'binary' }).getKeysCount()).toBe(
        newKeys.length,
      );
    } finally {
      await env.close();
    }
  });
});
