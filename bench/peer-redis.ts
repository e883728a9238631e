/**
 * Redis as a peer: XADD (an append to a stream, acknowledged after `appendfsync always`) against
 * tailbase's single-record append, and GET, both at the same 64 concurrent clients, driven by
 * redis-benchmark (a native client, like wrk for tailbase).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { freePort, spawnServer } from './processes.js';
import { makeBenchDir } from './references.js';
import { runTool } from './run-tool.js';
import type { BenchOptions, WorkloadResult } from './types.js';

const CLIENTS = 64;
const VALUE_BYTES = 100;
const RUN_MS_MAX = 60_000;

interface RedisRun {
  name: string;
  description: string;
  args: string[];
  requests: number;
}

function parseCsv(output: string): { rps: number; p50Ms: number; p99Ms: number; maxMs: number } {
  const line = output
    .split('\n')
    .filter((l) => l.startsWith('"') && !l.startsWith('"test"'))
    .pop();
  if (line === undefined)
    throw new Error(`redis-benchmark printed no result: ${output.slice(-500)}`);
  const cells = line.split('","').map((c) => c.replace(/"/g, ''));
  const number = (i: number) => Number(cells[i]);
  return { rps: number(1), p50Ms: number(4), p99Ms: number(6), maxMs: number(7) };
}

function redisBenchmark(port: number, args: string[], requests: number): Promise<string> {
  const target = ['-h', '127.0.0.1', '-p', String(port)];
  const load = ['-c', String(CLIENTS), '-n', String(requests), '--csv'];
  return runTool('redis-benchmark', [...target, ...load, ...args], { timeoutMs: RUN_MS_MAX });
}

export async function runRedisBench(
  options: BenchOptions,
  binary: string,
): Promise<WorkloadResult[]> {
  const dir = makeBenchDir('redis');
  try {
    const port = await freePort();
    const server = await spawnServer({
      command: binary,
      args: [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
      ],
      port,
      ready: () =>
        spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.includes(
          'PONG',
        ),
    });
    const value = 'x'.repeat(VALUE_BYTES);
    const runs: RedisRun[] = [
      {
        name: 'redis XADD',
        description: `1 x ${VALUE_BYTES} B entry, ${CLIENTS} clients, appendfsync always`,
        args: ['XADD', 'bench', '*', 'v', value],
        requests: options.quick ? 2000 : 60_000,
      },
      {
        name: 'redis GET',
        description: `${CLIENTS} clients, ${VALUE_BYTES} B values`,
        args: ['-t', 'get', '-d', String(VALUE_BYTES)],
        requests: options.quick ? 10_000 : 300_000,
      },
    ];
    try {
      const results: WorkloadResult[] = [];
      for (const run of runs) {
        server.resetPeakRss();
        const r = parseCsv(await redisBenchmark(port, run.args, run.requests));
        results.push({
          group: 'peers',
          name: run.name,
          description: run.description,
          throughput: { value: r.rps, unit: run.name.endsWith('XADD') ? 'records/s' : 'req/s' },
          latency: { p50Ms: r.p50Ms, p99Ms: r.p99Ms, maxMs: r.maxMs, count: run.requests },
          figures: { clients: CLIENTS, requests: run.requests, client: 'redis-benchmark' },
          ratios: [],
          peakRssBytes: { redis: server.peakRssBytes() },
        });
      }
      return results;
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
