// A settings change re-indexes a collection in the background (serve-node/table-builds.ts): over a
// cluster of two serve-nodes taking one document a step, each node's status reports the re-index
// under way with its progress, a read carrying the settings write's token waits until the new
// index takes over and is then served with the new settings, and the status ends with nothing
// left to re-index.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

const DOCS = 3_000;
/** How long the test waits for the re-index to be seen or to end. */
const WAIT_MS_MAX = 30_000;

interface Reindexing {
  collection: string;
  settingsOffset: number;
  copied: number;
  documents: number;
}

let cluster: ClusterFixture;
const collection = `reindex-${Date.now().toString(36)}`;

beforeAll(async () => {
  cluster = await startCluster({ partitions: 4, serve: { reindexStepDocsMax: 1 } });
  const docs = Array.from({ length: DOCS }, (_, i) => ({
    key: `d${String(i).padStart(5, '0')}`,
    value: { title: `word ${i}`, n: i % 10 },
  }));
  const bulk = await call(cluster.url, 'POST', `/v1/collections/${collection}/docs`, docs);
  expect(bulk.status).toBe(200);
  // Every document applied before the settings change, so the re-index has them all to copy.
  const strong = await call(
    cluster.url,
    'GET',
    `/v1/collections/${collection}/docs?limit=1&consistency=strong&wait_ms=${WAIT_MS_MAX}`,
  );
  expect(strong.status).toBe(200);
});

afterAll(async () => {
  await cluster?.stop();
});

const nodeStatus = async (node: number) => {
  const answer = await call(cluster.url, 'GET', `/v1/admin/serve-nodes/${node}/status`);
  expect(answer.status).toBe(200);
  return (answer.body.reindexing ?? []) as Reindexing[];
};

describe('a settings change re-indexes in the background', () => {
  it('reports progress, serves a token read with the new settings, and ends', async () => {
    const settings = await call(cluster.url, 'PUT', `/v1/collections/${collection}/settings`, {
      filterable: ['n'],
    });
    expect(settings.status).toBe(200);

    // Each node copies its half a document a step: its status shows the re-index part done.
    const seen: Reindexing[] = [];
    const startedMs = Date.now();
    while (seen.length === 0 && Date.now() - startedMs < WAIT_MS_MAX) {
      for (const node of [0, 1]) {
        const under = (await nodeStatus(node)).find((r) => r.collection === collection);
        if (under !== undefined && under.copied > 0 && under.copied < under.documents) {
          seen.push(under);
        }
      }
    }
    expect(seen.length, 'a re-index under way in a serve-node status').toBeGreaterThan(0);
    for (const under of seen) {
      // A node holds its half of the documents (a partition's share varies with the keys).
      expect(under.documents).toBeGreaterThan(DOCS / 4);
      expect(under.documents).toBeLessThan(DOCS);
    }

    // With the token, the filter on the newly filterable field waits for the new index.
    const filtered = await call(
      cluster.url,
      'GET',
      `/v1/collections/${collection}/search?q=word&limit=1&filter=${encodeURIComponent('n = 3')}&wait_ms=${WAIT_MS_MAX}`,
      undefined,
      { 'tailbase-token': settings.token! },
    );
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200);
    expect(filtered.body.total).toBe(DOCS / 10);

    for (const node of [0, 1]) {
      while ((await nodeStatus(node)).length > 0) {
        expect(Date.now() - startedMs).toBeLessThan(WAIT_MS_MAX);
      }
    }
    const status = await call(cluster.url, 'GET', '/v1/status');
    expect(status.status).toBe(200);
    for (const node of status.body.serveNodes) expect(node.reindexing).toEqual([]);
  });
});
