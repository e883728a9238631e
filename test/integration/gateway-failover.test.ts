// Proves reads survive a replica going down: with both serve-nodes hosting every partition, key
// reads, scans and searches spread over both, and once one is stopped every read still succeeds
// on the other (the gateway skips the node it finds unreachable).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

let cluster: ClusterFixture;

beforeAll(async () => {
  cluster = await startCluster({ partitions: 4, replicated: true });
});

afterAll(async () => {
  await cluster.stop();
});

describe('replica failover', () => {
  it('keeps answering reads after one serve-node stops', async () => {
    const url = cluster.url;
    const docs = Array.from({ length: 20 }, (_, i) => ({
      key: `f${i}`,
      value: { text: `alpha ${i}` },
    }));
    const bulk = await call(url, 'POST', '/v1/collections/fo/docs', docs);
    const token = { 'tailbase-token': bulk.token! };
    for (const { key } of docs) {
      expect(
        (await call(url, 'GET', `/v1/collections/fo/docs/${key}`, undefined, token)).status,
      ).toBe(200);
    }
    await cluster.serves[0].stop();
    for (const { key } of docs) {
      const get = await call(url, 'GET', `/v1/collections/fo/docs/${key}`, undefined, token);
      expect(get.status).toBe(200);
    }
    const scan = await call(url, 'GET', '/v1/collections/fo/docs?limit=100', undefined, token);
    expect(scan.body.items).toHaveLength(20);
    const search = await call(
      url,
      'GET',
      '/v1/collections/fo/search?q=alpha&limit=50',
      undefined,
      token,
    );
    expect(search.body.total).toBe(20);
    const status = await call(url, 'GET', '/v1/status');
    expect(status.body.serveNodes.map((n: { up: boolean }) => n.up)).toEqual([false, true]);
  });
});
