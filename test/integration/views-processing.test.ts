// Proves a view's processor end to end on `tailbase start`: after random writes, updates and
// deletes (some before the views are declared, some after), a grouping and a projection, each
// with a filter, equal a brute-force recomputation from the source's log read back over the log
// API (view-check.ts); and after kill -9 of the process at random moments during processing and
// a restart on the same data, they still do (each source record counted once); and that what the
// log acknowledged leaves the outbox (in the round after, not in a commit of its own).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { freePort } from '../harness/free-port.js';
import { seededRandom, testSeed, type Random } from '../harness/random.js';
import type { SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { ViewState } from '../../views/view-state.js';
import { caughtUpView, killAmidWrites, startWithViews } from './view-harness.js';

const PARTITIONS = 4;
const KEYS = 80;
/** Kills amid the production of one large round of output. */
const OUTBOX_KILLS = 6;

const BY_COUNTRY: ViewDefinition = {
  from: 'orders',
  filter: 'status != cancelled',
  groupBy: ['country', 'year'],
  aggregates: {
    orders: 'count()',
    revenue: 'sum(total)',
    low: 'min(total)',
    top: 'max(total)',
    mean: 'avg(total)',
    status: 'latest(status)',
  },
};
const PAID: ViewDefinition = {
  from: 'orders',
  filter: 'status = paid',
  select: ['country', 'total'],
};

let node: SpawnedNode | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = undefined;
});

/** A random write, update or delete of one of KEYS orders, as one PUT, DELETE or bulk. */
async function randomWrites(url: string, random: Random, count: number): Promise<void> {
  const order = () => ({
    country: random.pick(['FR', 'DE', 'US', 'été', null]),
    year: random.pick([2024, 2025]),
    total: random.pick([random.int(0, 100_000) / 100, random.int(-50, 50), 0.1, 'n/a']),
    status: random.pick(['paid', 'open', 'cancelled']),
  });
  for (let i = 0; i < count; i++) {
    const key = `o${random.int(0, KEYS - 1)}`;
    const roll = random.next();
    const answer =
      roll < 0.15
        ? await call(url, 'DELETE', `/v1/collections/orders/docs/${key}`)
        : roll < 0.3
          ? await call(
              url,
              'POST',
              '/v1/collections/orders/docs',
              Array.from({ length: 5 }, () => ({
                key: `o${random.int(0, KEYS - 1)}`,
                value: random.next() < 0.2 ? null : order(),
              })),
            )
          : await call(url, 'PUT', `/v1/collections/orders/docs/${key}`, order());
    expect(answer.status).toBe(200);
  }
}

async function expectViewsMatchLog(url: string, kafkaPort: number): Promise<void> {
  const log = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${kafkaPort}`],
    bootstrapWaitMs: 5000,
  });
  try {
    const source = await readSourceDocuments(log, 'orders', PARTITIONS);
    for (const [view, definition] of [
      ['by_country', BY_COUNTRY],
      ['paid', PAID],
    ] as const) {
      const served = await caughtUpView(url, view);
      const expected = expectedView(definition, source);
      expect(Object.fromEntries(served)).toEqual(Object.fromEntries(expected));
    }
  } finally {
    log.close();
  }
}

describe('views: processing', () => {
  it('a grouping and a projection equal a recomputation from the source log', async () => {
    const random = seededRandom(testSeed('views-processing'));
    dir = tempDir('views');
    const kafkaPort = await freePort();
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS);
    await randomWrites(node.url, random, 60);
    expect((await call(node.url, 'PUT', '/v1/views/by_country', BY_COUNTRY)).status).toBe(200);
    expect((await call(node.url, 'PUT', '/v1/views/paid', PAID)).status).toBe(200);
    await randomWrites(node.url, random, 120);
    await expectViewsMatchLog(node.url, kafkaPort);
  });

  it('after kill -9 during processing and a restart, each record is counted once', async () => {
    const random = seededRandom(testSeed('views-kill'));
    dir = tempDir('views-kill');
    const kafkaPort = await freePort();
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS);
    await randomWrites(node.url, random, 40);
    expect((await call(node.url, 'PUT', '/v1/views/by_country', BY_COUNTRY)).status).toBe(200);
    expect((await call(node.url, 'PUT', '/v1/views/paid', PAID)).status).toBe(200);
    const data = dir.path;
    node = await killAmidWrites(
      node,
      () => startWithViews(data, kafkaPort, PARTITIONS),
      random,
      (url) => randomWrites(url, random, 200),
      3,
    );
    await randomWrites(node.url, random, 20);
    await expectViewsMatchLog(node.url, kafkaPort);
  });

  it('kill -9 while a round of output is being produced: the rest is produced after restart', async () => {
    dir = tempDir('views-outbox');
    const kafkaPort = await freePort();
    // Small appends: the round's output takes hundreds of them, so the kill lands amid them.
    const smallAppends = ['--view-append-records-max', '10'];
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS, smallAppends);
    const copy: ViewDefinition = { from: 'bulk_src', select: ['n'] };
    expect(
      (await call(node.url, 'PUT', '/v1/collections/bulk_src/docs/seed', { n: -1 })).status,
    ).toBe(200);
    expect((await call(node.url, 'PUT', '/v1/views/copy', copy)).status).toBe(200);
    const load = Array.from({ length: 10_000 }, (_, n) => ({ key: `k${n}`, value: { n } }));
    expect((await call(node.url, 'POST', '/v1/collections/bulk_src/docs', load)).status).toBe(200);
    // Each kill lands once the view's topic has taken more of the output, not all of it; the
    // restarted processor resumes the outbox, and is killed again amid it.
    let produced = 0;
    for (let kill = 0; kill < OUTBOX_KILLS; kill++) {
      const before = produced;
      for (let polls = 0; polls < 2000 && produced === before; polls++) {
        const status = await call(node.url, 'GET', '/v1/status');
        produced = (status.body.partitions as { topic: string; endOffset: number }[])
          .filter((p) => p.topic === 'copy')
          .reduce((sum, p) => sum + p.endOffset, 0);
      }
      await node.kill('SIGKILL');
      expect(produced).toBeGreaterThan(before);
      node = await startWithViews(dir.path, kafkaPort, PARTITIONS, smallAppends);
    }
    const log = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${kafkaPort}`],
      bootstrapWaitMs: 5000,
    });
    try {
      const expected = expectedView(copy, await readSourceDocuments(log, 'bulk_src', PARTITIONS));
      const served = await caughtUpView(node.url, 'copy', 'bulk_src');
      expect(served.size).toBe(expected.size);
      expect(Object.fromEntries(served)).toEqual(Object.fromEntries(expected));
    } finally {
      log.close();
    }
  });

  it('what the log acknowledged leaves the outbox: none of it is left once the view is idle', async () => {
    dir = tempDir('views-outbox-empty');
    const kafkaPort = await freePort();
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS);
    const random = seededRandom(testSeed('views-outbox-empty'));
    await randomWrites(node.url, random, 50);
    expect((await call(node.url, 'PUT', '/v1/views/by_country', BY_COUNTRY)).status).toBe(200);
    await randomWrites(node.url, random, 100);
    expect((await caughtUpView(node.url, 'by_country')).size).toBeGreaterThan(0);
    // The removal is in the round after the acknowledgement: an idle round comes a fetch wait
    // (200 ms) later at most.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await node.kill('SIGTERM')).code).toBe(0);
    node = undefined;
    const views = path.join(dir.path, 'views');
    const [task] = readdirSync(views).filter((entry) => entry.startsWith('by_country@'));
    const state = new ViewState(path.join(views, task, 'state.mdb'));
    try {
      expect([...state.outbox.getKeys()]).toEqual([]);
      expect(state.groups.getCount()).toBeGreaterThan(0);
    } finally {
      await state.close();
    }
  });
});
