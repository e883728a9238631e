// Proves event-time windows on `tailbase start`: an event out of order inside its window's grace
// is applied, one past it is counted late and not applied; a hopping window counts an event once
// in each window holding it; a tombstone and an overwrite are events of their own (none, one);
// and random events over every partition, before and after kill -9 during processing, give the
// documents and the late count of a brute-force recomputation from the source log (view-check.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { freePort } from '../harness/free-port.js';
import { seededRandom, testSeed, type Random } from '../harness/random.js';
import type { SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';
import { expectedWindowedView, readSourceEvents } from './view-check.js';
import { caughtUpView, killAmidWrites, startWithViews } from './view-harness.js';

const PARTITIONS = 4;
const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
/** 2026-12-04T10:00:00Z: the hour the hand-written events are placed around. */
const TEN = Date.UTC(2026, 11, 4, 10);

let node: SpawnedNode | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = undefined;
});

const at = (minutesAfterTen: number) => TEN + minutesAfterTen * MINUTE_MS;
const iso = (ms: number) => new Date(ms).toISOString();
const windowKey = (country: string, start: number, end: number) =>
  JSON.stringify([country, iso(start), iso(end)]);

async function put(url: string, collection: string, key: string, doc: unknown): Promise<void> {
  expect((await call(url, 'PUT', `/v1/collections/${collection}/docs/${key}`, doc)).status).toBe(
    200,
  );
}

async function lateRecords(url: string, view: string): Promise<number> {
  return (await call(url, 'GET', `/v1/views/${view}`)).body.lateRecords as number;
}

describe('views: event-time windows', () => {
  it('applies out-of-order events inside grace, counts those past it late; hopping counts once a window', async () => {
    dir = tempDir('views-windows');
    node = await startWithViews(dir.path, await freePort(), PARTITIONS);
    const { url } = node;
    const hourly: ViewDefinition = {
      from: 'clicks',
      groupBy: ['country'],
      aggregates: { clicks: 'count()', spent: 'sum(n)' },
      window: { field: 'ts', size: '1h', grace: '5m' },
    };
    const hopping: ViewDefinition = {
      from: 'visits',
      groupBy: ['country'],
      aggregates: { visits: 'count()' },
      window: { field: 'ts', size: '1h', advance: '15m' },
    };
    // One key: one partition, whose stream time these events move in this order.
    const events: [number | string, number][] = [
      [at(10), 1], // 10:00-11:00; stream time 10:10
      [iso(at(63)), 2], // 11:00-12:00; stream time 11:03
      [at(55), 4], // 10:00-11:00 ended 3 minutes before the stream time: inside grace, applied
      [iso(at(80)), 8], // stream time 11:20
      [at(40), 16], // 10:00-11:00 ended 20 minutes before: past grace, late
      [at(65), 32], // 11:00-12:00, applied
    ];
    for (const [ts, n] of events) await put(url, 'clicks', 'c', { country: 'FR', ts, n });
    // A tombstone is no event; a record without an event time is refused.
    expect((await call(url, 'DELETE', '/v1/collections/clicks/docs/c')).status).toBe(200);
    await put(url, 'clicks', 'c', { country: 'FR', n: 64 });
    await put(url, 'visits', 'v', { country: 'DE', ts: iso(at(10)) });
    // Declared after the events: a view processes its source from the start of its log.
    expect((await call(url, 'PUT', '/v1/views/hourly', hourly)).status).toBe(200);
    expect((await call(url, 'PUT', '/v1/views/hopping', hopping)).status).toBe(200);
    const served = await caughtUpView(url, 'hourly', 'clicks');
    expect(Object.fromEntries(served)).toEqual({
      [windowKey('FR', at(0), at(60))]: {
        country: 'FR',
        windowStart: iso(at(0)),
        windowEnd: iso(at(60)),
        clicks: 2,
        spent: 5,
      },
      [windowKey('FR', at(60), at(120))]: {
        country: 'FR',
        windowStart: iso(at(60)),
        windowEnd: iso(at(120)),
        clicks: 3,
        spent: 42,
      },
    });
    const info = (await call(url, 'GET', '/v1/views/hourly')).body;
    expect({ late: info.lateRecords, refused: info.refusedRecords }).toEqual({
      late: 1,
      refused: 1,
    });

    const hops = await caughtUpView(url, 'hopping', 'visits');
    const starts = [-45, -30, -15, 0].map(at);
    expect(Object.fromEntries(hops)).toEqual(
      Object.fromEntries(
        starts.map((start) => [
          windowKey('DE', start, start + HOUR_MS),
          { country: 'DE', windowStart: iso(start), windowEnd: iso(start + HOUR_MS), visits: 1 },
        ]),
      ),
    );
    expect(await lateRecords(url, 'hopping')).toBe(0);
  });

  it('random events equal a recomputation from the log, and after kill -9 during processing', async () => {
    const random = seededRandom(testSeed('views-windows-kill'));
    dir = tempDir('views-windows-kill');
    const kafkaPort = await freePort();
    node = await startWithViews(dir.path, kafkaPort, PARTITIONS);
    const views: [string, ViewDefinition][] = [
      [
        'tumbling',
        {
          from: 'events',
          filter: 'kind != noise',
          groupBy: ['page'],
          aggregates: {
            n: 'count()',
            total: 'sum(v)',
            low: 'min(v)',
            top: 'max(v)',
            mean: 'avg(v)',
            last: 'latest(kind)',
          },
          window: { field: 'ts', size: '10m', grace: '3m' },
        },
      ],
      [
        'hopping',
        {
          from: 'events',
          groupBy: ['page', 'kind'],
          aggregates: { n: 'count()', total: 'sum(v)' },
          window: { field: 'ts', size: '10m', advance: '5m', grace: '1m' },
        },
      ],
    ];
    await randomEvents(node.url, random, 30);
    for (const [name, definition] of views) {
      expect((await call(node.url, 'PUT', `/v1/views/${name}`, definition)).status).toBe(200);
    }
    await randomEvents(node.url, random, 60);
    await expectWindowsMatchLog(node.url, kafkaPort, views);
    const data = dir.path;
    node = await killAmidWrites(
      node,
      () => startWithViews(data, kafkaPort, PARTITIONS),
      random,
      (url) => randomEvents(url, random, 150),
      3,
    );
    await randomEvents(node.url, random, 20);
    await expectWindowsMatchLog(node.url, kafkaPort, views);
  });
});

/**
 * Events drifting forward in time with jitter of up to 20 minutes either way, so some arrive
 * inside grace and some past it; some overwrite a key, some delete one, some lack a time.
 */
let clock = TEN;
async function randomEvents(url: string, random: Random, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    clock += random.int(0, 30_000);
    const key = `e${random.int(0, 40)}`;
    const roll = random.next();
    if (roll < 0.05) {
      expect((await call(url, 'DELETE', `/v1/collections/events/docs/${key}`)).status).toBe(200);
      continue;
    }
    const ms = clock + random.int(-20, 20) * MINUTE_MS + random.int(0, 999);
    await put(url, 'events', key, {
      page: random.pick(['/', '/a', '/b']),
      kind: random.pick(['view', 'click', 'noise']),
      v: random.pick([random.int(-100, 100), random.int(0, 10_000) / 100, 'x']),
      ...(roll < 0.1 ? {} : { ts: random.next() < 0.5 ? ms : iso(ms) }),
    });
  }
}

async function expectWindowsMatchLog(
  url: string,
  kafkaPort: number,
  views: [string, ViewDefinition][],
): Promise<void> {
  const log = await KafkaLogClient.connect({
    bootstrap: [`127.0.0.1:${kafkaPort}`],
    bootstrapWaitMs: 5000,
  });
  try {
    const events = await readSourceEvents(log, 'events', PARTITIONS);
    for (const [view, definition] of views) {
      const served = await caughtUpView(url, view, 'events');
      const expected = expectedWindowedView(definition, events);
      expect(Object.fromEntries(served)).toEqual(Object.fromEntries(expected.docs));
      expect(await lateRecords(url, view)).toBe(expected.late);
      expect(expected.late).toBeGreaterThan(0);
    }
  } finally {
    log.close();
  }
}
