/**
 * The fallback load client when wrk is not installed: keep-alive node:http with pre-encoded
 * bodies and a fixed number of closed-loop workers. It measures the same things as wrk.ts, but
 * shares the CPU with the server more greedily, so its figures are a lower bound.
 */
import { Agent, request } from 'node:http';
import { LatencyHistogram } from './latency-histogram.js';
import type { WrkResult, WrkRun } from './wrk.js';

const REQUEST_TIMEOUT_MS = 10_000;
/** A loop bound on top of the time bound, far above what two cores can serve in a run. */
const REQUESTS_PER_WORKER_MAX = 10_000_000;

function send(
  agent: Agent,
  url: URL,
  method: string,
  contentType: string,
  body: Uint8Array | undefined,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method,
        headers: {
          'content-type': contentType,
          ...(body ? { 'content-length': body.length } : {}),
        },
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        res.on('data', () => {});
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      },
    );
    req.once('timeout', () => req.destroy(new Error('request timed out')));
    req.once('error', reject);
    req.end(body);
  });
}

export async function runNodeLoad(run: WrkRun): Promise<WrkResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: run.connections });
  const histogram = new LatencyHistogram();
  const urls = run.targets.map((t) => new URL(t.path, run.baseUrl));
  let ok = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + run.durationS * 1000;
  const worker = async (index: number) => {
    let next = index % urls.length;
    for (let i = 0; i < REQUESTS_PER_WORKER_MAX && performance.now() < deadline; i++) {
      const t0 = performance.now();
      try {
        const status = await send(
          agent,
          urls[next],
          run.method,
          run.contentType ?? 'application/octet-stream',
          run.targets[next].body,
        );
        if (status >= 200 && status < 300) ok += 1;
        else errors += 1;
      } catch {
        errors += 1;
      }
      histogram.recordMs(performance.now() - t0);
      next = (next + 1) % urls.length;
    }
  };
  await Promise.all(Array.from({ length: run.connections }, (_, i) => worker(i)));
  agent.destroy();
  const durationS = (performance.now() - started) / 1000;
  return {
    requests: ok + errors,
    durationS,
    requestsPerSec: ok / durationS,
    errors,
    latency: histogram.summary(),
  };
}
