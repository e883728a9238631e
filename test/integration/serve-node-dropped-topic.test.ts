// Proves a serve-node follows a collection dropped in the log without the gateway's drop (as a
// Kafka client's DeleteTopics, or a drop made while the node was away would leave it): it drops
// the collection in place, so the dropped documents are no longer served, and the other
// collections are, without a replay; one that was stopped during the drop does the same when it
// starts again, and one stopped while the collection was dropped and created again drops the old
// incarnation's documents before it tails the new one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { encodeBatch } from '../../shared/batch-codec.js';
import { sleep } from '../harness/index.js';
import {
  call,
  serveNodeOn,
  startCluster,
  startLog,
  tempDir,
  type ClusterFixture,
} from './gateway-harness.js';

const WAIT_MS_MAX = 20_000;
const batchOf = (tag: string, count: number) =>
  encodeBatch(
    Array.from({ length: count }, (_, i) => ({
      key: `${tag}${i}`,
      value: Buffer.from(`{"n":${i}}`),
      timestampMs: 1_800_000_000_000,
    })),
  );
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

  it('a serve-node away during the drop drops it in place when it starts again', async () => {
    const log = await startLog(1);
    const dir = await tempDir('away');
    const open = () => serveNodeOn(log.url, dir);
    try {
      await log.client.append('away', 0, batchOf('away', 5));
      await log.client.append('kept', 0, batchOf('kept', 5));
      let serve = await open();
      const waitFor = { waitFor: { 0: 4 }, waitMs: WAIT_MS_MAX };
      expect((await serve.client.scan('away', waitFor)).items).toHaveLength(5);
      await serve.stop();
      await log.client.deleteTopic('away');
      serve = await open();
      try {
        let status = await serve.client.status();
        for (let waited = 0; status.lastDrop === undefined && waited < WAIT_MS_MAX;) {
          await sleep(POLL_MS);
          waited += POLL_MS;
          status = await serve.client.status();
        }
        expect(status.lastDrop).toMatchObject({ collection: 'away' });
        expect(status.lastRebuild).toBeUndefined();
        expect((await serve.client.scan('away')).items).toHaveLength(0);
        expect((await serve.client.scan('kept', waitFor)).items).toHaveLength(5);
      } finally {
        await serve.stop();
      }
    } finally {
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a serve-node away while the collection was dropped and created again serves the new one only', async () => {
    const log = await startLog(1);
    const dir = await tempDir('reborn');
    const open = () => serveNodeOn(log.url, dir);
    try {
      await log.client.append('reborn', 0, batchOf('old', 8));
      let serve = await open();
      expect(
        (await serve.client.scan('reborn', { waitFor: { 0: 7 }, waitMs: WAIT_MS_MAX })).items,
      ).toHaveLength(8);
      await serve.stop();
      await log.client.deleteTopic('reborn');
      await log.client.append('reborn', 0, batchOf('new', 3));
      const topics = await log.client.topics();
      expect(topics.find((topic) => topic.name === 'reborn')?.incarnation).toBe(1);
      serve = await open();
      try {
        // Offsets 0..2 of the new incarnation: the old one's checkpoint (8) is past them.
        const scan = await serve.client.scan('reborn', { waitFor: { 0: 2 }, waitMs: WAIT_MS_MAX });
        expect(scan.items.map((item) => item.key).sort()).toEqual(['new0', 'new1', 'new2']);
        const status = await serve.client.status();
        expect(status.lastDrop).toMatchObject({ collection: 'reborn' });
        expect(status.lastDrop?.reason).toContain('incarnation');
        expect(status.lastRebuild).toBeUndefined();
        // A rebuild replays the new incarnation into new stores, which hold it as theirs: no
        // drop follows at the next looks at the log.
        await serve.node.rebuild('test');
        const again = await serve.client.scan('reborn', { waitFor: { 0: 2 }, waitMs: WAIT_MS_MAX });
        expect(again.items).toHaveLength(3);
        await Promise.all([serve.node.discover(), sleep(POLL_MS)]);
        await serve.node.discover();
        expect((await serve.client.status()).lastDrop).toEqual(status.lastDrop);
        expect((await serve.client.status()).dropping).toEqual([]);
      } finally {
        await serve.stop();
      }
    } finally {
      await log.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
