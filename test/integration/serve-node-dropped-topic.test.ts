// Proves a serve-node follows a collection dropped in the log without the gateway's drop (as a
// Kafka client's DeleteTopics, or a drop made while the node was away would leave it): it replaces
// its stores, so the dropped documents are no longer served, and the other collections are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../harness/index.js';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

const WAIT_MS_MAX = 20_000;
const POLL_MS = 50;
let cluster: ClusterFixture;

beforeAll(async () => {
  cluster = await startCluster({ partitions: 2, serve: { topicRefreshMs: 100 } });
});
afterAll(() => cluster.stop());

describe('a collection dropped in the log alone', () => {
  it('leaves every serve-node: its documents go, the others stay', async () => {
    const items = (tag: string) =>
      Array.from({ length: 10 }, (_, i) => ({ key: `${tag}${i}`, value: { tag } }));
    for (const collection of ['vanish', 'stay']) {
      const bulk = await call(
        cluster.url,
        'POST',
        `/v1/collections/${collection}/docs?wait=applied`,
        items(collection),
      );
      expect(bulk.status).toBe(200);
    }
    const scan = (collection: string) =>
      call(cluster.url, 'GET', `/v1/collections/${collection}/docs?consistency=eventual`);
    expect((await scan('vanish')).body.items).toHaveLength(10);
    await cluster.log.client.deleteTopic('vanish');
    let left = -1;
    for (let waited = 0; waited < WAIT_MS_MAX; waited += POLL_MS) {
      left = (await scan('vanish')).body.items.length;
      if (left === 0) break;
      await sleep(POLL_MS);
    }
    expect(left).toBe(0);
    const kept = await call(cluster.url, 'GET', '/v1/collections/stay/docs?consistency=strong');
    expect(kept.body.items).toHaveLength(10);
  });
});
