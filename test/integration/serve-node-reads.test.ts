// Proves a serve-node tailing a real log-node serves gets, scans and ranked search, waits for
// offsets (answering as soon as they are applied, 504 when they never come, 503 past the waiter
// bound), and answers every hostile query with 200 or 400. Each collection is a topic of the log;
// a collection created after the node started is found and served at the token. The serve-node
// and the test's writes reach the log-node by its Kafka listener, so each key is written to the
// partition Kafka's partitioner puts it in.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { keysIn, settingsApplied, tempDir, type TempDir } from '../harness/index.js';

const silent = createLogger('test', 'silent');
let logDir: TempDir;
let serveDir: TempDir;
let logNode: OpenLogNode;
let logUrl: string;
let serveNode: RunningServeNode;
let log: KafkaLogClient;
let serve: HttpServeClient;

const record = (key: string, value: unknown): LogRecord => ({
  key,
  value: value === null ? null : Buffer.from(JSON.stringify(value)),
  timestampMs: Date.now(),
});

/** Appends records to a topic-partition; answers the last offset. */
async function append(topic: string, partition: number, records: LogRecord[]): Promise<number> {
  return (await log.append(topic, partition, encodeBatch(records))).lastOffset;
}

/**
 * A second serve-node over the same log, with its own limits, and a scratch directory: `use`
 * gets its client and the scratch path; both are stopped and removed after.
 */
async function withOwnNode(
  name: string,
  limits: Parameters<typeof startServeNode>[0]['limits'],
  use: (client: HttpServeClient, scratch: string) => Promise<void>,
): Promise<void> {
  const nodeDir = tempDir(`serve-reads-${name}`);
  const scratch = tempDir(`serve-reads-${name}-scratch`);
  const node = await startServeNode({
    dataDir: nodeDir.path,
    logUrls: [logUrl],
    logger: silent,
    limits,
  });
  const client = new HttpServeClient(node.url);
  try {
    await use(client, scratch.path);
  } finally {
    client.close();
    await node.stop();
    nodeDir.cleanup();
    scratch.cleanup();
  }
}

/** Each partition's last offset of a collection now: what a read waits for to see it all. */
const lastOffsets = async (collection = 'articles') =>
  Object.fromEntries(
    (await log.offsets())
      .filter((p) => p.topic === collection)
      .map((p) => [p.partition, p.endOffset - 1]),
  );

beforeAll(async () => {
  logDir = tempDir('serve-reads-log');
  serveDir = tempDir('serve-reads-serve');
  logNode = await openLogNode({
    dataDir: logDir.path,
    partitions: 2,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const broker = `127.0.0.1:${logNode.kafkaPort}`;
  logUrl = `kafka://${broker}`;
  log = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
  serveNode = await startServeNode({
    dataDir: serveDir.path,
    logUrls: [logUrl],
    logger: silent,
    limits: { waitersMax: 3, logWaitMs: 500 },
  });
  serve = new HttpServeClient(serveNode.url);
  await append('articles', 0, [
    record('fox', { title: 'The quick brown fox', body: 'jumps over the lazy dog' }),
    record('dog', { title: 'Lazy dogs', body: 'a dog sleeps; the dog dreams of dogs' }),
    record('cafe', { title: 'Café society', tags: ['crème', 'brûlée'] }),
    record('a/b è', { title: 'slash and accent key', body: 'quickly written' }),
  ]);
  // The document before its collection's settings: applying them re-indexes it.
  const tokyo = await append('cjk', 1, [record('tokyo', { text: '東京都は日本の首都です' })]);
  const cat = await append('articles', 1, [
    record('cat', { title: 'A cat', body: 'the cat ignores the fox' }),
  ]);
  const settings = await append(SETTINGS_TOPIC, 0, [record('cjk', { tokenizer: 'trigram' })]);
  const last = await append('articles', 0, [record('going', { title: 'soon deleted' })]);
  const deleted = await append('articles', 0, [record('going', null)]);
  expect(deleted).toBe(last + 1);
  await serve.get('articles', 'fox', { waitFor: { 0: deleted, 1: cat }, waitMs: 10_000 });
  await serve.get('cjk', 'tokyo', { waitFor: { 1: tokyo }, waitMs: 10_000 });
  await settingsApplied(serve, settings);
});

afterAll(async () => {
  await serveNode?.stop();
  log?.close();
  await logNode?.stop();
  serveDir?.cleanup();
  logDir?.cleanup();
});

describe('serve-node reads', () => {
  it('gets documents with their offset, partition and applied offsets; 404 carries applied', async () => {
    const got = await serve.get('articles', 'a/b è');
    expect(got.doc).toMatchObject({ key: 'a/b è', offset: 3, partition: 0 });
    expect(JSON.parse(got.doc?.json ?? 'null')).toEqual({
      title: 'slash and accent key',
      body: 'quickly written',
    });
    expect(got.applied).toEqual({ 0: 6, 1: 1 });
    const missing = await serve.get('articles', 'going');
    expect(missing).toEqual({ doc: null, applied: { 0: 6, 1: 1 } });
    expect((await serve.get('cjk', 'tokyo')).applied).toEqual({ 0: 0, 1: 1 });
  });

  it('answers a batched read per item: document, null when absent, false when not applied', async () => {
    const response = await fetch(`${serveNode.url}/internal/docs`, {
      method: 'POST',
      body: JSON.stringify({
        items: [
          { collection: 'articles', key: 'fox' },
          { collection: 'articles', key: 'going', waitFor: { 0: 5 } },
          { collection: 'articles', key: 'cat', waitFor: { 1: 0 } },
          { collection: 'articles', key: 'cat', waitFor: { 1: 1 } },
          { collection: 'cjk', key: 'tokyo', waitFor: { 1: 0 } },
        ],
      }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { items: unknown[]; applied: unknown };
    expect(body.applied).toEqual({ articles: { 0: 6, 1: 1 }, cjk: { 0: 0, 1: 1 } });
    expect(body.items[0]).toMatchObject({ key: 'fox', partition: 0, offset: 0 });
    expect(body.items.slice(1, 2)).toEqual([null]);
    expect(body.items[2]).toMatchObject({ key: 'cat', partition: 1 });
    expect(body.items[3]).toBe(false);
    expect(body.items[4]).toMatchObject({ key: 'tokyo', partition: 1, offset: 0 });
  });

  it('coalesces concurrent gets into batched reads with the same answers as single reads', async () => {
    const keys = ['fox', 'dog', 'cafe', 'a/b è', 'cat', 'going', 'missing'];
    const batched = await Promise.all(keys.map((key) => serve.get('articles', key)));
    const single = await Promise.all(
      keys.map(async (key) => {
        const path = `/internal/docs/articles/${encodeURIComponent(key)}`;
        const response = await fetch(serveNode.url + path);
        const body = (await response.json()) as Record<string, unknown>;
        if (response.status === 404) return null;
        delete body.applied;
        return body;
      }),
    );
    expect(batched.map((got) => got.doc)).toEqual(single);
    expect(batched.every((got) => got.applied[0] === 6 && got.applied[1] === 1)).toBe(true);
  });

  it('rejects a bad batched read with 400 and an oversized one with 413', async () => {
    const post = async (body: string) => {
      const response = await fetch(`${serveNode.url}/internal/docs`, { method: 'POST', body });
      return [response.status, ((await response.json()) as { error: { code: string } }).error.code];
    };
    const item = { collection: 'articles', key: 'fox' };
    expect(await post('{')).toEqual([400, 'invalid_json']);
    expect(await post('{"items":[]}')).toEqual([400, 'invalid_items']);
    expect(await post(JSON.stringify({ items: [{ collection: 'articles' }] }))).toEqual([
      400,
      'invalid_items',
    ]);
    expect(await post(JSON.stringify({ items: [{ ...item, collection: 'Bad' }] }))).toEqual([
      400,
      'invalid_collection',
    ]);
    expect(await post(JSON.stringify({ items: [{ ...item, waitFor: { 9: 1 } }] }))).toEqual([
      400,
      'partition_not_hosted',
    ]);
    expect(await post(JSON.stringify({ items: [{ ...item, waitFor: { 0: -1 } }] }))).toEqual([
      400,
      'invalid_wait_for',
    ]);
    const tooMany = JSON.stringify({ items: Array.from({ length: 1_001 }, () => item) });
    expect(await post(tooMany)).toEqual([400, 'invalid_items']);
    const tooLarge = JSON.stringify({ items: [{ ...item, key: 'k'.repeat(3 * 1024 * 1024) }] });
    expect(await post(tooLarge)).toEqual([413, 'batch_too_large']);
  });

  it('scans in key order across partitions, page by page', async () => {
    const first = await serve.scan('articles', { limit: 2 });
    expect(first.items.map((item) => item.key)).toEqual(['a/b è', 'cafe']);
    expect(first.more).toBe(true);
    const rest = await serve.scan('articles', { after: 'cafe', limit: 10 });
    expect(rest.items.map((item) => item.key)).toEqual(['cat', 'dog', 'fox']);
    expect(rest.more).toBe(false);
    expect((await serve.scan('articles', { prefix: 'ca' })).items.map((i) => i.key)).toEqual([
      'cafe',
      'cat',
    ]);
  });

  it('ends a scan page early past scanBytesMax, and pages on to every key', async () => {
    await withOwnNode('budget', { scanBytesMax: 200 }, async (client) => {
      const ends = await lastOffsets();
      const whole = await serve.scan('articles', { limit: 100 });
      expect(whole.more).toBe(false);
      const keys: string[] = [];
      let after: string | undefined;
      for (let pages = 1; ; pages++) {
        const page = await client.scan('articles', {
          limit: 100,
          after,
          waitFor: ends,
          waitMs: 10_000,
        });
        expect(page.items.length).toBeGreaterThan(0);
        expect(page.items.length).toBeLessThan(whole.items.length);
        keys.push(...page.items.map((item) => item.key));
        if (!page.more) break;
        after = page.items.at(-1)!.key;
        expect(pages).toBeLessThan(whole.items.length);
      }
      expect(keys).toEqual(whole.items.map((item) => item.key));
    });
  });

  it('snapshots into a new or empty directory only, and a rebuild asked meanwhile waits for it', async () => {
    await withOwnNode('snapshot', {}, async (client, target) => {
      const ends = await lastOffsets();
      await client.scan('articles', { limit: 1, waitFor: ends, waitMs: 10_000 });
      const file = `${target}/a-file`;
      writeFileSync(file, 'x');
      for (const dir of [file, `${target}/missing/parent`, target]) {
        await expect(client.snapshot(dir)).rejects.toMatchObject({
          status: 400,
          code: 'invalid_snapshot_dir',
        });
      }
      const snapshotDir = `${target}/snap`;
      const [snapshot] = await Promise.all([client.snapshot(snapshotDir), client.rebuild()]);
      expect(snapshot.applied).toMatchObject(
        Object.fromEntries(Object.entries(ends).map(([p, o]) => [`articles/${p}`, o + 1])),
      );
      expect(readdirSync(snapshotDir)).toContain('snapshot.json');
    });
  });

  it('copies both stores at one checkpoint while writes keep arriving', async () => {
    let writing = true;
    const keysOf = [0, 1].map((partition) => keysIn(partition, 2, 150, 'k'));
    const writer = (async () => {
      for (let i = 0; writing && i < 5_000; i++) {
        const text = `load ${i} ${'word '.repeat(50)}`;
        const key = keysOf[i % 2][Math.floor(i / 2) % 150];
        await append('load', i % 2, [record(key, { text })]);
      }
    })();
    try {
      await withOwnNode('snapshot-load', {}, async (client, target) => {
        for (let i = 0; i < 5; i++) {
          const dir = `${target}/snap-${i}`;
          await client.snapshot(dir);
          const { stores } = JSON.parse(readFileSync(`${dir}/snapshot.json`, 'utf8')) as {
            stores: Record<string, { docs: number; search: number }>;
          };
          for (const [topicPartition, { docs, search }] of Object.entries(stores)) {
            expect(docs, `snapshot ${i}, ${topicPartition}`).toBe(search);
          }
        }
      });
    } finally {
      writing = false;
      await writer;
    }
  });

  it('restricts scans and searches to the partitions asked for', async () => {
    const scan = await serve.scan('articles', { partitions: [1] });
    expect(scan.items.map((item) => [item.key, item.partition])).toEqual([['cat', 1]]);
    const search = await serve.search('articles', { q: 'fox', partitions: [0] });
    expect(search.hits.map((hit) => hit.key)).toEqual(['fox']);
    expect(search.total).toBe(1);
    const response = await fetch(`${serveNode.url}/internal/scan/articles?partitions=0,5`);
    expect(response.status).toBe(400);
  });

  it('ranks with BM25 and supports phrases, prefixes, exclusion, OR, diacritics, trigram', async () => {
    const keys = async (q: string) =>
      (await serve.search('articles', { q })).hits.map((hit) => hit.key);
    expect(await keys('dog')).toEqual(['dog', 'fox']);
    expect(await keys('"quick brown"')).toEqual(['fox']);
    expect(await keys('"brown quick"')).toEqual([]);
    expect((await keys('quick*')).sort()).toEqual(['a/b è', 'fox']);
    expect(await keys('fox -cat')).toEqual(['fox']);
    expect((await keys('sleeps OR ignores')).sort()).toEqual(['cat', 'dog']);
    expect(await keys('creme brulee')).toEqual(['cafe']);
    expect(await keys('cafe')).toEqual(['cafe']);
    const cjk = await serve.search('cjk', { q: '日本の首都', highlight: true });
    expect(cjk.hits.map((hit) => hit.key)).toEqual(['tokyo']);
    expect(cjk.hits[0].highlights).toEqual({ text: '東京都は<mark>日本の首都</mark>です' });
    const result = await serve.search('articles', { q: 'fox', highlight: true, limit: 1 });
    expect(result.total).toBe(2);
    expect(result.hits).toHaveLength(1);
    expect(result.hits[0].score).toBeGreaterThan(0);
    expect(Object.values(result.hits[0].highlights ?? {}).join(' ')).toContain('<mark>fox</mark>');
    const page2 = await serve.search('articles', { q: 'fox', limit: 1, offset: 1 });
    expect(page2.hits[0].key).not.toBe(result.hits[0].key);
  });

  it('answers every hostile query with 200 or 400, never 500', async () => {
    const hostile = [
      '"unbalanced',
      'a"b"c"',
      'NEAR(fox dog)',
      'title:fox',
      '{title body}: fox',
      'fox AND OR NOT dog',
      '-',
      '- -fox',
      '*',
      'fox*^',
      '^fox',
      '(((',
      ')fox(',
      '\u0000fox\u0000',
      'fox\u0000"',
      "' OR 1=1 --",
      '"" "" ""',
      'OR',
      'x'.repeat(10_000),
      'fox '.repeat(2_500),
      '\uFFFF',
      '🦊 fox',
      'ab',
    ];
    for (const q of hostile) {
      const url = `${serveNode.url}/internal/search/articles?q=${encodeURIComponent(q)}&highlight=true`;
      const response = await fetch(url);
      const body = (await response.json()) as { error?: { code: string } };
      expect([200, 400], JSON.stringify(q.slice(0, 40))).toContain(response.status);
      if (response.status === 400) expect(body.error?.code).toBe('invalid_query');
    }
    for (const raw of ['%FF%FE', '%ED%A0%80', '%', '%E0%A4', 'fox&q=dog']) {
      const response = await fetch(`${serveNode.url}/internal/search/articles?q=${raw}`);
      expect([200, 400], raw).toContain(response.status);
    }
    const cjkShort = await fetch(
      `${serveNode.url}/internal/search/cjk?q=${encodeURIComponent('日')}`,
    );
    expect(cjkShort.status).toBe(200);
  });

  it('rejects bad names, limits and wait_for with 400', async () => {
    const statuses = await Promise.all(
      [
        '/internal/docs/Bad/x',
        '/internal/scan/articles?limit=0',
        '/internal/scan/articles?limit=100000',
        '/internal/search/articles',
        '/internal/search/articles?q=fox&limit=abc',
        '/internal/docs/articles/fox?wait_for=9:1',
        '/internal/docs/articles/fox?wait_for=0',
        '/internal/docs/articles/fox?wait_for=0:-1',
        '/internal/docs/articles/fox?wait_for=0:1,0:2',
        '/internal/docs/articles/fox?wait_for=0:99999999999999999',
      ].map(async (path) => {
        const response = await fetch(serveNode.url + path);
        return [
          path,
          response.status,
          ((await response.json()) as { error: { code: string } }).error.code,
        ];
      }),
    );
    for (const [path, status] of statuses) expect(status, String(path)).toBe(400);
    expect(statuses[5][2]).toBe('partition_not_hosted');
    expect(statuses.slice(1, 3).map((s) => s[2])).toEqual([
      'invalid_parameter',
      'invalid_parameter',
    ]);
    expect(statuses.slice(6).map((s) => s[2])).toEqual(Array(4).fill('invalid_wait_for'));
    for (const path of [
      '/internal/docs/articles/%FF',
      '/internal/docs/articles/%',
      '/internal/docs/articles/' + 'k'.repeat(2000),
      '/internal/scan/articles?prefix=%FF',
      '/internal/scan/articles?start=z&end=a',
      '/internal/docs/articles/fox?wait_ms=99999999999999999',
    ]) {
      const response = await fetch(serveNode.url + path);
      expect([200, 400, 404], path).toContain(response.status);
    }
  });

  it('a read for an unwritten offset blocks, answers once applied, and 504s when it never comes', async () => {
    const next = (await lastOffsets())[1] + 1;
    const started = Date.now();
    const pending = serve.get('articles', 'late', { waitFor: { 1: next }, waitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await append('articles', 1, [record('late', { title: 'late arrival' })]);
    const got = await pending;
    const elapsedMs = Date.now() - started;
    expect(got.doc?.key).toBe('late');
    expect(got.applied[1]).toBe(next + 1);
    expect(elapsedMs).toBeGreaterThanOrEqual(300);
    expect(elapsedMs).toBeLessThan(3_000);

    const error = await serve
      .get('articles', 'late', { waitFor: { 1: next + 100 }, waitMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TailbaseError);
    expect(error).toMatchObject({
      status: 504,
      code: 'not_caught_up',
      details: { topic: 'articles', partition: 1, applied: next + 1, required: next + 100 },
    });
  });

  it('bounds the number of waiting reads with 503 too_many_waiters', async () => {
    const waiting = [1, 2, 3].map(() =>
      serve.get('articles', 'x', { waitFor: { 0: 1_000_000 }, waitMs: 800 }).catch((e) => e),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const error = await serve
      .get('articles', 'x', { waitFor: { 0: 1_000_000 }, waitMs: 800 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503, code: 'too_many_waiters' });
    for (const result of await Promise.all(waiting)) expect(result).toMatchObject({ status: 504 });
  });

  it('reports status per topic-partition and readiness', async () => {
    const status = await serve.status();
    expect(status.ready).toBe(true);
    const entries = status.partitions.map((p) => [p.topic, p.partition, p.lag, p.state]);
    for (const topic of ['articles', 'cjk']) {
      expect(entries).toContainEqual([topic, 0, 0, 'tailing']);
      expect(entries).toContainEqual([topic, 1, 0, 'tailing']);
    }
    // Every serve-node tails the settings topic's one partition, whatever it hosts.
    expect(entries).toContainEqual([SETTINGS_TOPIC, 0, 0, 'tailing']);
    expect(entries.filter((entry) => entry[0] === SETTINGS_TOPIC)).toHaveLength(1);
    expect(await serve.ready()).toBe(true);
  });

  it('finds a collection created after it started at once, and serves a token read of it', async () => {
    // Listing topics every minute: only the read itself can make the node look at once.
    await withOwnNode('new-topic', { topicRefreshMs: 60_000 }, async (client) => {
      const before = await client.status();
      expect(before.partitions.some((p) => p.topic === 'fresh')).toBe(false);
      const offset = await append('fresh', 1, [record('new', { text: 'just created' })]);
      const started = Date.now();
      const got = await client.get('fresh', 'new', { waitFor: { 1: offset }, waitMs: 10_000 });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(got.doc).toMatchObject({ key: 'new', partition: 1, offset });
      expect(got.applied[1]).toBe(offset + 1);
      const found = await client.search('fresh', { q: 'created', waitFor: { 1: offset } });
      expect(found.hits.map((hit) => hit.key)).toEqual(['new']);
      // Settings of the new collection, and a search that waits for them.
      const settings = await append(SETTINGS_TOPIC, 0, [record('fresh', { searchable: [] })]);
      const unsearchable = await client.search('fresh', {
        q: 'created',
        settingsWaitFor: settings,
        waitMs: 10_000,
      });
      expect(unsearchable.hits).toEqual([]);
      const badWait = await fetch(`${client.url}/internal/search/fresh?q=x&settings_wait_for=-1`);
      expect(badWait.status).toBe(400);
      const status = await client.status();
      expect(status.partitions.filter((p) => p.topic === 'fresh').map((p) => p.partition)).toEqual([
        0, 1,
      ]);
    });
    // The node tailing all along finds it too, by its periodic look (topicRefreshMs 1000).
    const seen = await serve.get('fresh', 'new', { waitFor: { 1: 0 }, waitMs: 10_000 });
    expect(seen.doc?.key).toBe('new');
  });
});
