// Proves what a cluster of separate nodes does with views in this slice, where no view processor
// runs beside its gateway: a view can be declared, listed with null frontiers and refuses writes,
// and a read of it that must wait for its source (a source token, or strong) answers 503
// view_processor_unavailable rather than a stale answer; a read with no such wait is served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

describe('views on a cluster without a view processor', () => {
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
      const read = await call(url, 'GET', `/v1/collections/per_page/docs/${key}${query}`);
      expect([read.status, read.body.error.code]).toEqual([503, 'view_processor_unavailable']);
    }
    const eventual = await call(url, 'GET', `/v1/collections/per_page/docs/${key}`);
    expect([eventual.status, eventual.body.error.code]).toEqual([404, 'document_not_found']);
  });
});
