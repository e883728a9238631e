// Proves that a settings change answered with `wait=applied`, or carried by its token, is in
// effect for the very next read on any read thread: a sort on the field the change just made
// sortable is answered, never a 400 `field_not_sortable`, round after round; and that a
// settings change's wait=applied waits on a serve-node held down when it is the only host of some
// partition, as a document write's does, rather than answering before any node applied it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, startStallProxy, type SpawnedEmbedded } from '../harness/index.js';
import { call, startCluster } from './gateway-harness.js';

const ROUNDS = 40;
const DOCS = 200;

let node: SpawnedEmbedded;
beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 4, args: ['--read-threads', '3'] });
  const lines = Array.from({ length: DOCS }, (_, i) =>
    JSON.stringify({
      key: `d${i}`,
      value: Object.fromEntries(
        Array.from({ length: ROUNDS }, (_, f) => [`f${f}`, (i * 7919 + f) % DOCS]).concat([
          ['body', `word${i % 13} common`],
        ]),
      ),
    }),
  );
  const bulk = await fetch(`${node.url}/v1/collections/items/docs?wait=applied`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: lines.join('\n'),
  });
  expect(bulk.status).toBe(200);
}, 60_000);
afterAll(() => node?.stop());

async function patchSortable(field: string, query: string): Promise<Response> {
  return fetch(`${node.url}/v1/collections/items/settings${query}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sortable: [field] }),
  });
}

describe('settings in effect after wait=applied', () => {
  it('sorts on the field the change made sortable, every round', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS / 2; round++) {
      const field = `f${round}`;
      const patched = await patchSortable(field, '?wait=applied');
      expect(patched.status).toBe(200);
      const reads = await Promise.all([
        fetch(`${node.url}/v1/collections/items/docs?sort=${field}:asc&limit=5`),
        fetch(`${node.url}/v1/collections/items/search?q=common&sort=${field}:desc&limit=5`),
        fetch(`${node.url}/v1/collections/items/docs?sort=${field}:desc&limit=5`),
      ]);
      for (const read of reads) {
        if (read.status !== 200)
          failures.push(`round ${round}: ${read.status} ${await read.text()}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('sorts on it when the read carries the change token', async () => {
    const failures: string[] = [];
    for (let round = ROUNDS / 2; round < ROUNDS; round++) {
      const field = `f${round}`;
      const patched = await patchSortable(field, '');
      expect(patched.status).toBe(200);
      const token = patched.headers.get('tailbase-token') ?? '';
      const headers = { 'tailbase-token': token };
      const reads = await Promise.all([
        fetch(`${node.url}/v1/collections/items/docs?sort=${field}:asc&limit=5`, { headers }),
        fetch(`${node.url}/v1/collections/items/search?q=common&sort=${field}:desc&limit=5`, {
          headers,
        }),
        fetch(`${node.url}/v1/collections/items/docs?sort=${field}:desc&limit=5`, { headers }),
      ]);
      for (const read of reads) {
        if (read.status !== 200)
          failures.push(`round ${round}: ${read.status} ${await read.text()}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('settings wait=applied with a serve-node held down', () => {
  const ANSWER_MS_MAX = 300;
  it('waits on the down node when it alone hosts partitions, and 504s past wait_ms', async () => {
    let nodeUrl = '';
    const proxy = await startStallProxy(() => nodeUrl);
    const cluster = await startCluster({
      partitions: 4,
      serveUrl: (url, index) => {
        if (index !== 1) return url;
        nodeUrl = url;
        return proxy.url;
      },
      gateway: { serveAnswerMsMax: ANSWER_MS_MAX },
    });
    try {
      const docs = Array.from({ length: 16 }, (_, i) => ({ key: `k${i}`, value: { n: i } }));
      expect(
        (await call(cluster.url, 'POST', '/v1/collections/held/docs?wait=applied', docs)).status,
      ).toBe(200);
      proxy.stall(true);
      // The node is held down once a topology refresh found it silent past the answer bound.
      const deadline = performance.now() + 10_000;
      let down = false;
      while (!down && performance.now() < deadline) {
        const status = await call(cluster.url, 'GET', '/v1/status');
        down = JSON.stringify(status.body).includes('"down"');
      }
      expect(down).toBe(true);
      const patched = await call(
        cluster.url,
        'PATCH',
        '/v1/collections/held/settings?wait=applied&wait_ms=400',
        { sortable: ['n'] },
      );
      expect(patched.status).toBe(504);
      expect(patched.body.error.code).toBe('not_caught_up');
      proxy.stall(false);
      const token = patched.body.error.token as string;
      const sorted = await call(
        cluster.url,
        'GET',
        '/v1/collections/held/docs?sort=n:desc&limit=2',
        undefined,
        {
          'tailbase-token': token,
        },
      );
      expect(sorted.status).toBe(200);
      expect(sorted.body.items.map((item: { key: string }) => item.key)).toEqual(['k15', 'k14']);
    } finally {
      proxy.stall(false);
      await cluster.stop();
      await proxy.close();
    }
  }, 60_000);
});
