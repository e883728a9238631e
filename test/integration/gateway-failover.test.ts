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
    // With both replicas up each answers for the partitions it was assigned: none counted twice.
    const both = await call(
      url,
      'GET',
      '/v1/collections/fo/search?q=alpha&limit=50',
      undefined,
      token,
    );
    expect(both.body.total).toBe(20);
    expect(both.body.hits).toHaveLength(20);
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

// Proves a serve-node that hosts more partitions than the gateway assigns it answers only for its
// share: node 0 hosts 0-1 and node 1 hosts 1-3, so partition 1 lives on both and must be counted
// once in a scan and in a search's total.
describe('overlapping replicas', () => {
  let overlap: ClusterFixture;
  beforeAll(async () => {
    overlap = await startCluster({ partitions: 4, hosted: (i) => (i === 0 ? [0, 1] : [1, 2, 3]) });
  });
  afterAll(async () => {
    await overlap.stop();
  });

  it('counts each document once in scans and search totals', async () => {
    const docs = Array.from({ length: 40 }, (_, i) => ({
      key: `o${i}`,
      value: { text: `beta ${i}` },
    }));
    const bulk = await call(overlap.url, 'POST', '/v1/collections/ov/docs', docs);
    const token = { 'tailbase-token': bulk.token! };
    const scan = await call(
      overlap.url,
      'GET',
      '/v1/collections/ov/docs?limit=100',
      undefined,
      token,
    );
    expect(scan.body.items).toHaveLength(40);
    const search = await call(
      overlap.url,
      'GET',
      '/v1/collections/ov/search?q=beta&limit=100',
      undefined,
      token,
    );
    expect(search.body.hits).toHaveLength(40);
    expect(search.body.total).toBe(40);
  });
});
