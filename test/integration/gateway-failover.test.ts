// Proves reads survive a replica going down: with both serve-nodes hosting every partition, key
// reads, scans and searches spread over both, and once one is stopped every read still succeeds
// on the other (the gateway skips the node it finds unreachable).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { startStallProxy } from '../harness/index.js';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

let cluster: ClusterFixture;

/** A scan's items and a search's hits and total over one collection, read with `token`. */
async function scanAndSearch(
  url: string,
  collection: string,
  q: string,
  token: Record<string, string>,
) {
  const base = `/v1/collections/${collection}`;
  const scan = await call(url, 'GET', `${base}/docs?limit=100`, undefined, token);
  const search = await call(url, 'GET', `${base}/search?q=${q}&limit=100`, undefined, token);
  return { items: scan.body.items, hits: search.body.hits, total: search.body.total };
}

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
    const read = await scanAndSearch(overlap.url, 'ov', 'beta', token);
    expect(read.items).toHaveLength(40);
    expect(read.hits).toHaveLength(40);
    expect(read.total).toBe(40);
  });
});

// Proves a serve-node that hangs (alive, never answering) is skipped like one that is down: with
// node 0 behind a proxy that stalls, eventual reads, token reads, scans and searches all answer
// from node 1 within a bound, instead of waiting on node 0 forever.
describe('a hung replica', () => {
  const ANSWER_MS_MAX = 300;
  it('is skipped once it has not answered within serveAnswerMsMax', async () => {
    let nodeUrl = '';
    const proxy = await startStallProxy(() => nodeUrl);
    const hung = await startCluster({
      partitions: 4,
      replicated: true,
      serveUrl: (url, index) => {
        if (index !== 0) return url;
        nodeUrl = url;
        return proxy.url;
      },
      gateway: { serveAnswerMsMax: ANSWER_MS_MAX },
    });
    try {
      const docs = Array.from({ length: 8 }, (_, i) => ({ key: `h${i}`, value: { text: 'beta' } }));
      const bulk = await call(hung.url, 'POST', '/v1/collections/hung/docs', docs);
      const token = { 'tailbase-token': bulk.token! };
      expect(
        (await call(hung.url, 'GET', '/v1/collections/hung/docs/h0', undefined, token)).status,
      ).toBe(200);
      proxy.stall(true);
      // A read with nothing to wait for is bounded by the answer bound alone, whatever wait_ms
      // it carries: an eventual scan or search must not wait out its wait on a hung node.
      const direct = new HttpServeClient(proxy.url, { answerMsMax: ANSWER_MS_MAX });
      const askedAt = performance.now();
      await expect(direct.scan('hung', { waitMs: 5000 })).rejects.toMatchObject({
        code: 'serve_unreachable',
      });
      expect(performance.now() - askedAt).toBeLessThan(ANSWER_MS_MAX + 1000);
      direct.close();
      const started = performance.now();
      for (const { key } of docs) {
        const get = await call(
          hung.url,
          'GET',
          `/v1/collections/hung/docs/${key}`,
          undefined,
          token,
        );
        expect(get.status).toBe(200);
        expect((await call(hung.url, 'GET', `/v1/collections/hung/docs/${key}`)).status).toBe(200);
      }
      const read = await scanAndSearch(hung.url, 'hung', 'beta', token);
      expect(read.items).toHaveLength(8);
      expect(read.total).toBe(8);
      // Each read waits out the bound at most once before node 0 counts as down.
      expect(performance.now() - started).toBeLessThan(10 * ANSWER_MS_MAX + 2000);
    } finally {
      proxy.stall(false);
      await hung.stop();
      await proxy.close();
    }
  });
});
