// Proves reprocessing on `tailbase start`: a view redefined mid-load is rebuilt from the start of
// its source log beside the old version, which answers every read until the new one has caught
// up; then the swap is atomic (no read ever holds documents of both definitions), a token read
// waits on the new version, the old version's topic and state go, and the view equals a
// brute-force recomputation from the source log with the new definition. Then the same after
// kill -9 during the rebuild: it resumes and still matches.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { freePort } from '../harness/free-port.js';
import { seededRandom, testSeed, type Random } from '../harness/random.js';
import { sleep, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { caughtUpView, startWithViews } from './view-harness.js';

const PARTITIONS = 4;
const KEYS = 400;
/** Small fetches: a rebuild of a few thousand records takes many rounds, so reads land amid it. */
const SLOW_REBUILD = ['--view-fetch-bytes-max', '2048', '--view-fetch-wait-ms', '50'];
const REBUILD_WAIT_MS = 60_000;

const BY_COUNTRY: ViewDefinition = {
  from: 'orders',
  groupBy: ['country'],
  aggregates: { orders: 'count()', revenue: 'sum(total)' },
};
/** The redefinition: another grouping, so every document tells which definition made it. */
const BY_COUNTRY_YEAR: ViewDefinition = {
  from: 'orders',
  filter: 'status != cancelled',
  groupBy: ['country', 'year'],
  aggregates: { orders: 'count()', top: 'max(total)', mean: 'avg(total)' },
};

let node: SpawnedNode | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = undefined;
});

const order = (random: Random) => ({
  country: random.pick(['FR', 'DE', 'US', 'JP', null]),
  year: random.pick([2024, 2025]),
  total: random.pick([random.int(0, 100_000) / 100, random.int(-50, 50), 0.1]),
  status: random.pick(['paid', 'open', 'cancelled']),
});

/** Bulks of random writes and deletes of KEYS orders; answers the last write's token. */
async function load(url: string, random: Random, bulks: number): Promise<string> {
  let token = '';
  for (let i = 0; i < bulks; i++) {
    const records = Array.from({ length: 50 }, () => ({
      key: `o${random.int(0, KEYS - 1)}`,
      value: random.next() < 0.1 ? null : order(random),
    }));
    const answer = await call(url, 'POST', '/v1/collections/orders/docs', records);
    expect(answer.status).toBe(200);
    token = answer.body.token;
  }
  return token;
}

/** Which definition made a read's documents: 'old', 'new', 'mixed' or 'empty'. */
function shapeOf(docs: Record<string, unknown>[]): 'old' | 'new' | 'mixed' | 'empty' {
  if (docs.length === 0) return 'empty';
  const withYear = docs.filter((doc) => 'year' in doc && 'top' in doc).length;
  const withRevenue = docs.filter((doc) => 'revenue' in doc && !('year' in doc)).length;
  if (withYear === docs.length) return 'new';
  if (withRevenue === docs.length) return 'old';
  return 'mixed';
}

/**
 * A strong read: once the old version's topic is deleted the serve-node replays the log without
 * it, and an eventual read meanwhile may see part of the view (as after any drop).
 */
async function readShape(url: string): Promise<ReturnType<typeof shapeOf>> {
  const page = await call(
    url,
    'GET',
    '/v1/collections/by_country/docs?limit=1000&consistency=strong&wait_ms=20000',
  );
  expect([page.status, page.body.error]).toEqual([200, undefined]);
  expect(page.body.cursor).toBeNull();
  return shapeOf(page.body.items.map((item: { value: Record<string, unknown> }) => item.value));
}

async function viewInfo(url: string) {
  const info = await call(url, 'GET', '/v1/views/by_country');
  expect(info.status).toBe(200);
  return info.body;
}

async function expectMatchesLog(url: string, kafkaPort: number): Promise<void> {
  const log = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${kafkaPort}`],
    bootstrapWaitMs: 5000,
  });
  try {
    const served = await caughtUpView(url, 'by_country');
    const expected = expectedView(
      BY_COUNTRY_YEAR,
      await readSourceDocuments(log, 'orders', PARTITIONS),
    );
    expect(served.size).toBe(expected.size);
    expect(Object.fromEntries(served)).toEqual(Object.fromEntries(expected));
  } finally {
    log.close();
  }
}

/** Source records a rebuild has processed, over every partition. */
const processedOf = (partitions: { processed: number }[] | null) =>
  (partitions ?? []).reduce((n, p) => n + p.processed, 0);

async function topicsOf(url: string): Promise<Set<string>> {
  const status = await call(url, 'GET', '/v1/status');
  return new Set((status.body.partitions as { topic: string }[]).map((p) => p.topic));
}

describe('views: reprocessing', () => {
  it('a redefinition mid-load: old reads until the atomic swap, new after, equal to the log', async () => {
    const random = seededRandom(testSeed('views-reprocessing'));
    dir = tempDir('views-reprocess');
    const kafkaPort = await freePort();
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS, SLOW_REBUILD);
    const url = node.url;
    await load(url, random, 40);
    const first = await call(url, 'PUT', '/v1/views/by_country', BY_COUNTRY);
    expect(first.status).toBe(200);
    await caughtUpView(url, 'by_country');
    expect(await readShape(url)).toBe('old');

    // Writes go on through the redefinition and the swap; reads watch for a mix.
    let loading = true;
    const loader = (async () => {
      while (loading) await load(url, random, 1);
    })();
    const redefined = await call(url, 'PUT', '/v1/views/by_country', BY_COUNTRY_YEAR);
    expect(redefined.status).toBe(200);
    expect(redefined.body).toMatchObject({
      version: first.body.version,
      definition: BY_COUNTRY,
      topic: 'by_country',
      rebuilding: { definition: BY_COUNTRY_YEAR },
    });
    const next = redefined.body.rebuilding;
    expect(next.topic).toMatch(/^by_country--[a-z0-9]{8}$/);

    const shapes: string[] = [];
    let sawProgress = false;
    const deadline = Date.now() + REBUILD_WAIT_MS;
    for (;;) {
      // The read before the look at the view: a read made while it still rebuilds is old.
      const shape = await readShape(url);
      const row = (await call(url, 'GET', '/v1/status')).body.views.find(
        (v: { view: string }) => v.view === 'by_country',
      );
      const info = await viewInfo(url);
      shapes.push(shape);
      if (info.rebuilding !== null) {
        expect(info.version).toBe(first.body.version);
        expect(shape).toBe('old');
        // /v1/status tells the same: the version that serves, and the rebuild's progress.
        expect(row).toMatchObject({
          version: first.body.version,
          topic: 'by_country',
          rebuilding: { version: next.version, total: expect.any(Number) },
        });
        expect(row.rebuilding.total).toBeGreaterThan(0);
        for (const p of info.rebuilding.partitions ?? []) {
          expect(p.processed).toBeGreaterThanOrEqual(0);
          if (p.processed > 0 && p.processed < p.total) sawProgress = true;
        }
      } else {
        expect(info.version).toBe(next.version);
        expect(info.topic).toBe(next.topic);
        expect(info.definition).toEqual(BY_COUNTRY_YEAR);
        break;
      }
      expect(Date.now()).toBeLessThan(deadline);
    }
    expect(sawProgress).toBe(true);
    // Reads turned from the old definition to the new once, never holding both.
    expect(shapes).not.toContain('mixed');
    expect(shapes[0]).toBe('old');
    const turned = shapes.findIndex((s) => s === 'new');
    expect(turned === -1 || shapes.slice(turned).every((s) => s === 'new')).toBe(true);
    expect(await readShape(url)).toBe('new');

    // A read with a source write's token now waits on the new version's frontiers.
    const key = 'o-token';
    const write = await call(url, 'PUT', `/v1/collections/orders/docs/${key}`, {
      country: 'NZ',
      year: 2031,
      total: 7,
      status: 'paid',
    });
    const read = await call(
      url,
      'GET',
      `/v1/collections/by_country/docs/${encodeURIComponent('["NZ",2031]')}`,
      undefined,
      { 'tailbase-token': write.body.token },
    );
    expect(read.status).toBe(200);
    expect(read.body.value).toMatchObject({ country: 'NZ', year: 2031, orders: 1, top: 7 });

    loading = false;
    await loader;
    await expectMatchesLog(url, kafkaPort);
    // The old version's topic and state go after the swap.
    for (let i = 0; i < 200 && (await topicsOf(url)).has('by_country'); i++) await sleep(50);
    const topics = await topicsOf(url);
    expect(topics.has('by_country')).toBe(false);
    expect(topics.has(next.topic)).toBe(true);
    const states = readdirSync(path.join(dir.path, 'views'));
    expect(states).toEqual([`by_country@${next.version}`]);
    expect(existsSync(path.join(dir.path, 'views', `by_country@${first.body.version}`))).toBe(
      false,
    );
  });

  it('kill -9 during a rebuild: it resumes from its own state and still matches the log', async () => {
    const random = seededRandom(testSeed('views-reprocessing-kill'));
    dir = tempDir('views-reprocess-kill');
    const kafkaPort = await freePort();
    const data = dir.path;
    const start = () => startWithViews(data, kafkaPort, PARTITIONS, SLOW_REBUILD);
    node = await start();
    await load(node.url, random, 60);
    expect((await call(node.url, 'PUT', '/v1/views/by_country', BY_COUNTRY)).status).toBe(200);
    await caughtUpView(node.url, 'by_country');
    const redefined = await call(node.url, 'PUT', '/v1/views/by_country', BY_COUNTRY_YEAR);
    expect(redefined.status).toBe(200);
    const next = redefined.body.rebuilding;
    for (let kill = 0; kill < 2; kill++) {
      // Killed once the rebuild has processed some of the source, not all of it.
      const deadline = Date.now() + REBUILD_WAIT_MS;
      for (;;) {
        const info = await viewInfo(node.url);
        expect(info.rebuilding?.version).toBe(next.version);
        if (processedOf(info.rebuilding.partitions) > kill * 100 + 50) break;
        expect(Date.now()).toBeLessThan(deadline);
        await sleep(20);
      }
      const before = await viewInfo(node.url);
      const processedBefore = processedOf(before.rebuilding.partitions);
      const writing = load(node.url, random, 5).catch(() => undefined);
      await sleep(random.int(0, 100));
      await node.kill('SIGKILL');
      await writing;
      node = await start();
      expect(await readShape(node.url)).not.toBe('mixed');
      // It resumes from its own state: what it had processed (and published) is not done again.
      const after = await viewInfo(node.url);
      if (after.rebuilding?.partitions) {
        expect(processedOf(after.rebuilding.partitions)).toBeGreaterThanOrEqual(processedBefore);
      }
    }
    await load(node.url, random, 5);
    const deadline = Date.now() + REBUILD_WAIT_MS;
    while ((await viewInfo(node.url)).rebuilding !== null) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(50);
    }
    expect((await viewInfo(node.url)).version).toBe(next.version);
    await expectMatchesLog(node.url, kafkaPort);
  });
});
