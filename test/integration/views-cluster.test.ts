// Proves what a cluster's gateway does with views while no view processor has published anything
// (these serve-nodes run in the test's process, without the processors `tailbase serve-node`
// starts beside them: views-cluster-placement.test.ts has those): a view can be declared,
// listed with null frontiers and refuses writes, and a read of it that must wait for its source
// (a source token, or strong) answers 504 not_caught_up rather than a stale answer; a read with
// no such wait is served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

describe('views on a cluster whose view processors published nothing', () => {
  let cluster: ClusterFixture;

  beforeAll(async () => {
    cluster = await startCluster();
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('declares and lists the view, and never answers a read that must wait for its source stale', async () => {
    const { url } = cluster;
    const put = await call(url, 'PUT', '/v1/collections/clicks/docs/c1', { page: '/' });
    expect(put.status).toBe(200);
    const definition = { from: 'clicks', groupBy: ['page'], aggregates: { n: 'count()' } };
    const declared = await call(url, 'PUT', '/v1/views/per_page', definition);
    expect(declared.status).toBe(200);
    expect(declared.body.frontiers).toBeNull();
    const write = await call(url, 'PUT', '/v1/collections/per_page/docs/x', { n: 1 });
    expect([write.status, write.body.error.code]).toEqual([409, 'view_read_only']);
    const key = encodeURIComponent('["/"]');
    for (const query of [`?token=${put.token}`, '?consistency=strong']) {
      const read = await call(
        url,
        'GET',
        `/v1/collections/per_page/docs/${key}${query}&wait_ms=300`,
      );
      expect([read.status, read.body.error.code]).toEqual([504, 'not_caught_up']);
    }
    const eventual = await call(url, 'GET', `/v1/collections/per_page/docs/${key}`);
    expect([eventual.status, eventual.body.error.code]).toEqual([404, 'document_not_found']);
  });
});
