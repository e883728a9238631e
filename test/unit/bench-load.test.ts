// Proves both load clients count only 2xx answers as served, send the pre-encoded body intact,
// and stop at their time bound.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNodeLoad } from '../../bench/http-load.js';
import { runWrk, wrkInstalled } from '../../bench/wrk.js';
import type { WrkRun } from '../../bench/wrk.js';

const BODY = Buffer.from('0123456789'.repeat(20));
let baseUrl = '';
let wrongBodies = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (!Buffer.concat(chunks).equals(BODY)) wrongBodies += 1;
    res.statusCode = req.url === '/fail' ? 500 : 200;
    res.end('{}');
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function run(path: string): WrkRun {
  return {
    baseUrl,
    method: 'POST',
    targets: [{ path, body: BODY }],
    connections: 4,
    threads: 1,
    durationS: 1,
  };
}

describe.each([
  ['node:http', runNodeLoad, true],
  ['wrk', runWrk, wrkInstalled()],
] as const)('%s load client', (_name, load, available) => {
  it.runIf(available)('serves requests within the time bound with intact bodies', async () => {
    wrongBodies = 0;
    const started = Date.now();
    const ok = await load(run('/ok'));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(ok.requestsPerSec).toBeGreaterThan(0);
    expect(ok.errors).toBe(0);
    expect(ok.latency.p99Ms).toBeGreaterThanOrEqual(ok.latency.p50Ms);
    expect(wrongBodies).toBe(0);
  });

  it.runIf(available)('counts non-2xx answers as errors, not throughput', async () => {
    const failed = await load(run('/fail'));
    expect(failed.errors).toBeGreaterThan(0);
    expect(failed.requestsPerSec).toBe(0);
  });
});
