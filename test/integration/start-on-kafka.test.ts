// The public API suite (api-suite.ts) over `tailbase start --log kafka://... --topic-prefix tb-`:
// the built CLI's gateway and serve-node thread on a log-node process reached only by its Kafka
// listener, no local log-node; and kafkajs, a client nobody here wrote, sees the prefixed topics
// (collections and the settings topic) and no unprefixed one; and a view declared there is built
// by the process's own view processors.
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { freePort } from '../harness/free-port.js';
import { spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { describeApi } from './api-suite.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 4;
const PREFIX = 'tb-';

interface OnKafka {
  logNode: SpawnedNode;
  broker: string;
  embedded: SpawnedEmbedded;
  stop(): Promise<void>;
}

/** With `clusterSecret`, the log-node's and the one `tailbase start` writes views' topics with. */
async function startOnKafka(name: string, clusterSecret?: string): Promise<OnKafka> {
  const dir = tempDir(name);
  const kafkaPort = await freePort();
  const logNode = await spawnNode('log-node', [
    '--data',
    dir.path,
    '--port',
    '0',
    '--partitions',
    String(PARTITIONS),
    '--kafka-port',
    String(kafkaPort),
    ...(clusterSecret === undefined ? [] : ['--cluster-secret', clusterSecret]),
  ]);
  const broker = `127.0.0.1:${kafkaPort}`;
  const embedded = await spawnEmbedded({
    args: [
      '--log',
      `kafka://${broker}`,
      '--topic-prefix',
      PREFIX,
      ...(clusterSecret === undefined ? [] : ['--cluster-secret', clusterSecret]),
    ],
  }).catch(async (error: unknown) => {
    await logNode.stop();
    dir.cleanup();
    throw error;
  });
  return {
    logNode,
    broker,
    embedded,
    async stop() {
      await embedded.stop();
      await logNode.stop();
      dir.cleanup();
    },
  };
}

describeApi('the API over tailbase start --log kafka:// with a topic prefix', async () => {
  const running = await startOnKafka('start-on-kafka-api');
  return {
    url: running.embedded.url,
    partitions: PARTITIONS,
    serveNodes: 1,
    topicPrefix: PREFIX,
    stop: () => running.stop(),
  };
});

describe('tailbase start --log kafka:// --topic-prefix, seen by kafkajs', () => {
  let running: OnKafka;
  beforeAll(async () => {
    running = await startOnKafka('start-on-kafka-topics');
  });
  afterAll(async () => {
    await running?.stop();
  });

  it('names every topic it writes with the prefix, and reads them back as collections', async () => {
    const put = await call(running.embedded.url, 'PUT', '/v1/collections/orders/docs/o1', {
      total: 3,
    });
    expect(put.status).toBe(200);
    const settings = await call(running.embedded.url, 'PUT', '/v1/collections/orders/settings', {
      cleanupPolicy: 'compact',
    });
    expect(settings.status).toBe(200);
    const admin = new Kafka({
      clientId: 'start-on-kafka-test',
      brokers: [running.broker],
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    try {
      const topics = await admin.listTopics();
      expect(topics).toContain(`${PREFIX}orders`);
      expect(topics).toContain(`${PREFIX}__tailbase_settings`);
      expect(topics).not.toContain('orders');
      const [orders] = (await admin.fetchTopicMetadata({ topics: [`${PREFIX}orders`] })).topics;
      expect(orders.partitions).toHaveLength(PARTITIONS);
    } finally {
      await admin.disconnect();
    }
    const status = await call(running.embedded.url, 'GET', '/v1/status');
    const names = (status.body.partitions as { topic: string }[]).map((p) => p.topic);
    expect(names).toContain('orders');
    expect(names.some((topic) => topic.startsWith(PREFIX))).toBe(false);
    const get = await call(
      running.embedded.url,
      'GET',
      '/v1/collections/orders/docs/o1',
      undefined,
      {
        'tailbase-token': put.token!,
      },
    );
    expect(get.status).toBe(200);
    expect(get.body).toMatchObject({ key: 'o1' });
  });
});

describe('tailbase start --log kafka:// runs the views itself', () => {
  let running: OnKafka;
  beforeAll(async () => {
    running = await startOnKafka('start-on-kafka-views', 'start-on-kafka-secret');
  });
  afterAll(async () => {
    await running?.stop();
  });

  it('builds a grouped view, read with the token of the last source write', async () => {
    const url = running.embedded.url;
    // A view's source must exist when it is declared.
    const first = await call(url, 'PUT', '/v1/collections/sales/docs/s0', {
      country: 'IT',
      total: 1,
    });
    expect(first.status).toBe(200);
    const declared = await call(url, 'PUT', '/v1/views/paid_by_country', {
      from: 'sales',
      groupBy: ['country'],
      aggregates: { orders: 'count()', revenue: 'sum(total)' },
    });
    expect(declared.status).toBe(200);
    let token = '';
    for (const [key, country, total] of [
      ['s1', 'FR', 10],
      ['s2', 'DE', 4],
      ['s3', 'FR', 2.5],
    ] as const) {
      const put = await call(url, 'PUT', `/v1/collections/sales/docs/${key}`, { country, total });
      expect(put.status).toBe(200);
      token = put.token!;
    }
    const groups = await call(url, 'GET', '/v1/collections/paid_by_country/docs', undefined, {
      'tailbase-token': token,
    });
    expect(groups.status).toBe(200);
    const values = (groups.body.items as { value: Record<string, unknown> }[]).map((d) => d.value);
    expect(values).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ country: 'FR', orders: 2, revenue: 12.5 }),
        expect.objectContaining({ country: 'DE', orders: 1, revenue: 4 }),
        expect.objectContaining({ country: 'IT', orders: 1, revenue: 1 }),
      ]),
    );
    expect(values).toHaveLength(3);
    const view = await call(url, 'GET', '/v1/views/paid_by_country');
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({ view: 'paid_by_country', source: 'sales', rebuilding: null });
    const frontiers = view.body.frontiers as { partition: number; frontier: number; lag: number }[];
    expect(frontiers).toHaveLength(PARTITIONS);
    expect(frontiers.reduce((sum, f) => sum + f.frontier, 0)).toBe(4);
    expect(frontiers.every((f) => f.lag === 0)).toBe(true);
  });
});
