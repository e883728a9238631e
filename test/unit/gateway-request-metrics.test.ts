/** The gateway's request metrics expose exactly what prom-client's Counter and Histogram would. */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestMetrics } from '../../gateway/request-metrics.js';

const BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
const NAMES = {
  countName: 'requests_total',
  countHelp: 'HTTP requests answered, by route and status',
  secondsName: 'request_duration_seconds',
  secondsHelp: 'HTTP request latency',
};

describe('RequestMetrics', () => {
  it('scrapes byte for byte as prom-client does for the same requests, bucket edges included', async () => {
    const ours = new Registry();
    const metrics = new RequestMetrics(ours, { ...NAMES, bucketsSeconds: BUCKETS_SECONDS });
    const theirs = new Registry();
    const counter = new Counter({
      name: NAMES.countName,
      help: NAMES.countHelp,
      labelNames: ['method', 'route', 'status'] as const,
      registers: [theirs],
    });
    const histogram = new Histogram({
      name: NAMES.secondsName,
      help: NAMES.secondsHelp,
      labelNames: ['method', 'route'] as const,
      buckets: BUCKETS_SECONDS,
      registers: [theirs],
    });
    const requests: Array<[string, string, number, number]> = [
      ['GET', '/v1/collections/:c/docs/:key', 200, 0.0002],
      ['GET', '/v1/collections/:c/docs/:key', 404, 0.0005],
      ['GET', '/v1/collections/:c/docs/:key', 200, 0.0051],
      ['PUT', '/v1/collections/:c/docs/:key', 200, 7],
      ['GET', '/v1/collections/:c/search', 504, 5],
      ['GET', '/v1/collections/:c/docs/:key', 200, 1],
    ];
    for (const [method, route, status, seconds] of requests) {
      metrics.observe(method, route, status, seconds);
      counter.inc({ method, route, status: String(status) });
      histogram.observe({ method, route }, seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
